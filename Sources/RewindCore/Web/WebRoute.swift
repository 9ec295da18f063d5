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
