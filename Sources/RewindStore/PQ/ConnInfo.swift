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

    /// `conninfo` with its host name resolved once, now, so that libpq's
    /// non-blocking connect never resolves names on the loop thread (libpq
    /// calls getaddrinfo synchronously). Socket paths, IP addresses, an
    /// explicit `hostaddr` and lists of hosts are left as they are. Throws a
    /// clear error when the name does not resolve.
    public static func resolvingHost(_ conninfo: String) throws(RewindError) -> String {
        guard !conninfo.contains("://"), let host = value("host", in: conninfo) ?? environment("PGHOST"), !host.isEmpty,
              !host.hasPrefix("/"), !host.hasPrefix("@"), !host.contains(","), value("hostaddr", in: conninfo) == nil
        else { return conninfo }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST
        var res: UnsafeMutablePointer<addrinfo>?
        if getaddrinfo(host, nil, &hints, &res) == 0 { freeaddrinfo(res); return conninfo }  // already an address
        hints.ai_flags = 0
        let rc = getaddrinfo(host, nil, &hints, &res)
        guard rc == 0, let first = res else {
            throw .storage("cannot resolve the database host \"\(host)\": \(PQ.string(gai_strerror(rc)))")
        }
        defer { freeaddrinfo(res) }
        var buf = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(first.pointee.ai_addr, first.pointee.ai_addrlen, &buf, socklen_t(buf.count), nil, 0, NI_NUMERICHOST) == 0 else {
            throw .storage("cannot resolve the database host \"\(host)\"")
        }
        let address = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // hostaddr is used to connect; host stays for TLS checks and messages.
        return (conninfo.isEmpty ? "" : conninfo + " ") + "hostaddr='\(address)'"
    }
}
