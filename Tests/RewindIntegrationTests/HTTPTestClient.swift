import Foundation
import Glibc
@testable import RewindCore

/// A plain HTTP/1.1 client over one TCP connection (kept alive), for the
/// server API's tests: what any backend's HTTP library does, byte for byte.
final class HTTPTestClient {
    struct Response {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
        var json: JSONObject { (try? JSONParser.parse(body))?.objectValue ?? JSONObject() }
        /// A problem document's protocol code.
        var code: String? { json["code"]?.stringValue }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []
    var key: String?

    init(port: Int, key: String? = nil) throws {
        self.key = key
        fd = try connectedSocket(port: port, timeout: 10)
    }

    deinit { close(fd) }

    /// The bytes of one request (`body` a JSON value, sent as application/json).
    func requestBytes(_ method: String, _ path: String, _ body: JSON? = nil, headers: [String: String] = [:]) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        let bytes = body.map { JSONWriter.encode($0) } ?? []
        if body != nil { head += "Content-Type: application/json\r\n" }
        head += "Content-Length: \(bytes.count)\r\n\r\n"
        return Array(head.utf8) + bytes
    }

    func send(_ bytes: [UInt8]) { writeAll(fd, bytes) }

    @discardableResult
    func request(_ method: String, _ path: String, _ body: JSON? = nil, headers: [String: String] = [:]) throws -> Response {
        send(requestBytes(method, path, body, headers: headers))
        return try response()
    }

    /// The next response on the connection.
    func response() throws -> Response {
        func fill() throws {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw TestFailure("the API closed the connection (or said nothing for 10 s)") }
            buffer += chunk[..<n]
        }
        let end: Int = try {
            while true {
                if let r = Self.find([13, 10, 13, 10], in: buffer) { return r }
                try fill()
            }
        }()
        let head = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < end + 4 + length { try fill() }
        let body = Array(buffer[(end + 4)..<(end + 4 + length)])
        buffer.removeFirst(end + 4 + length)
        return Response(status: status, headers: headers, body: body)
    }

    /// Server-Sent Events read after a streamed response's head: `(id, data)` of
    /// each event (comments skipped), until `count` of them or `seconds` pass.
    func events(_ count: Int, within seconds: Double = 10) -> [(id: String?, data: JSONObject)] {
        var out: [(id: String?, data: JSONObject)] = []
        let deadline = Date().addingTimeInterval(seconds)
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        defer {
            var ten = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ten, socklen_t(MemoryLayout<timeval>.size))
        }
        while out.count < count {
            if let end = Self.find([10, 10], in: buffer) {
                let block = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                var id: String?, data: String?
                for line in block.split(separator: "\n") {
                    if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                    if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                }
                if let data, let o = (try? JSONParser.parse(data))?.objectValue { out.append((id, o)) }
                continue
            }
            guard Date() < deadline else { break }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n > 0 { buffer += chunk[..<n] }
        }
        return out
    }

    /// Whether the server closed the connection (reads end of stream within a second).
    func isClosedByServer() -> Bool {
        var tv = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var b: UInt8 = 0
        return read(fd, &b, 1) == 0
    }

    static func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] && Array(hay[i..<(i + needle.count)]) == needle { return i }
        return nil
    }
}
