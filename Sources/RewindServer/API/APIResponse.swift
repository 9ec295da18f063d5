import RewindCore

/// One response of the server API: a JSON body, or an RFC 9457 problem
/// document whose `type` ends with the protocol's error code.
struct APIResponse {
    var status: Int
    var headers: [(String, String)] = []
    var contentType = "application/json"
    var body: [UInt8]
    /// A body streamed until the connection ends (Server-Sent Events): given
    /// the sink once the head is written. The head says no length, and the
    /// connection closes when the stream does.
    var stream: ((APIStreamSink) -> Void)?

    static func json(_ status: Int, _ value: JSON, headers: [(String, String)] = []) -> APIResponse {
        APIResponse(status: status, headers: headers, body: JSONWriter.encode(value) + [0x0A])
    }

    /// `e` as a problem document: `type` `urn:rewind:problem:<code>`, `title`
    /// the code, `status`, `detail` the message, and the protocol's `code`
    /// and `details` beside them (RFC 9457 §3.2: extension members).
    static func problem(_ e: RewindError, status: Int? = nil, headers: [(String, String)] = []) -> APIResponse {
        let status = status ?? Self.status(of: e.code)
        var r = json(status, .obj([("type", .string("urn:rewind:problem:" + e.code.rawValue)), ("title", .string(e.code.rawValue)),
                                   ("status", .int(Int64(status))), ("detail", .string(e.message)), ("code", .string(e.code.rawValue)),
                                   ("details", e.details)]), headers: headers)
        r.contentType = "application/problem+json"
        return r
    }

    /// The HTTP status that fits each of the protocol's error codes.
    static func status(of code: ErrorCode) -> Int {
        switch code {
        case .badFrame, .badRequest: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .conflict, .version: 409
        case .tooLarge: 413
        case .rateLimited: 429
        case .unavailable: 503
        case .internal: 500
        }
    }

    static let reasons: [Int: String] = [
        200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
        405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict", 413: "Content Too Large", 415: "Unsupported Media Type",
        429: "Too Many Requests", 431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable",
    ]

    /// The whole response on the wire (of a stream, its head).
    func encoded(keepAlive: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reasons[status] ?? "Status")\r\n"
        head += "Content-Type: \(contentType)\r\n"
        head += stream == nil ? "Content-Length: \(body.count)\r\n" : ""
        head += keepAlive && stream == nil ? "" : "Connection: close\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }
}

/// Where a streamed response's bytes go (`APIConnection`): `write` says false
/// once the peer has left, or has let more than the bound wait unread (it is
/// then cut: a follower resumes from the last position it saw).
protocol APIStreamSink: AnyObject {
    @discardableResult func write(_ bytes: [UInt8]) -> Bool
    var isOpen: Bool { get }
    func end()
}
