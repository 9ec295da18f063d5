import Foundation
import Glibc
import RewindCore
import XCTest

/// A WebSocket client over a raw socket, written from RFC 6455 for the
/// tests: it can send what a browser would (masked text frames) and what a
/// broken or hostile client would (unmasked frames, binary, bad UTF-8,
/// fragments with control frames between them), and reads frames as they are.
final class WebSocketTerminal: MessageTerminal {
    let fd: Int32
    private var buffer: [UInt8] = []
    var nextID: Int64 = 1
    var pushes: [JSONObject] = []
    /// The response to the upgrade: its status line and headers.
    private(set) var status = 0
    private(set) var responseHead = ""

    struct Frame: Equatable {
        var fin: Bool
        var opcode: UInt8
        var payload: [UInt8]
        var text: String { String(decoding: payload, as: UTF8.self) }
        /// A close frame's code.
        var closeCode: Int? { opcode == 8 && payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : nil }
    }

    /// Connects and sends `request` as it is (raw HTTP); reads the response head.
    /// `piecesAt`: byte offsets where the request is cut, each piece sent
    /// 30 ms after the one before (so the server reads them apart).
    init(port: Int, rawRequest: String? = nil, path: String = "/ws", headers: [String] = [], key: String = "dGhlIHNhbXBsZSBub25jZQ==",
         timeout: Int = 10, receiveBuffer: Int32? = nil, piecesAt: [Int] = []) throws {
        fd = try connectedSocket(port: port, receiveBuffer: receiveBuffer, timeout: timeout)
        let request = rawRequest ?? (["GET \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Upgrade: websocket", "Connection: Upgrade",
                                      "Sec-WebSocket-Key: \(key)", "Sec-WebSocket-Version: 13"] + headers).joined(separator: "\r\n") + "\r\n\r\n"
        let bytes = Array(request.utf8)
        var from = 0
        for cut in piecesAt + [bytes.count] {
            if from > 0 { usleep(30_000) }
            sendRaw(Array(bytes[from..<cut]))
            from = cut
        }
        try readResponseHead()
    }

    deinit { close(fd) }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return false }
        buffer.append(contentsOf: chunk[..<n])
        return true
    }

    private func readResponseHead() throws {
        while true {
            if let end = buffer.indices.dropLast(3).first(where: { buffer[$0...$0 + 3].elementsEqual([13, 10, 13, 10]) }) {
                responseHead = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                status = Int(responseHead.split(separator: " ").dropFirst().first ?? "") ?? 0
                return
            }
            guard fill() else { throw TestFailure("no HTTP response; got \(String(decoding: buffer, as: UTF8.self))") }
        }
    }

    /// The response body that follows a refusal (until the server closes).
    func body() -> String {
        while fill() {}
        return String(decoding: buffer, as: UTF8.self)
    }

    func header(_ name: String) -> String? {
        for line in responseHead.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return nil
    }

    // MARK: Frames


    /// One frame as a client sends it (masked unless `masked` is false).
    static func encode(opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        var f: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
        let m: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 { f.append(m | UInt8(payload.count)) }
        else if payload.count <= 0xFFFF { f += [m | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] }
        else { f.append(m | 127); for s in stride(from: 56, through: 0, by: -8) { f.append(UInt8(truncatingIfNeeded: payload.count >> s)) } }
        guard masked else { return f + payload }
        let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        f += key
        for (i, b) in payload.enumerated() { f.append(b ^ key[i % 4]) }
        return f
    }

    func sendFrame(opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0) {
        sendRaw(Self.encode(opcode: opcode, payload, fin: fin, masked: masked, rsv: rsv))
    }

    func sendText(_ s: String) { sendFrame(opcode: 1, Array(s.utf8)) }

    /// The next frame from the server (nil: closed or silent past the timeout).
    func nextFrame() -> Frame? {
        while true {
            if buffer.count >= 2 {
                let fin = buffer[0] & 0x80 != 0, opcode = buffer[0] & 0x0F
                var len = Int(buffer[1] & 0x7F), at = 2
                if len == 126, buffer.count >= 4 { len = Int(buffer[2]) << 8 | Int(buffer[3]); at = 4 }
                else if len == 127, buffer.count >= 10 { len = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }; at = 10 }
                else if len >= 126 { guard fill() else { return nil }; continue }
                if buffer.count >= at + len {
                    let f = Frame(fin: fin, opcode: opcode, payload: Array(buffer[at..<at + len]))
                    buffer.removeFirst(at + len)
                    return f
                }
            }
            guard fill() else { return nil }
        }
    }

    /// Whether the server closed the TCP connection (reads end).
    func isClosedByServer() -> Bool {
        while true {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { return true }
            if n < 0 { return false }
        }
    }

    // MARK: Messages

    func send(_ v: JSON) { sendText(JSONWriter.string(v)) }

    /// The next whole message: a text frame, or a fragmented one reassembled
    /// (control frames between its fragments are skipped; a close ends it).
    func nextMessage() throws -> [UInt8] {
        var message: [UInt8]?
        while true {
            guard let f = nextFrame() else { throw TestFailure("connection closed or silent") }
            switch f.opcode {
            case 1:
                guard message == nil else { throw TestFailure("a text frame inside a fragmented message") }
                if f.fin { return f.payload }
                message = f.payload
            case 0:
                guard message != nil else { throw TestFailure("a continuation frame outside a message") }
                message! += f.payload
                if f.fin { return message! }
            case 8: throw TestFailure("closed by the server: \(f.closeCode ?? 0) \(f.text)")
            default: continue
            }
        }
    }

    /// The next JSON message (pings are answered by the test where it wants).
    func next() throws -> JSONObject {
        let m = try nextMessage()
        guard let o = try JSONParser.parse(m).objectValue else { throw TestFailure("not an object: \(String(decoding: m.prefix(200), as: UTF8.self))") }
        return o
    }
}
