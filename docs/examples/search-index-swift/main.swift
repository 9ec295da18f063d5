// The search index of docs/examples/search_index.py, in Swift with nothing but
// Foundation and POSIX sockets (docs/api.md, "Following the log"): follow
// `GET /v1/events` from a position, read each changed document's state, index
// its words. Reconnecting with `Last-Event-ID` misses nothing and repeats nothing.
//
//   search-index-example HOST PORT KEY [--idle SECONDS]
//
// prints the index (word -> documents) as JSON once the feed has been idle that
// long. (`swift build` builds it; FollowTests runs it.)
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 exchange over a socket of its own: the request, then the head and whatever follows.
final class HTTPStream {
    private let fd: Int32
    private var buffer = Data()

    init(host: String, port: UInt16, request: String, idleSeconds: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr(host)
        let ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard ok == 0 else { throw NSError(domain: "connect", code: Int(errno)) }
        var tv = timeval(tv_sec: idleSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    deinit { close(fd) }

    /// The next line (without CR LF), or nil when the peer closed or was idle.
    func line() -> String? {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<nl]
                buffer.removeSubrange(buffer.startIndex...nl)
                return String(decoding: line, as: UTF8.self).trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// The rest up to `count` bytes (a body of known length).
    func bytes(_ count: Int) -> Data {
        while buffer.count < count {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            buffer.append(contentsOf: chunk[..<n])
        }
        return buffer.prefix(count)
    }
}

let args = CommandLine.arguments
guard args.count >= 4, let port = UInt16(args[2]) else {
    FileHandle.standardError.write(Data("usage: search-index-example HOST PORT KEY [--idle SECONDS]\n".utf8))
    exit(2)
}
let (host, key) = (args[1], args[3])
let idle = args.firstIndex(of: "--idle").flatMap { $0 + 1 < args.count ? Int(args[$0 + 1]) : nil } ?? 30

/// The documents whose entries came after `position`, until the feed is idle.
func changedDocuments(after position: Int64) throws -> Set<String> {
    let s = try HTTPStream(host: host, port: port, request: "GET /v1/events HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(key)\r\n"
                                                             + "Last-Event-ID: \(position)\r\n\r\n", idleSeconds: idle)
    guard let status = s.line(), status.contains(" 200 ") else { throw NSError(domain: "follow", code: 1) }
    while let h = s.line(), !h.isEmpty {}  // the head
    var docs = Set<String>()
    while let line = s.line() {
        guard line.hasPrefix("data: "), let entry = try JSONSerialization.jsonObject(with: Data(line.dropFirst(6).utf8)) as? [String: Any],
              let doc = entry["doc"] as? String else { continue }
        docs.insert(doc)
    }
    return docs
}

/// The words of a document's text nodes, lower-cased (nil: it is gone).
func words(of doc: String) throws -> Set<String>? {
    let path = doc.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? doc
    let s = try HTTPStream(host: host, port: port, request: "GET /v1/docs/\(path)/state HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(key)\r\n"
                                                             + "Connection: close\r\n\r\n", idleSeconds: 10)
    guard let status = s.line(), status.contains(" 200 ") else { return nil }
    var length = 0
    while let h = s.line(), !h.isEmpty { if h.lowercased().hasPrefix("content-length:") { length = Int(h.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0 } }
    guard let reply = try JSONSerialization.jsonObject(with: s.bytes(length)) as? [String: Any],
          let nodes = (reply["state"] as? [String: Any])?["nodes"] as? [String: [String: Any]] else { return nil }
    let text = nodes.values.compactMap { $0["text"] as? String }.joined(separator: " ")
    return Set(text.lowercased().components(separatedBy: CharacterSet.alphanumerics.inverted).filter { !$0.isEmpty })
}

var index: [String: Set<String>] = [:]
for doc in try changedDocuments(after: 0).sorted() {
    for w in try words(of: doc) ?? [] { index[w, default: []].insert(doc) }
}
let out = try JSONSerialization.data(withJSONObject: index.mapValues { $0.sorted() }, options: [.sortedKeys, .withoutEscapingSlashes])
print(String(decoding: out, as: UTF8.self))
