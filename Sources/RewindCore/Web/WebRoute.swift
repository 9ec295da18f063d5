/// What the listening port answers to an HTTP request (PROTOCOL.md, "WebSocket
/// and the web"): the upgrade to a WebSocket at `/ws`, the web editor's
/// files, or a refusal with its status. Pure: the server computes the accept
/// key and writes the response.
public enum WebRoute: Sendable, Equatable {
    /// `101 Switching Protocols`, with `Sec-WebSocket-Accept` made from `key`.
    case upgrade(key: String)
    /// A file the server serves (`/` is the editor page, `/<name>.js` and
    /// `/<name>.css` its modules and style); the server answers 404 for one it has not.
    case file(path: String)
    /// A status other than 101/200, why, and headers it needs (`Allow`, `Sec-WebSocket-Version`).
    case refuse(status: Int, reason: String, headers: [String])

    /// `/`, or a name of the web folder's own: lowercase letters, digits and `-`,
    /// then `.js` or `.css` — nothing that could climb out of the folder.
    public static func isFilePath(_ path: String) -> Bool {
        if path == "/" { return true }
        guard path.hasPrefix("/") else { return false }
        let name = path.dropFirst()
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        let stem = name[..<dot], ext = name[name.index(after: dot)...]
        guard ext == "js" || ext == "css", stem.count <= 64 else { return false }
        return stem.utf8.allSatisfy { (0x61...0x7a).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2d }
            && stem.first != "-"
    }

    /// Which origins may open a WebSocket: none named but the server's own page (and clients without an `Origin`), some, or any.
    public enum Origins: Sendable, Equatable {
        case listed(Set<String>)
        case any

        /// `--allowed-origins`: comma-separated origins (`https://app.example.com`), or `*`.
        public init(_ option: String?) {
            let list = (option ?? "").split(separator: ",").map { $0.trimmingSpaces.lowercased() }.filter { !$0.isEmpty }
            self = list.contains("*") ? .any : .listed(Set(list))
        }
    }

    /// `publicOrigins`: the origins the server's own page is served from
    /// (`--public-origin`, e.g. `https://rewind.example.com`). Without any,
    /// the page's origin is taken from `Host` — but only when `Host` is a
    /// loopback name or an IP literal: a page at a name the attacker
    /// controls, resolved to this server (DNS rebinding), sends its own name
    /// as both `Host` and `Origin`.
    public static func decide(_ r: HTTPRequest, origins: Origins, publicOrigins: Set<String> = []) -> WebRoute {
        guard r.method == "GET" else {
            let what = isFilePath(r.path) ? "\(r.path) answers GET only" : r.path == "/ws" ? "/ws answers a GET upgrade only" : "this port answers GET only"
            return .refuse(status: 405, reason: "\(r.method): " + what, headers: ["Allow: GET"])
        }
        if isFilePath(r.path) { return .file(path: r.path) }
        guard r.path == "/ws" else { return .refuse(status: 404, reason: "no \(r.path) here: GET / (the editor), GET /<module>.js, or a WebSocket at /ws", headers: []) }
        guard r.version == "HTTP/1.1", r.header("upgrade", contains: "websocket"), r.header("connection", contains: "upgrade") else {
            return .refuse(status: 400, reason: "/ws takes a WebSocket upgrade: GET with Upgrade: websocket and Connection: Upgrade over HTTP/1.1", headers: [])
        }
        guard let key = r.header("sec-websocket-key"), Base64.decode(key)?.count == 16 else {
            return .refuse(status: 400, reason: "Sec-WebSocket-Key is missing or is not 16 bytes in base64", headers: [])
        }
        guard r.header("sec-websocket-version") == "13" else {
            return .refuse(status: 426, reason: "this server speaks WebSocket version 13", headers: ["Sec-WebSocket-Version: 13"])
        }
        if let origin = r.header("origin"), !allowed(origin, r, origins, publicOrigins) {
            return .refuse(status: 403, reason: "origin \(origin) is not allowed (the server's own origin is "
                            + (publicOrigins.isEmpty ? "taken from Host only for loopback names and IP literals: name it with --public-origin"
                                                     : publicOrigins.sorted().joined(separator: ", "))
                            + "; others need --allowed-origins)", headers: [])
        }
        return .upgrade(key: key)
    }

    /// No `Origin` (not a browser) is checked by the caller; here: the server's own
    /// origin (named, or the page it served at a loopback or IP-literal `Host`), or one listed.
    static func allowed(_ origin: String, _ r: HTTPRequest, _ origins: Origins, _ publicOrigins: Set<String>) -> Bool {
        let o = origin.lowercased()
        if publicOrigins.contains(o) { return true }
        if publicOrigins.isEmpty, let host = r.header("host")?.lowercased(), isLoopbackOrLiteral(host),
           o == "http://" + host || o == "https://" + host { return true }
        switch origins {
        case .any: return true
        case let .listed(set): return set.contains(o)
        }
    }

    /// `Host` (with or without a port) names this machine or an address, not
    /// a DNS name that someone else's resolver could point here: `localhost`,
    /// an IPv4 literal, or a bracketed IPv6 literal.
    static func isLoopbackOrLiteral(_ host: String) -> Bool {
        var name = Substring(host)
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            let rest = name[name.index(after: close)...]
            return rest.isEmpty || (rest.first == ":" && rest.dropFirst().allSatisfy(\.isASCIIDigit) && rest.count > 1)
        }
        if let colon = name.lastIndex(of: ":") {
            let port = name[name.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy(\.isASCIIDigit) else { return false }
            name = name[..<colon]
        }
        if name == "localhost" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { p in !p.isEmpty && p.count <= 3 && p.allSatisfy(\.isASCIIDigit) && Int(p)! <= 255 }
    }

    /// `--public-origin`: comma-separated origins, lowercased, without a trailing `/`.
    public static func publicOrigins(_ option: String?) -> Set<String> {
        Set((option ?? "").split(separator: ",").map { o in
            var o = o.trimmingSpaces.lowercased()
            while o.hasSuffix("/") { o.removeLast() }
            return o
        }.filter { !$0.isEmpty })
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
