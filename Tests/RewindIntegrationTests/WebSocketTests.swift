import Foundation
import Glibc
import RewindCore
import XCTest

/// PROTOCOL.md "WebSocket and the web", rule by rule, against the real
/// server over raw sockets.
final class WebSocketTests: XCTestCase {
    func server(_ args: [String] = []) throws -> (TestDatabase, ServerProcess) {
        let db = try TestDatabase()
        return (db, try ServerProcess(database: db, arguments: args))
    }

    // MARK: The upgrade

    func testTheUpgradeAnswers101WithTheAcceptKeyOfRFC6455() throws {
        let (db, s) = try server()
        let ws = try WebSocketTerminal(port: s.port)  // the RFC's sample key
        XCTAssertEqual(ws.status, 101, ws.responseHead)
        XCTAssertEqual(ws.header("Sec-WebSocket-Accept"), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        XCTAssertEqual(ws.header("Upgrade")?.lowercased(), "websocket")
        XCTAssertEqual(try ws.hello("alice", db)["user"], "alice")
        XCTAssertTrue(try ws.request("ping").isOK)
    }

    /// The first bytes decide what a connection speaks; when a read brings
    /// too few to tell, or half a request head, they are held until the rest comes.
    func testAnUpgradeArrivingInPiecesIsReadWhole() throws {
        let (db, s) = try server()
        let ws = try WebSocketTerminal(port: s.port, piecesAt: [1, 2, 9, 40, 120])  // "G", "E", "T /ws HT", …
        XCTAssertEqual(ws.status, 101, ws.responseHead)
        XCTAssertEqual(try ws.hello("alice", db)["user"], "alice")
        let page = try WebSocketTerminal(port: s.port, rawRequest: "GET / HTTP/1.1\r\nHost: x\r\n\r\n", piecesAt: [2, 20])
        XCTAssertEqual(page.status, 200, page.responseHead)
        XCTAssertTrue(page.body().contains("/rewind.js"))
    }

    func testRefusedUpgradesAnswerTheirStatus() throws {
        let (_, s) = try server(["--allowed-origins", "https://app.example.com"])
        let noUpgrade = try WebSocketTerminal(port: s.port, rawRequest: "GET /ws HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(noUpgrade.status, 400)
        XCTAssertEqual(try WebSocketTerminal(port: s.port, key: "short").status, 400, "a key that is not 16 bytes")
        let v8 = try WebSocketTerminal(port: s.port, rawRequest: "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n")
        XCTAssertEqual(v8.status, 426)
        XCTAssertEqual(v8.header("Sec-WebSocket-Version"), "13")
        XCTAssertEqual(try WebSocketTerminal(port: s.port, headers: ["Origin: https://evil.example.com"]).status, 403)
        XCTAssertEqual(try WebSocketTerminal(port: s.port, headers: ["Origin: https://app.example.com"]).status, 101, "listed")
        XCTAssertEqual(try WebSocketTerminal(port: s.port, headers: ["Origin: http://127.0.0.1:\(s.port)"]).status, 101, "the server's own page")
        let huge = try WebSocketTerminal(port: s.port, headers: (0..<100).map { "X-Filler-\($0): " + String(repeating: "a", count: 90) })
        XCTAssertEqual(huge.status, 431)
        XCTAssertEqual(try WebSocketTerminal(port: s.port, path: "/nope").status, 404)
        XCTAssertEqual(try WebSocketTerminal(port: s.port, rawRequest: "POST /ws HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").status, 405)
        let post = try WebSocketTerminal(port: s.port, rawRequest: "DELETE / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(post.status, 405)
        XCTAssertEqual(post.header("Allow"), "GET")
        XCTAssertTrue(post.isClosedByServer(), "the connection closes after the response")
    }

    func testTheWebFilesAreServedAndTheConnectionCloses() throws {
        let (_, s) = try server()
        let page = try WebSocketTerminal(port: s.port, rawRequest: "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertEqual(page.header("Cache-Control"), "no-cache")
        let html = page.body()
        XCTAssertEqual(Int(page.header("Content-Length") ?? ""), html.utf8.count)
        XCTAssertTrue(html.contains("/rewind.js"), html)
        let js = try WebSocketTerminal(port: s.port, rawRequest: "GET /rewind.js HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(js.status, 200)
        XCTAssertEqual(js.header("Content-Type"), "text/javascript; charset=utf-8")
        XCTAssertTrue(js.body().contains("export function connect"))
        // NDJSON on the same port is unchanged.
        let t = try Terminal(port: s.port)
        XCTAssertTrue(try t.request("ping").errorCode == "unauthorized")
    }

    // MARK: Frames

    func testFramesThatBreakTheRulesCloseWithTheirCodes() throws {
        let (_, s) = try server()
        let cases: [(String, (WebSocketTerminal) -> Void, Int)] = [
            ("unmasked", { $0.sendFrame(opcode: 1, Array("{}".utf8), masked: false) }, 1002),
            ("binary", { $0.sendFrame(opcode: 2, [1, 2, 3]) }, 1003),
            ("invalid UTF-8", { $0.sendFrame(opcode: 1, [0x7B, 0xC3, 0x28, 0x7D]) }, 1007),
            ("over 1 MiB", { $0.sendFrame(opcode: 1, Array(repeating: 0x20, count: (1 << 20) + 1)) }, 1009),
        ]
        for (name, send, code) in cases {
            let ws = try WebSocketTerminal(port: s.port)
            send(ws)
            var close: WebSocketTerminal.Frame?
            while let f = ws.nextFrame() { if f.opcode == 8 { close = f; break } }
            XCTAssertEqual(close?.closeCode, code, name)
            XCTAssertTrue(ws.isClosedByServer(), name)
        }
    }

    func testAFragmentedMessageWithAPingBetweenIsReassembledAndThePingAnswered() throws {
        let (db, s) = try server()
        let ws = try WebSocketTerminal(port: s.port)
        let hello = Array(JSONWriter.string(.obj([("id", 1), ("type", "hello"), ("user", "alice"), ("token", .string(db.tokens["alice"]!))])).utf8)
        ws.sendFrame(opcode: 1, Array(hello[..<10]), fin: false)
        ws.sendFrame(opcode: 9, Array("are you there".utf8))
        ws.sendFrame(opcode: 0, Array(hello[10..<20]), fin: false)
        ws.sendFrame(opcode: 0, Array(hello[20...]), fin: true)
        let pong = ws.nextFrame()
        XCTAssertEqual(pong?.opcode, 10)
        XCTAssertEqual(pong?.text, "are you there")
        XCTAssertEqual(try ws.next()["user"], "alice")
    }

    func testTheServerPingsASilentWebSocketAndAPongKeepsItOpen() throws {
        let (db, s) = try server(["--idle-timeout", "3"])
        let ws = try WebSocketTerminal(port: s.port)
        try ws.hello("alice", db)
        let start = Date()
        // Answer each ping; stay past the idle timeout.
        var pings = 0
        while Date().timeIntervalSince(start) < 5 {
            guard let f = ws.nextFrame() else { return XCTFail("closed after \(Date().timeIntervalSince(start)) s") }
            if f.opcode == 9 { pings += 1; ws.sendFrame(opcode: 10, f.payload) }
            if f.opcode == 8 { return XCTFail("closed: \(f.closeCode ?? 0)") }
        }
        XCTAssertGreaterThanOrEqual(pings, 2)
        XCTAssertTrue(try ws.request("ping").isOK, "still open after 5 s with a 3 s idle timeout")
        // Without pongs: bye idle, then close 1000.
        let silent = try WebSocketTerminal(port: s.port)
        try silent.hello("alice", db)
        let bye = try silent.push("bye")
        XCTAssertEqual(bye["reason"], "idle")
        var close: WebSocketTerminal.Frame?
        while let f = silent.nextFrame() { if f.opcode == 8 { close = f; break } }
        XCTAssertEqual(close?.closeCode, 1000)
    }

    func testACloseFromTheClientIsEchoed() throws {
        let (db, s) = try server()
        let ws = try WebSocketTerminal(port: s.port)
        try ws.hello("alice", db)
        ws.sendFrame(opcode: 8, [0x03, 0xE8] + Array("bye".utf8))
        let echo = ws.nextFrame()
        XCTAssertEqual(echo?.opcode, 8)
        XCTAssertEqual(echo?.closeCode, 1000)
        XCTAssertTrue(ws.isClosedByServer())
    }

    func testByeGoesOutAsATextFrameThenTheCloseCodeOfItsReason() throws {
        let (_, s) = try server()
        let ws = try WebSocketTerminal(port: s.port)
        for _ in 0..<16 { ws.sendText("not json") }
        var bye: JSONObject?
        var close: WebSocketTerminal.Frame?
        while let f = ws.nextFrame() {
            if f.opcode == 1, let o = try? JSONParser.parse(f.payload).objectValue, o["push"] == "bye" { bye = o }
            if f.opcode == 8 { close = f; break }
        }
        XCTAssertEqual(bye?["reason"], "bad_frames")
        XCTAssertEqual(close?.closeCode, 1008)
        // shutdown → 1001
        let other = try WebSocketTerminal(port: s.port)
        kill(s.pid, SIGTERM)
        var shutdownClose: WebSocketTerminal.Frame?
        while let f = other.nextFrame() { if f.opcode == 8 { shutdownClose = f; break } }
        XCTAssertEqual(shutdownClose?.closeCode, 1001)
    }

    // MARK: One protocol over both transports

    func testAWebSocketTerminalAndATCPTerminalEditTogether() throws {
        let (db, s) = try server()
        let tcp = try Terminal(port: s.port)
        try tcp.hello("alice", db)
        XCTAssertTrue(try tcp.request("create_doc", [("doc", "d")]).isOK)
        try tcp.share("d", "bob", "editor")
        XCTAssertTrue(try tcp.request("open", [("doc", "d")]).isOK)
        let ws = try WebSocketTerminal(port: s.port)
        try ws.hello("bob", db)
        XCTAssertTrue(try ws.request("open", [("doc", "d")]).isOK)
        let create = JSON.obj([("op", "create"), ("node", "t"), ("parent", "root"), ("kind", "text"), ("frame", [0, 0, 9, 9]),
                              ("focusable", true), ("text", "hi")])
        XCTAssertEqual(try ws.request("submit", [("doc", "d"), ("tx", "w1"), ("base", 0), ("ops", [create])])["version"], 1)
        XCTAssertEqual(try tcp.push("events")["events"]?.arrayValue?.first?.objectValue?["user"], "bob")
        try tcp.submit("d", tx: "t1", base: 1, [.obj([("op", "insert"), ("node", "t"), ("pos", 2), ("text", "!")])])
        _ = try ws.push("events")  // its own, pushed before its reply
        XCTAssertEqual(try ws.push("events")["events"]?.arrayValue?.first?.objectValue?["user"], "alice")
        XCTAssertTrue(try ws.request("focus", [("doc", "d"), ("node", "t")]).isOK)
        XCTAssertEqual(try tcp.push("presence")["user"], "bob")
        // Prompt state over WebSocket: bob's own edit is his to undo.
        var state = try ws.push("prompt_state")
        while state["can_undo"] != true { state = try ws.push("prompt_state") }
        XCTAssertEqual(state["undo_title"], "Undo")
        XCTAssertEqual(try ws.request("undo", [("doc", "d"), ("on_conflict", "force")])["version"], 3)
        // A viewer over WebSocket cannot edit.
        try tcp.share("d", "bob", "viewer")
        XCTAssertEqual(try ws.request("submit", [("doc", "d"), ("tx", "w2"), ("base", 3), ("ops", [.obj([("op", "remove"), ("node", "t"), ("pos", 0), ("len", 1)])])]).errorCode,
                       "forbidden")
    }

    /// A 3 MB state goes out as one message in fragments (text, then
    /// continuations), read as the client reads; the connection goes on after it.
    func testALargeOpenIsOneMessageInFragments() throws {
        let (db, s) = try server()
        let alice = try Terminal(port: s.port, timeout: 60)
        try alice.hello("alice", db)
        try alice.createLargeDocument("d", nodes: 15)
        let ws = try WebSocketTerminal(port: s.port, timeout: 60)
        try ws.hello("alice", db)
        ws.send(["id": 99, "type": "open", "doc": "d"])
        var frames = 0
        var message: [UInt8] = []
        while let f = ws.nextFrame() {
            guard f.opcode == 1 || f.opcode == 0 else { continue }
            frames += 1
            message += f.payload
            if f.fin { break }
        }
        let r = try JSONParser.parse(message).objectValue!
        XCTAssertEqual(r["re"], 99)
        XCTAssertEqual(r["state"]?.objectValue?["nodes"]?.objectValue?.keys.count, 16)
        XCTAssertGreaterThan(message.count, 3_000_000)
        XCTAssertGreaterThan(frames, 1, "streamed in slices, each a fragment")
        XCTAssertTrue(try ws.request("ping").isOK)
    }

    /// A WebSocket client that never reads is stopped at the output bound
    /// exactly like a TCP one: `bye` `slow`, then close 1013; the writer is not held up.
    func testAWebSocketThatNeverReadsIsDisconnectedAsSlow() throws {
        // The bye waits behind what the terminal has not read: the grace before
        // the hard close outlasts the writer's 300 submits, however slow the machine.
        let (db, s) = try server(["--max-output-bytes", "65536", "--close-grace", "120"])
        let writer = try Terminal(port: s.port)
        try writer.hello("alice", db)
        try writer.request("create_doc", [("doc", "d")])
        try writer.share("d", "bob", "viewer")
        let slow = try WebSocketTerminal(port: s.port, receiveBuffer: 4096)
        try slow.hello("bob", db)
        XCTAssertTrue(try slow.request("open", [("doc", "d")]).isOK)
        let big = String(repeating: "x", count: 20_000)
        let start = Date()
        for i in 0..<300 {
            try writer.submit("d", tx: "w\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "blob", "value": .string(big + String(i))]])
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 60, "the writer was held up by the slow WebSocket")
        var bye: JSONObject?
        var close: WebSocketTerminal.Frame?
        var versions: [Int64] = []
        while let f = slow.nextFrame() {
            if f.opcode == 8 { close = f; break }
            guard f.opcode == 1, let m = try JSONParser.parse(f.payload).objectValue else { continue }
            if m["push"] == "bye" { bye = m }
            if m["push"] == "events" { versions += m["events"]!.arrayValue!.map { $0.objectValue!["version"]!.intValue! } }
        }
        XCTAssertEqual(bye?["reason"], "slow")
        XCTAssertEqual(close?.closeCode, 1013)
        XCTAssertLessThan(versions.count, 300)
        XCTAssertEqual(versions, versions.isEmpty ? [] : Array(1...Int64(versions.count)), "pushes before the bye arrive in order without gaps")
    }

    /// A connection silent for a moment gives its frame parser back and makes
    /// a new one with the next frame — but not in the middle of a message in
    /// fragments, nor of a frame cut by the network.
    func testAWebSocketSilentForAMomentStillReadsWhatComesNext() throws {
        let (db, s) = try server()
        let ws = try WebSocketTerminal(port: s.port)
        try ws.hello("alice", db)
        usleep(2_500_000)
        XCTAssertTrue(try ws.request("ping").isOK)
        let m = Array(#"{"id":50,"type":"ping"}"#.utf8)
        ws.sendFrame(opcode: 1, Array(m[..<9]), fin: false)
        usleep(2_500_000)
        let last = WebSocketTerminal.encode(opcode: 0, Array(m[9...]))
        ws.sendRaw(Array(last[..<3]))
        usleep(2_500_000)
        ws.sendRaw(Array(last[3...]))
        XCTAssertEqual(try ws.next()["re"], 50)
    }
}
