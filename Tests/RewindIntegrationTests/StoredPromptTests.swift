import Foundation
import RewindCore
import RewindStore
import XCTest

/// Undo prompts kept in PostgreSQL (issue 49): they outlive the instance that
/// showed them, follow their terminal to any instance, and are answered once.
final class StoredPromptTests: XCTestCase {
    let seed: [JSON] = [["op": "create", "node": "box", "parent": "root", "index": 0, "kind": "view", "frame": [0, 50, 10, 10], "focusable": true]]

    func move(_ t: Terminal, base: Int64, x: Int64) throws {
        let r = try t.request("submit", [("doc", "d"), ("tx", .string("m\(base)")), ("base", .int(base)), ("action", "Move"),
                                         ("ops", [["op": "set", "node": "box", "key": "frame", "value": [.int(x), 50, 10, 10]]])])
        XCTAssertEqual(r["ok"], true, JSONWriter.string(.object(r)))
    }

    /// alice's terminal "T" on `server`, with `d` open (in `locale`).
    func terminal(_ server: ServerProcess, _ db: TestDatabase, locale: String = "en") throws -> Terminal {
        let t = try Terminal(port: server.port)
        let hello = try t.request("hello", [("user", "alice"), ("token", .string(db.tokens["alice"]!)), ("client", "T"), ("locale", .string(locale))])
        XCTAssertEqual(hello["ok"], true)
        XCTAssertEqual(try t.request("open", [("doc", "d")])["ok"], true)
        return t
    }

    func shake(_ t: Terminal) throws -> String {
        try XCTUnwrap(try t.request("motion", [("doc", "d"), ("motion", "shake")])["prompt"]?.stringValue)
    }

    func undoEvents(_ db: TestDatabase) throws -> Int64 {
        try db.db.query("SELECT count(*) FROM events WHERE doc = 'd' AND kind = 'undo'").int(0, 0) ?? -1
    }

    func makeDocument(_ db: TestDatabase, on server: ServerProcess) throws {
        let t = try Terminal(port: server.port)
        try t.hello("alice", db, client: "setup")
        XCTAssertEqual(try t.request("create_doc", [("doc", "d")])["ok"], true)
        try t.submit("d", tx: "seed", base: 0, seed)
    }

    func testAPromptMadeOnOneInstanceIsAnsweredFromTheTerminalOnAnother() throws {
        let db = try TestDatabase(users: ["alice"])
        let a = try ServerProcess(database: db), b = try ServerProcess(database: db)
        try makeDocument(db, on: a)
        let onA = try terminal(a, db)
        try move(onA, base: 1, x: 40)
        let id = try shake(onA)
        XCTAssertEqual(id, "d:p1")

        // The terminal moves to instance B (A closes its old connection: taken over), in Japanese now.
        let onB = try terminal(b, db, locale: "ja")
        let shown = try onB.push("prompt")
        XCTAssertEqual(shown["prompt"]?.objectValue?["id"], .string(id))
        XCTAssertEqual(shown["prompt"]?.objectValue?["title"], "移動を取り消す", "rebuilt in the locale of the terminal that shows it")
        let undone = try onB.request("respond", [("prompt", .string(id)), ("action", "undo")])
        XCTAssertEqual(undone["ok"], true, JSONWriter.string(.object(undone)))
        XCTAssertEqual(undone["action"], "Move")
        XCTAssertEqual(try undoEvents(db), 1)
        let row = try db.db.query("SELECT answered, answered_at IS NOT NULL FROM prompts WHERE id = $1", [id])
        XCTAssertEqual(row[0, 0], "undo")
        XCTAssertEqual(row[0, 1], "t")
        // Instance A made the next one: ids are never given twice in a document, whichever instance asks.
        let again = try terminal(a, db)
        try move(again, base: 3, x: 70)
        XCTAssertEqual(try shake(again), "d:p2")
    }

