import RewindCore
import XCTest

/// Bad input gets a clear error, costs nothing, and never touches what is committed.
final class BadInputTests: XCTestCase {
    func testEachKindOfBadInputGetsItsErrorAndChangesNothing() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let t = try Terminal(port: server.port)
        let other = try Terminal(port: server.port)
        try t.hello("alice", db)
        try other.hello("bob", db)
        try t.request("create_doc", [("doc", "d")])
        try t.share("d", "bob")
        try t.submit("d", tx: "seed", base: 0, [["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "text": "abc"],
                                                ["op": "create", "node": "box", "parent": "root", "index": 1, "kind": "view"],
                                                ["op": "create", "node": "inner", "parent": "box", "index": 0, "kind": "view"]])
        let before = try t.request("open", [("doc", "d")])["state"]

        func expect(_ raw: String, _ code: String, re: Int64? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
            t.sendRaw(Array(raw.utf8) + [0x0A])
            let m = try t.nextReply()
            XCTAssertEqual(m["ok"], false, raw, file: file, line: line)
            XCTAssertEqual(m.errorCode, code, raw, file: file, line: line)
            XCTAssertFalse(m["error"]?.objectValue?["message"]?.stringValue?.isEmpty ?? true, file: file, line: line)
            if let re { XCTAssertEqual(m["re"], .int(re), raw, file: file, line: line) }
        }
        try expect("{not json", "bad_frame")
        try expect(#"{"id": 5, "type": "open", broken"#, "bad_frame", re: 5)
        try expect("[1, 2]", "bad_frame")
        t.sendRaw([0x7B, 0x22, 0xC3, 0x28, 0x22, 0x7D, 0x0A])  // invalid UTF-8
        XCTAssertEqual(try t.nextReply().errorCode, "bad_frame")
        try expect(#"{"id": 6, "type": "teleport"}"#, "bad_request", re: 6)
        try expect(#"{"id": 7}"#, "bad_request", re: 7)
        try expect(#"{"id": 8, "type": "submit", "doc": "d", "tx": "b", "base": "zero", "ops": []}"#, "bad_request", re: 8)
        try expect(#"{"id": 9, "type": "submit", "doc": "d", "tx": "b", "base": 1}"#, "bad_request", re: 9)
        try expect(#"{"id": 10, "type": "submit", "doc": "d", "tx": "b", "base": 1, "ops": [{"op": "set", "node": "ghost", "key": "k", "value": 1}]}"#, "not_found", re: 10)
        try expect(#"{"id": 11, "type": "submit", "doc": "d", "tx": "c", "base": 1, "ops": [{"op": "move", "node": "box", "parent": "inner", "index": 0}]}"#, "bad_request", re: 11)
        try expect(#"{"id": 12, "type": "submit", "doc": "d", "tx": "e", "base": 1, "ops": [{"op": "insert", "node": "t", "pos": 99, "text": "x"}]}"#, "bad_request", re: 12)
        try expect(#"{"id": 13, "type": "submit", "doc": "d", "tx": "f", "base": 7, "ops": [{"op": "delete", "node": "t"}]}"#, "version", re: 13)
        try expect(#"{"id": 14, "type": "submit", "doc": "nope", "tx": "g", "base": 0, "ops": []}"#, "not_found", re: 14)
        try expect(#"{"id": 15, "type": "submit", "doc": "d", "tx": "h", "base": 1, "ops": [{"op": "set", "node": "t", "key": "k", "value": "a\u0000b"}]}"#, "bad_request", re: 15)
        try expect(#"{"id": 16, "type": "open", "doc": "d", "doc": "e"}"#, "bad_request", re: 16)
        try expect(#"{"id": 17, "type": "submit", "doc": "d", "tx": "i", "base": 1, "ops": [{"op": "insert", "node": "t", "pos": 0, "text": "ok"}, {"op": "delete", "node": "root"}]}"#, "bad_request", re: 17)
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        try expect(#"{"id": 18, "type": "submit", "doc": "d", "tx": "j", "base": 1, "ops": [{"op": "set", "node": "t", "key": "k", "value": \#(deep)}]}"#, "too_large")

        // A line over 1 MiB is answered too_large and skipped to its newline; the next line works.
        t.sendRaw(Array(#"{"id": 19, "type": "ping", "pad": ""#.utf8) + [UInt8](repeating: 0x61, count: 1_100_000) + Array("\"}\n".utf8))
        XCTAssertEqual(try t.nextReply().errorCode, "too_large")
        XCTAssertEqual(try t.request("ping")["ok"], true)

        // Nothing changed, and everyone else is still served.
        XCTAssertEqual(try t.request("open", [("doc", "d")])["state"], before)
        XCTAssertEqual(try db.eventCount("d"), 1)
        XCTAssertEqual(try other.request("ping")["ok"], true)
    }

    func testAConnectionThatKeepsSendingGarbageIsDisconnected() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let t = try Terminal(port: server.port)
        for _ in 0..<16 { t.sendRaw(Array("garbage\n".utf8)) }
        var bye: JSONObject?
        while let line = t.readLine() {
            let m = try JSONParser.parse(line).objectValue!
            if m["push"] == "bye" { bye = m }
        }
        XCTAssertEqual(bye?["reason"], "bad_frames")
        XCTAssertEqual(bye?["retry"], false)
    }
}
