import Foundation
import RewindCore
import XCTest

/// The Autobahn|Testsuite's case groups 1–7 (framing, pings and pongs,
/// reserved bits, opcodes, fragmentation, UTF-8, closing), ported over raw
/// sockets: that suite needs Python 2 and cannot run here. Each test is named
/// with its Autobahn case numbers. Where Autobahn's server under test echoes
/// a message, ours answers it: a message here is a `ping` request padded with
/// spaces to the length the case asks for, and the reply (`re`) shows the
/// server received it whole. Binary messages are refused (1003) instead of
/// echoed: the protocol speaks text frames only.
final class WebSocketConformanceTests: XCTestCase {
    nonisolated(unsafe) static var shared: (TestDatabase, ServerProcess)?

    var port: Int { Self.shared!.1.port }

    override func setUpWithError() throws {
        if Self.shared == nil {
            let db = try TestDatabase()
            Self.shared = (db, try ServerProcess(database: db))
        }
    }

    override class func tearDown() {
        shared = nil  // the server process ends with its harness
        super.tearDown()
    }

    func connect() throws -> WebSocketTerminal {
        let ws = try WebSocketTerminal(port: port, timeout: 5)
        XCTAssertEqual(ws.status, 101)
        return ws
    }

    /// A `ping` request of exactly `length` bytes (`length` ≥ 21), id `id`.
    func request(_ id: Int, length: Int) -> [UInt8] {
        let core = Array("{\"id\":\(id),\"type\":\"ping\"}".utf8)
        return core + Array(repeating: 0x20, count: max(0, length - core.count))
    }