    func testAPromptOutlivesItsServerKilledAndIsAnsweredOnceAfterTheRestart() throws {
        let db = try TestDatabase(users: ["alice"])
        var server: ServerProcess? = try ServerProcess(database: db)
        try makeDocument(db, on: server!)
        let t = try terminal(server!, db)
        try move(t, base: 1, x: 40)
        let id = try shake(t)
        server!.kill9()
        server = try ServerProcess(database: db)
        let back = try terminal(server!, db)
        let shown = try back.push("prompt")
        XCTAssertEqual(shown["prompt"]?.objectValue?["id"], .string(id), "shown again after kill -9 and a restart")
        XCTAssertEqual(try back.request("respond", [("prompt", .string(id)), ("action", "undo")])["ok"], true)
        XCTAssertEqual(try back.request("respond", [("prompt", .string(id)), ("action", "undo")]).errorCode, "not_found")
        XCTAssertEqual(try undoEvents(db), 1, "undone once")
        // Reconnecting again shows nothing: it was answered.
        let later = try terminal(server!, db)
        usleep(300_000)
        XCTAssertFalse(try later.drainPushes().contains { $0["push"] == "prompt" })
    }

    /// What the prompt offered is gone (the group undone meanwhile): it is not shown again, and it is cancelled.
    func testAPromptWhoseCauseIsGoneIsCancelledNotShownAgain() throws {
        let db = try TestDatabase(users: ["alice"])
        let server = try ServerProcess(database: db)
        try makeDocument(db, on: server)
        let t = try terminal(server, db)
        try move(t, base: 1, x: 40)
        let id = try shake(t)
        t.disconnect()
        let other = try Terminal(port: server.port)
        try other.hello("alice", db, client: "U")
        XCTAssertEqual(try other.request("open", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try other.request("undo", [("doc", "d")])["ok"], true, "the group is undone from another terminal")
        let back = try terminal(server, db)
        usleep(300_000)
        XCTAssertFalse(try back.drainPushes().contains { $0["push"] == "prompt" })
        XCTAssertEqual(try db.db.query("SELECT answered FROM prompts WHERE id = $1", [id])[0, 0], "cancel")
        XCTAssertEqual(try undoEvents(db), 1)
    }

    /// Two answers at once, from two instances: PostgreSQL takes the first, the
    /// other is told `not_found` and the prompt is taken away from its terminal.
    /// (The other instance's answer is made here as it makes it: the same UPDATE.)
    func testTwoAnswersAtOnceOneWins() throws {
        let db = try TestDatabase(users: ["alice"])
        let server = try ServerProcess(database: db)
        try makeDocument(db, on: server)
        let t = try terminal(server, db)
        let other = try Database(db.conninfo)
        var wins = (here: 0, there: 0)
        for round in 0..<12 {
            try move(t, base: try XCTUnwrap(try db.db.query("SELECT max(version) FROM events WHERE doc = 'd'").int(0, 0)), x: 40 + Int64(round))
            let id = try shake(t)
            let before = try undoEvents(db)
            // Sent together: the respond on the wire, the other instance's claim through its own connection.
            t.sendRaw(Message.line(["id": .int(9_000 + Int64(round)), "type": "respond", "prompt": .string(id), "action": "undo"]))
            let there = try other.query("""
                WITH taken AS (UPDATE prompts SET answered_at = now(), answered = 'undo', answered_by = 1
                               WHERE id = $1 AND answered_at IS NULL RETURNING id)
                SELECT pg_notify('rewind_prompts', id) FROM taken
                """, [id]).count == 1
            var reply: JSONObject?
            while reply == nil {
                let m = try t.next()
                if m["re"] != nil { reply = m }
            }
            let here = reply?["ok"] == true
            XCTAssertNotEqual(here, there, "round \(round): exactly one answer counts: \(JSONWriter.string(.object(reply!)))")
            if !here { XCTAssertEqual(reply?.errorCode, "not_found") }
            XCTAssertEqual(try undoEvents(db), before + (here ? 1 : 0), "round \(round): undone only by the answer that won here")
            if here { wins.here += 1 } else { wins.there += 1 }
            _ = try t.drainPushes()
        }
        print("two answers at once, 12 rounds: this instance won \(wins.here), the other \(wins.there)")
    }
}
