/// The head of an HTTP/1.x request, as much as the metrics endpoint needs:
/// its method and path. Pure: bytes in, a verdict out.
///
///     "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"  →  .request(method: "GET", path: "/metrics")
///     "GET /metr"                                 →  .needMore
///
/// A head ends at an empty line (`\r\n\r\n`, or `\n\n` from a hand-typed
/// `nc` session); headers are not looked at, and a body is never read.
enum HTTPRequestHead: Equatable {
    case needMore
    case request(method: String, path: String)
    /// Not an HTTP/1.x request line: the reason, for a 400.
    case malformed(String)

    static func parse(_ bytes: [UInt8]) -> HTTPRequestHead {
        guard headEnds(in: bytes) else { return .needMore }
        let line = bytes.prefix { $0 != 0x0D && $0 != 0x0A }
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[2].starts(with: Array("HTTP/1.".utf8)) else {
            return .malformed("the request line must be METHOD PATH HTTP/1.x")
        }
        let target = parts[1].prefix { $0 != UInt8(ascii: "?") }  // a query string changes nothing here
        guard target.first == UInt8(ascii: "/") else { return .malformed("the path must start with /") }
        return .request(method: String(decoding: parts[0], as: UTF8.self), path: String(decoding: target, as: UTF8.self))
    }

    private static func headEnds(in b: [UInt8]) -> Bool {
        var i = 0
        while i + 1 < b.count {
            if b[i] == 0x0A && (b[i + 1] == 0x0A || (b[i + 1] == 0x0D && i + 2 < b.count && b[i + 2] == 0x0A)) { return true }
            i += 1
        }
        return false
    }
}