    func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        WebSocketTerminal.encode(opcode: opcode, payload, fin: fin, rsv: rsv)
    }

    /// Frames until the reply to `id` (returned) — pongs and other control frames before it are kept in `seen`.
    func reply(_ ws: WebSocketTerminal, _ id: Int, seen: inout [WebSocketTerminal.Frame]) -> JSONObject? {
        var message: [UInt8]?
        while let f = ws.nextFrame() {
            switch f.opcode {
            case 1 where f.fin: if let o = try? JSONParser.parse(f.payload).objectValue, o["re"] == .int(Int64(id)) { return o }
            case 1: message = f.payload
            case 0:
                message? += f.payload
                if f.fin, let m = message, let o = try? JSONParser.parse(m).objectValue, o["re"] == .int(Int64(id)) { return o }
            default: seen.append(f); if f.opcode == 8 { return nil }
            }
        }
        return nil
    }

    func answered(_ ws: WebSocketTerminal, _ id: Int, file: StaticString = #filePath, line: UInt = #line) {
        var seen: [WebSocketTerminal.Frame] = []
        XCTAssertNotNil(reply(ws, id, seen: &seen), "no reply to \(id); frames: \(seen.map(\.opcode))", file: file, line: line)
    }

    /// The server closes with `code` (any of `codes`) and then the TCP connection.
    func closes(_ ws: WebSocketTerminal, _ codes: Set<Int>, file: StaticString = #filePath, line: UInt = #line) {
        var close: WebSocketTerminal.Frame?
        while let f = ws.nextFrame() { if f.opcode == 8 { close = f; break } }
        XCTAssertNotNil(close, "no close frame", file: file, line: line)
        if let c = close { XCTAssertTrue(codes.contains(c.closeCode ?? 1005), "close code \(c.closeCode ?? 1005), expected \(codes)", file: file, line: line) }
        XCTAssertTrue(ws.isClosedByServer(), "the TCP connection stays open", file: file, line: line)
    }

    // MARK: 1 Framing

    /// 1.1.1–1.1.8: text messages of 0 (ignored, as an empty line), 125, 126, 127, 128, 65535, 65536 bytes, and 65536 sent in 997-byte chunks.
    func testCase1_1_TextMessagesOfEveryLengthEncoding() throws {
        let ws = try connect()
        ws.sendText("")
        for (i, n) in [125, 126, 127, 128, 65_535, 65_536].enumerated() {
            ws.sendFrame(opcode: 1, request(i + 1, length: n))
            answered(ws, i + 1)
        }
        let chunked = frame(1, request(99, length: 65_536))
        for start in stride(from: 0, to: chunked.count, by: 997) { ws.sendRaw(Array(chunked[start..<min(chunked.count, start + 997)])) }
        answered(ws, 99)
    }

    /// 1.2.1–1.2.8: binary messages — refused (1003), the protocol is text.
    func testCase1_2_BinaryMessagesAreRefused() throws {
        for n in [0, 125, 65_536] {
            let ws = try connect()
            ws.sendFrame(opcode: 2, Array(repeating: 0xFE, count: n))
            closes(ws, [1003])
        }
    }

    // MARK: 2 Pings and pongs

    /// 2.1–2.4, 2.6: pings without payload, with text, with binary, with 125 bytes, and one sent a byte at a time, each answered by a pong carrying its payload.
    func testCase2_1to2_6_PingsAreAnsweredWithTheirPayload() throws {
        let ws = try connect()
        for payload in [[], Array("Hello, world!".utf8), [0x00, 0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0x00, 0xFF], Array(repeating: 0xFE, count: 125)] as [[UInt8]] {
            ws.sendFrame(opcode: 9, payload)
            let pong = ws.nextFrame()
            XCTAssertEqual(pong?.opcode, 10)
            XCTAssertEqual(pong?.payload, payload)
        }
        for b in frame(9, Array("slowly".utf8)) { ws.sendRaw([b]) }
        XCTAssertEqual(ws.nextFrame()?.payload, Array("slowly".utf8))
    }

    /// 2.5: a ping of 126 bytes breaks the protocol (control frames carry at most 125).
    func testCase2_5_APingOf126BytesIsAProtocolError() throws {
        let ws = try connect()
        ws.sendFrame(opcode: 9, Array(repeating: 0xFE, count: 126))
        closes(ws, [1002])
    }

    /// 2.7–2.9: unsolicited pongs are ignored; a ping after one is answered.
    func testCase2_7to2_9_UnsolicitedPongsAreIgnored() throws {
        let ws = try connect()
        ws.sendFrame(opcode: 10, [])
        ws.sendFrame(opcode: 10, Array("unsolicited".utf8))
        ws.sendFrame(opcode: 9, Array("ping".utf8))
        let f = ws.nextFrame()
        XCTAssertEqual(f?.opcode, 10)
        XCTAssertEqual(f?.text, "ping")
    }

    /// 2.10, 2.11: ten pings in a row, and ten sent in chunks, get ten pongs in order.
    func testCase2_10_2_11_TenPingsTenPongs() throws {
        let ws = try connect()
        let pings = (0..<10).flatMap { frame(9, Array("payload-\($0)".utf8)) }
        ws.sendRaw(pings)
        for i in 0..<10 { XCTAssertEqual(ws.nextFrame()?.text, "payload-\(i)") }
        for start in stride(from: 0, to: pings.count, by: 7) { ws.sendRaw(Array(pings[start..<min(pings.count, start + 7)])) }
        for i in 0..<10 { XCTAssertEqual(ws.nextFrame()?.text, "payload-\(i)") }
    }

    // MARK: 3 Reserved bits

    /// 3.1–3.7: a frame with a reserved bit set (no extension was agreed) fails the connection;
    /// the message before it was answered, the ping after it is not. (Requests arrive in the same
    /// read as a frame that breaks the protocol are dropped with the connection: they are
    /// answered asynchronously, and nothing may follow the close frame.)
    func testCase3_ReservedBitsFailTheConnection() throws {
        for (rsv, opcode) in [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 9), (7, 8)] as [(UInt8, UInt8)] {
            let ws = try connect()
            ws.sendRaw(frame(1, request(1, length: 30)))
            answered(ws, 1)
            ws.sendRaw(frame(opcode, opcode == 8 ? [0x03, 0xE8] : Array("x".utf8), rsv: rsv) + frame(9, []))
            closes(ws, [1002])
        }
    }

    // MARK: 4 Opcodes

    /// 4.1.1–4.1.5, 4.2.1–4.2.5: reserved non-control (3–7) and control (11–15) opcodes fail the connection
    /// (the message before answered, the ping after not).
    func testCase4_ReservedOpcodesFailTheConnection() throws {
        for opcode in [3, 4, 5, 6, 7, 11, 12, 13, 14, 15] as [UInt8] {
            let ws = try connect()
            ws.sendRaw(frame(1, request(1, length: 30)))
            answered(ws, 1)
            ws.sendRaw(frame(opcode, Array("reserved".utf8)) + frame(9, []))
            closes(ws, [1002])
        }
    }

    // MARK: 5 Fragmentation

    /// 5.1, 5.2: fragmented control frames are a protocol error.
    func testCase5_1_5_2_FragmentedControlFramesFail() throws {
        for opcode in [9, 10] as [UInt8] {
            let ws = try connect()
            ws.sendRaw(frame(opcode, Array("frag".utf8), fin: false) + frame(0, Array("ment".utf8)))
            closes(ws, [1002])
        }
    }

    /// 5.3–5.8: a text message in two fragments, with pings between (answered first), sent at once or in pieces.
    func testCase5_3to5_8_FragmentedTextWithPingsBetween() throws {
        let ws = try connect()
        let m = request(1, length: 40)
        ws.sendRaw(frame(1, Array(m[..<20]), fin: false) + frame(0, Array(m[20...])))
        answered(ws, 1)
        let m2 = request(2, length: 40)
        let bytes = frame(1, Array(m2[..<20]), fin: false) + frame(9, Array("between".utf8)) + frame(0, Array(m2[20...]))
        for b in bytes { ws.sendRaw([b]) }
        var seen: [WebSocketTerminal.Frame] = []
        XCTAssertNotNil(reply(ws, 2, seen: &seen))
        XCTAssertEqual(seen.first?.opcode, 10)
        XCTAssertEqual(seen.first?.text, "between")
    }

    /// 5.9–5.14: a continuation frame with nothing to continue fails the connection.
    func testCase5_9to5_14_AContinuationWithNothingToContinueFails() throws {
        for fin in [true, false] {
            let ws = try connect()
            ws.sendRaw(frame(0, Array("orphan".utf8), fin: fin) + frame(1, request(1, length: 30)))
            closes(ws, [1002])
        }
    }

    /// 5.15–5.20: a new text frame inside a fragmented message fails; many fragments with pings among them are reassembled.
    func testCase5_15to5_20_NestedMessagesFailAndManyFragmentsReassemble() throws {
        let ws = try connect()
        ws.sendRaw(frame(1, Array("{\"id\":1,".utf8), fin: false) + frame(1, Array("{}".utf8)))
        closes(ws, [1002])
        let ok = try connect()
        let m = request(3, length: 60)
        var bytes: [UInt8] = []
        for (i, start) in stride(from: 0, to: m.count, by: 6).enumerated() {
            bytes += frame(i == 0 ? 1 : 0, Array(m[start..<min(m.count, start + 6)]), fin: start + 6 >= m.count)
            if i % 3 == 1 { bytes += frame(9, [UInt8(i)]) }
        }
        ok.sendRaw(bytes)
        var seen: [WebSocketTerminal.Frame] = []
        XCTAssertNotNil(reply(ok, 3, seen: &seen))
        XCTAssertEqual(seen.filter { $0.opcode == 10 }.count, 3)
    }

    // MARK: 6 UTF-8

    /// 6.1–6.2, 6.5–6.7: valid UTF-8 — empty, in several scripts, split between fragments anywhere (even inside a character) — is taken.
    func testCase6_ValidUTF8IsTakenWhereverItIsSplit() throws {
        let ws = try connect()
        let text = Array("{\"id\":1,\"type\":\"ping\",\"x\":\"κόσμε 中文 😀 Hello-µ@ßöäüàá\"}".utf8)
        for split in [1, 30, 33, 34, 45, 46, 47] {  // inside multi-byte characters too
            ws.sendRaw(frame(1, Array(text[..<split]), fin: false) + frame(0, Array(text[split...])))
            answered(ws, 1)
        }
    }

    /// 6.3, 6.4, 6.6–6.21: invalid UTF-8 — in one frame, across fragments, a lone continuation byte,
    /// an overlong form, a surrogate, a code point past U+10FFFF, a truncated sequence — closes with 1007.
    func testCase6_InvalidUTF8Closes1007() throws {
        let bad: [[UInt8]] = [[0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xED, 0xA0, 0x80],  // 6.3.1: a surrogate
                              [0x80], [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80], [0xE0, 0x80], [0xFE], [0xFF]]
        for b in bad {
            let ws = try connect()
            ws.sendFrame(opcode: 1, Array("{\"id\":1,\"x\":\"".utf8) + b + Array("\"}".utf8))
            closes(ws, [1007])
        }
        let split = try connect()  // 6.4: invalid in the second fragment
        split.sendRaw(frame(1, Array("{\"x\":\"κόσμε".utf8), fin: false) + frame(0, [0xF4, 0x90, 0x80, 0x80] + Array("\"}".utf8)))
        closes(split, [1007])
    }

    // MARK: 7 Closing

    /// 7.1.1–7.1.6: a close after a message is echoed; what comes after the close (a ping, a message) is not answered.
    func testCase7_1_ACloseIsEchoedAndNothingAfterItIsAnswered() throws {
        let ws = try connect()
        ws.sendRaw(frame(1, request(1, length: 30)) + frame(8, [0x03, 0xE8]) + frame(9, Array("late".utf8)) + frame(1, request(2, length: 30)))
        var frames: [WebSocketTerminal.Frame] = []
        while let f = ws.nextFrame() { frames.append(f) }
        XCTAssertEqual(frames.last?.closeCode, 1000)
        XCTAssertFalse(frames.contains { $0.opcode == 10 }, "a ping after the close was answered")
        XCTAssertFalse(frames.contains { $0.opcode == 1 && $0.text.contains("\"re\":2") }, "a message after the close was answered")
    }

    /// 7.3.1–7.3.6: close payloads — empty (echoed), one byte (protocol error), a code, a code and reason, a reason of 123 bytes, one of 124 (too long).
    func testCase7_3_ClosePayloads() throws {
        var ws = try connect()
        ws.sendFrame(opcode: 8, [])
        closes(ws, [1000, 1005])
        ws = try connect()
        ws.sendFrame(opcode: 8, [0x03])
        closes(ws, [1002])
        for reason in ["", "Hello World!", String(repeating: "*", count: 123)] {
            ws = try connect()
            ws.sendFrame(opcode: 8, [0x03, 0xE8] + Array(reason.utf8))
            closes(ws, [1000])
        }
        ws = try connect()
        ws.sendFrame(opcode: 8, [0x03, 0xE8] + Array(String(repeating: "*", count: 124).utf8))
        closes(ws, [1002])
    }

    /// 7.5.1: a close reason that is not UTF-8.
    func testCase7_5_ACloseReasonThatIsNotUTF8() throws {
        let ws = try connect()
        ws.sendFrame(opcode: 8, [0x03, 0xE8, 0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5, 0xED, 0xA0, 0x80, 0x65, 0x64, 0x69, 0x74, 0x65, 0x64])
        closes(ws, [1002, 1007])
    }

    /// 7.7.1–7.7.13: valid close codes are echoed; 7.9.1–7.9.9: invalid ones (0, 999, 1004–1006, 1016, 1100, 2000, 2999) are a protocol error.
    func testCase7_7_7_9_CloseCodes() throws {
        for code in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999] {
            let ws = try connect()
            ws.sendFrame(opcode: 8, [UInt8(code >> 8), UInt8(code & 0xFF)])
            closes(ws, [code, 1000])
        }
        for code in [0, 999, 1004, 1005, 1006, 1016, 1100, 2000, 2999] {
            let ws = try connect()
            ws.sendFrame(opcode: 8, [UInt8(code >> 8), UInt8(code & 0xFF)])
            closes(ws, [1002])
        }
    }
}
