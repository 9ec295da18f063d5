/// What the listening port answers to an HTTP request (PROTOCOL.md, "WebSocket
/// and the web"): the upgrade to a WebSocket at `/ws`, the web editor's two
/// files, or a refusal with its status. Pure: the server computes the accept
/// key and writes the response.
public enum WebRoute: Sendable, Equatable {
    /// `101 Switching Protocols`, with `Sec-WebSocket-Accept` made from `key`.
    case upgrade(key: String)
    /// A file the server serves (`/` is the editor page, `/rewind.js` the client).
    case file(path: String)
    /// A status other than 101/200, why, and headers it needs (`Allow`, `Sec-WebSocket-Version`).
    case refuse(status: Int, reason: String, headers: [String])

    public static let files: Set<String> = ["/", "/rewind.js"]

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

    public static func decide(_ r: HTTPRequest, origins: Origins) -> WebRoute {
        if files.contains(r.path) {
            guard r.method == "GET" else { return .refuse(status: 405, reason: "\(r.path) answers GET only", headers: ["Allow: GET"]) }
            return .file(path: r.path)
        }
        guard r.path == "/ws" else { return .refuse(status: 404, reason: "no \(r.path) here: GET / (the editor), GET /rewind.js, or a WebSocket at /ws", headers: []) }
        guard r.method == "GET" else { return .refuse(status: 405, reason: "/ws answers a GET upgrade only", headers: ["Allow: GET"]) }
        guard r.version == "HTTP/1.1", r.header("upgrade", contains: "websocket"), r.header("connection", contains: "upgrade") else {
            return .refuse(status: 400, reason: "/ws takes a WebSocket upgrade: GET with Upgrade: websocket and Connection: Upgrade over HTTP/1.1", headers: [])
        }
        guard let key = r.header("sec-websocket-key"), Base64.decode(key)?.count == 16 else {
            return .refuse(status: 400, reason: "Sec-WebSocket-Key is missing or is not 16 bytes in base64", headers: [])
        }
        guard r.header("sec-websocket-version") == "13" else {
            return .refuse(status: 426, reason: "this server speaks WebSocket version 13", headers: ["Sec-WebSocket-Version: 13"])
        }
        if let origin = r.header("origin"), !allowed(origin, r, origins) {
            return .refuse(status: 403, reason: "origin \(origin) is not allowed (--allowed-origins)", headers: [])
        }
        return .upgrade(key: key)
    }

    /// No `Origin` (not a browser) is checked by the caller; here: the server's own
    /// origin (the page it served, same `Host`), or one listed.
    static func allowed(_ origin: String, _ r: HTTPRequest, _ origins: Origins) -> Bool {
        let o = origin.lowercased()
        if let host = r.header("host")?.lowercased(), o == "http://" + host || o == "https://" + host { return true }
        switch origins {
        case .any: return true
        case let .listed(set): return set.contains(o)
        }
    }
}

/// Base64 (RFC 4648, with padding): the WebSocket key and accept value.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let b0 = UInt32(bytes[i]), b1 = n > 1 ? UInt32(bytes[i + 1]) : 0, b2 = n > 2 ? UInt32(bytes[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(n > 1 ? alphabet[Int(v >> 6 & 63)] : UInt8(ascii: "="))
            out.append(n > 2 ? alphabet[Int(v & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < u.count {
            var v: UInt32 = 0
            var pad = 0
            for j in 0..<4 {
                let c = u[i + j]
                let d: UInt32
                switch c {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): d = UInt32(c - 65)
                case UInt8(ascii: "a")...UInt8(ascii: "z"): d = UInt32(c - 97 + 26)
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - 48 + 52)
                case UInt8(ascii: "+"): d = 62
                case UInt8(ascii: "/"): d = 63
                case UInt8(ascii: "=") where i + 4 == u.count && j >= 2: d = 0; pad += 1
                default: return nil
                }
                if pad > 0 && c != UInt8(ascii: "=") { return nil }
                v = v << 6 | d
            }
            // Canonical only: the bits the padding leaves over must be zero ("dGg=" but not "dGh=").
            if pad == 2 && v & 0xFFFF != 0 || pad == 1 && v & 0xFF != 0 { return nil }
            out.append(UInt8(v >> 16 & 0xFF))
            if pad < 2 { out.append(UInt8(v >> 8 & 0xFF)) }
            if pad < 1 { out.append(UInt8(v & 0xFF)) }
            i += 4
        }
        return out
    }
}
