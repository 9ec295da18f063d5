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

    /// A conflict's prompt comes back too: named from the document (the store keeps user ids,
    /// not names), its conflicts without their ops (the store keeps no content), and Undo Anyway works.
    func testAConflictPromptIsShownAgainWithoutTheContentAndAnsweredAnyway() throws {
        let db = try TestDatabase(users: ["alice", "bob"])
        let server = try ServerProcess(database: db)
        try makeDocument(db, on: server)
        let owner = try Terminal(port: server.port)
        try owner.hello("alice", db, client: "owner")
        try owner.share("d", "bob")
        let t = try terminal(server, db)
        try move(t, base: 1, x: 40)
        let bob = try Terminal(port: server.port)
        try bob.hello("bob", db)
        XCTAssertEqual(try bob.request("open", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try bob.request("submit", [("doc", "d"), ("tx", "b1"), ("base", 2),
                                                 ("ops", [["op": "set", "node": "box", "key": "frame", "value": [90, 50, 10, 10]]])])["ok"], true)
        let undo = try t.request("undo", [("doc", "d")])
        let id = try XCTUnwrap(undo["prompt"]?.stringValue, JSONWriter.string(.object(undo)))
        let stored = try XCTUnwrap(try db.db.query("SELECT cause::text FROM prompts WHERE id = $1", [id])[0, 0])
        // (bob's value was [90, 50, 10, 10]; ids are random and may hold any digits.)
        XCTAssertFalse(stored.contains("bob") || stored.contains("[90") || stored.contains("\"op\""), "no name, no content kept: \(stored)")
        t.disconnect()
        let back = try terminal(server, db)
        let shown = try XCTUnwrap(try back.push("prompt")["prompt"]?.objectValue)
        XCTAssertEqual(shown["id"], .string(id))
        XCTAssertEqual(shown["title"], "Undo Move changes what bob did since")
        let conflicts = try XCTUnwrap(shown["conflicts"]?.arrayValue)
        XCTAssertEqual(conflicts.first?.objectValue?["user"], "bob")
        XCTAssertEqual(conflicts.first?.objectValue?["node"], "box")
        XCTAssertNil(conflicts.first?.objectValue?["op"], "shown again without the op")
        let anyway = try back.request("respond", [("prompt", .string(id)), ("action", "undo_anyway")])
        XCTAssertEqual(anyway["ok"], true, JSONWriter.string(.object(anyway)))
        XCTAssertEqual(try undoEvents(db), 1)
    }

    /// Past `--prompt-ttl` a prompt can no longer be answered, here or anywhere, and is not shown again.
    func testAnExpiredPromptIsNotAnsweredNorShownAgain() throws {
        let db = try TestDatabase(users: ["alice"])
        let server = try ServerProcess(database: db, arguments: ["--prompt-ttl", "10"])
        try makeDocument(db, on: server)
        let t = try terminal(server, db)
        try move(t, base: 1, x: 40)
        let id = try shake(t)
        Thread.sleep(forTimeInterval: 10.5)
        XCTAssertEqual(try t.request("respond", [("prompt", .string(id)), ("action", "undo")]).errorCode, "not_found")
        XCTAssertEqual(try undoEvents(db), 0, "an expired prompt undoes nothing")
        t.disconnect()
        let back = try terminal(server, db)
        usleep(300_000)
        XCTAssertFalse(try back.drainPushes().contains { $0["push"] == "prompt" })
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

/// The same race between two real instances: terminal T's prompt is answered
/// on instance A just as T reconnects to instance B (which takes T over and
/// shows the prompt again if it is still open). Whatever the timing, the
/// group is undone once. (Before answers were given back, an answer A took
/// just as B took T over was lost: round 0 undid nothing.)
final class StoredPromptHandoverTests: XCTestCase {
    func testAnAnswerOnTheOldInstanceDuringAHandoverIsCarriedOutOnce() throws {
        let db = try TestDatabase(users: ["alice"])
        let a = try ServerProcess(database: db), b = try ServerProcess(database: db)
        let setup = try Terminal(port: a.port)
        try setup.hello("alice", db, client: "setup")
        XCTAssertEqual(try setup.request("create_doc", [("doc", "d")])["ok"], true)
        try setup.submit("d", tx: "seed", base: 0, [["op": "create", "node": "box", "parent": "root", "index": 0, "kind": "view",
                                                     "frame": [0, 50, 10, 10], "focusable": true]])
        var outcomes: [String: Int] = [:]
        for round in 0..<8 {
            let version = try XCTUnwrap(try db.db.query("SELECT max(version) FROM events WHERE doc = 'd'").int(0, 0))
            let undos = try db.db.query("SELECT count(*) FROM events WHERE doc = 'd' AND kind = 'undo'").int(0, 0) ?? -1
            let onA = try Terminal(port: a.port)
            try onA.hello("alice", db, client: "T")
            XCTAssertEqual(try onA.request("open", [("doc", "d")])["ok"], true)
            XCTAssertEqual(try onA.request("submit", [("doc", "d"), ("tx", .string("r\(round)")), ("base", .int(version)), ("action", "Move"),
                                                       ("ops", [["op": "set", "node": "box", "key": "frame", "value": [.int(Int64(round)), 50, 10, 10]]])])["ok"], true)
            let id = try XCTUnwrap(try onA.request("motion", [("doc", "d"), ("motion", "shake")])["prompt"]?.stringValue)
            // Together: the answer on A, and T's hello and open on B.
            let onB = try Terminal(port: b.port, timeout: 1)  // silent for a second: nothing more is coming
            onB.sendRaw(Message.line(["id": 1, "type": "hello", "user": "alice", "token": .string(db.tokens["alice"]!), "client": "T"])
                        + Message.line(["id": 2, "type": "open", "doc": "d"]))
            usleep(UInt32(round) * 4_000)  // 0 to 28 ms later: sometimes A answers first, sometimes B has taken T over
            onA.sendRaw(Message.line(["id": 500, "type": "respond", "prompt": .string(id), "action": "undo"]))
            // B answers too if it is shown the prompt (it is, unless A's answer was taken first).
            var answeredOnB: JSONObject?
            let deadline = Date().addingTimeInterval(2)
            while Date() < deadline, answeredOnB == nil, let m = try? onB.next() {
                if m["push"] == "prompt", m["prompt"]?.objectValue?["id"] == .string(id) {
                    answeredOnB = try onB.request("respond", [("prompt", .string(id)), ("action", "undo")])
                }
            }
            usleep(200_000)
            let after = try db.db.query("SELECT count(*) FROM events WHERE doc = 'd' AND kind = 'undo'").int(0, 0) ?? -1
            XCTAssertEqual(after, undos + 1, "round \(round): undone exactly once (B answered: \(answeredOnB.map { JSONWriter.string(.object($0)) } ?? "not shown"))")
            let row = try db.db.query("SELECT answered, answered_by FROM prompts WHERE id = $1", [id])
            XCTAssertEqual(row[0, 0], "undo")
            let winner = answeredOnB?["ok"] == true ? "B" : "A"
            outcomes[winner, default: 0] += 1
        }
        print("handover races, 8 rounds: answered on \(outcomes)")
    }
}
