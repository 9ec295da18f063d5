import CLibPQ
import Glibc
import RewindCore

/// A libpq connection string, read with libpq's own parser.
public enum ConnInfo {
    /// The value of `keyword` in `conninfo` (nil when absent or unparsable).
    public static func value(_ keyword: String, in conninfo: String) -> String? {
        guard let options = PQconninfoParse(conninfo, nil) else { return nil }
        defer { PQconninfoFree(options) }
        var p = options
        while let k = p.pointee.keyword {
            if PQ.string(k) == keyword, let v = p.pointee.val { return PQ.string(v) }
            p += 1
        }
        return nil
    }

    /// `conninfo` asking libpq for a writable primary among its hosts
    /// (`target_session_attrs=read-write`), unless it names its own target.
    public static func requiringPrimary(_ conninfo: String) -> String {
        if value("target_session_attrs", in: conninfo) != nil { return conninfo }
        if conninfo.contains("://") { return conninfo + (conninfo.contains("?") ? "&" : "?") + "target_session_attrs=read-write" }
        return conninfo + (conninfo.isEmpty ? "" : " ") + "target_session_attrs=read-write"
    }

    /// True when `conninfo` names a host by name (not a socket path or an
    /// address) that libpq would resolve itself, synchronously.
    public static func namesHosts(_ conninfo: String) -> Bool {
        guard value("hostaddr", in: conninfo) == nil, let hosts = value("host", in: conninfo) ?? environment("PGHOST") else { return false }
        return hosts.split(separator: ",", omittingEmptySubsequences: false).contains { !isSocketOrAddress(String($0)) }
    }

    /// `conninfo` with every host name in its host list resolved now
    /// (`hostaddr`, entry for entry; socket paths and addresses left empty
    /// there), so that libpq's non-blocking connect never resolves a name on
    /// the loop thread (it calls getaddrinfo synchronously). `host` stays,
    /// for TLS checks and messages. Run it off the loop (`PipelineConnection`
    /// does, before each connect: a name that moves to another address, as a
    /// failover by DNS does, is followed). Throws a clear error when a name
    /// does not resolve; an explicit `hostaddr` is left as it is.
    public static func resolvingHost(_ conninfo: String) throws(RewindError) -> String {
        guard namesHosts(conninfo), let hosts = value("host", in: conninfo) ?? environment("PGHOST") else { return conninfo }
        var addresses: [String] = []
        for h in hosts.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
            addresses.append(isSocketOrAddress(h) ? (isAddress(h) ? h : "") : try resolve(h))
        }
        let list = addresses.joined(separator: ",")
        if conninfo.contains("://") { return conninfo + (conninfo.contains("?") ? "&" : "?") + "hostaddr=" + list }
        return (conninfo.isEmpty ? "" : conninfo + " ") + "hostaddr='\(list)'"
    }

    private static func isSocketOrAddress(_ h: String) -> Bool { h.isEmpty || h.hasPrefix("/") || h.hasPrefix("@") || isAddress(h) }

    private static func isAddress(_ h: String) -> Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST
        var res: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(h, nil, &hints, &res) == 0 else { return false }
        freeaddrinfo(res)
        return true
    }

    private static func resolve(_ host: String) throws(RewindError) -> String {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &res)
        guard rc == 0, let first = res else {
            throw .storage("cannot resolve the database host \"\(host)\": \(PQ.string(gai_strerror(rc)))")
        }
        defer { freeaddrinfo(res) }
        var buf = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(first.pointee.ai_addr, first.pointee.ai_addrlen, &buf, socklen_t(buf.count), nil, 0, NI_NUMERICHOST) == 0 else {
            throw .storage("cannot resolve the database host \"\(host)\"")
        }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
