/// The head of an HTTP/1.x request — request line and headers — parsed from
/// the bytes that start a connection. Pure: bytes in, a verdict out; bounded
/// (a head past `maxBytes` is refused with 431 before it is complete).
///
///     "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n…\r\n\r\n"  →  .request(GET /ws, length: N)
///     "GET /w"                                             →  .needMore
///     9 KiB of headers                                     →  .refused(431, …)
///
/// A head ends at an empty line (`\r\n\r\n`, or `\n\n` from a hand-typed
/// `nc` session). Header names are compared without case; a body is never read.
public struct HTTPRequest: Sendable, Equatable {
    public struct Header: Sendable, Equatable {
        /// Lowercased.
        public var name: String
        public var value: String
    }

    public var method: String
    /// The path, without its query string.
    public var path: String
    /// "HTTP/1.1" or "HTTP/1.0".
    public var version: String
    public var headers: [Header]

    /// The first value of header `name` (lowercase), trimmed.
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// Whether the comma-separated values of header `name` hold `token` (without case).
    public func header(_ name: String, contains token: String) -> Bool {
        headers.contains { h in
            h.name == name && h.value.split(separator: ",").contains { $0.trimmingSpaces.lowercased() == token }
        }
    }

    public enum Head: Sendable, Equatable {
        case needMore
        /// A complete head of `length` bytes (what follows it belongs to the next protocol: a WebSocket's frames).
        case request(HTTPRequest, length: Int)
        /// Not a request this server can read: the status to answer (400, 431) and why.
        case refused(status: Int, reason: String)
    }

    public static let maxBytes = 8 << 10

    public static func parse(_ bytes: [UInt8], maxBytes: Int = HTTPRequest.maxBytes) -> Head {
        guard let end = headEnd(bytes) else {
            return bytes.count > maxBytes ? .refused(status: 431, reason: "request head over \(maxBytes) bytes") : .needMore
        }
        guard end <= maxBytes else { return .refused(status: 431, reason: "request head over \(maxBytes) bytes") }
        var lines: [ArraySlice<UInt8>] = bytes[..<end].split(separator: 0x0A, omittingEmptySubsequences: false).map {
            $0.last == 0x0D ? $0.dropLast() : $0
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first else { return .refused(status: 400, reason: "empty request") }
        let parts = first.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || $0 == 0x2D || $0 == 0x5F }),
              parts[2].elementsEqual("HTTP/1.1".utf8) || parts[2].elementsEqual("HTTP/1.0".utf8)
        else { return .refused(status: 400, reason: "the request line must be METHOD PATH HTTP/1.x") }
        let target = parts[1].prefix { $0 != UInt8(ascii: "?") }
        // CONNECT names host:port, OPTIONS may name `*`: read, then refused for their method (405), not their form.
        let otherForm = parts[0].elementsEqual("CONNECT".utf8) || target.elementsEqual("*".utf8)
        guard target.first == UInt8(ascii: "/") || (otherForm && !target.isEmpty) else {
            return .refused(status: 400, reason: "the path must start with /")
        }
        var headers: [Header] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  !line[..<colon].contains(0x20), !line[..<colon].contains(0x09)
            else { return .refused(status: 400, reason: "a header line must be NAME: VALUE") }
            guard let name = String(validating: line[..<colon], as: UTF8.self),
                  let value = String(validating: line[(colon + 1)...], as: UTF8.self)
            else { return .refused(status: 400, reason: "a header is not UTF-8") }
            headers.append(Header(name: name.lowercased(), value: value.trimmingSpaces))
        }
        guard let method = String(validating: parts[0], as: UTF8.self), let path = String(validating: target, as: UTF8.self) else {
            return .refused(status: 400, reason: "the request line is not UTF-8")
        }
        return .request(HTTPRequest(method: method, path: path, version: String(decoding: parts[2], as: UTF8.self), headers: headers),
                        length: end)
    }

    /// Bytes up to and including the empty line that ends the head (nil: not there yet).
    private static func headEnd(_ b: [UInt8]) -> Int? {
        var i = 0
        while i + 1 < b.count {
            if b[i] == 0x0A {
                if b[i + 1] == 0x0A { return i + 2 }
                if b[i + 1] == 0x0D && i + 2 < b.count && b[i + 2] == 0x0A { return i + 3 }
            }
            i += 1
        }
        return nil
    }

    /// Whether `bytes` (the first bytes of a connection) start an HTTP request
    /// line: a method — any, `GET` answered, the others refused with 405
    /// (`TRACE`, `CONNECT`, `PROPFIND` were taken for NDJSON and answered
    /// `bad_frame`) — then a space. A method is 1 to 20 capital letters, `-`
    /// or `_` (RFC 9110 allows any token; every registered one has this
    /// shape). An NDJSON line starts with `{`, so none is taken for the other.
    /// `PROXY ` is not a method: a PROXY protocol header from a peer not
    /// trusted to send one is an NDJSON line like any other (`bad_frame`).
    public static func startsRequest(_ bytes: [UInt8]) -> Bool? {
        for (i, b) in bytes.prefix(maxMethodLength + 1).enumerated() {
            if b == UInt8(ascii: " ") { return i > 0 && !bytes[..<i].elementsEqual("PROXY".utf8) }
            let letter = b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")
            guard letter || (i > 0 && (b == UInt8(ascii: "-") || b == UInt8(ascii: "_"))) else { return false }
        }
        return bytes.count <= maxMethodLength ? nil : false  // nil: too few bytes to tell yet
    }

    static let maxMethodLength = 20
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let u = Array(utf8)
        var a = 0, b = u.count
        while a < b && (u[a] == 0x20 || u[a] == 0x09) { a += 1 }
        while b > a && (u[b - 1] == 0x20 || u[b - 1] == 0x09) { b -= 1 }
        return String(decoding: u[a..<b], as: UTF8.self)
    }
}
