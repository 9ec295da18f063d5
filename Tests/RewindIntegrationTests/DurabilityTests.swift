import Glibc
import RewindCore
import RewindStore
import XCTest

/// What is acknowledged stays; what the log is, the database defends.
final class DurabilityTests: XCTestCase {
    func testAcknowledgedSubmitsSurviveKillDashNine() throws {
        let db = try TestDatabase()
        var server = try ServerProcess(database: db)
        var t = try Terminal(port: server.port)
        try t.hello("alice", db)
        try t.request("create_doc", [("doc", "d")])
        try t.submit("d", tx: "c", base: 0, [["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text"]])
        var acked = ""
        for i in 0..<30 {
            let s = String(i % 10)
            try t.submit("d", tx: "i\(i)", base: Int64(i + 1), [["op": "insert", "node": "t", "pos": .int(Int64(acked.count)), "text": .string(s)]])
            acked += s
        }
        server.kill9()
        server = try ServerProcess(database: db)
        t = try Terminal(port: server.port)
        try t.hello("alice", db)
        let r = try t.request("open", [("doc", "d")])
        XCTAssertEqual(r["version"], 31)
        XCTAssertEqual(r["state"]?.objectValue?["nodes"]?.objectValue?["t"]?.objectValue?["text"]?.stringValue, acked)
        // A resubmission after the crash is still recognised.
        XCTAssertEqual(try t.submit("d", tx: "i29", base: 30, [["op": "insert", "node": "t", "pos": 29, "text": "9"]]), 31)
    }

    func testTheEventLogRefusesUpdateDeleteAndTruncate() throws {
        let f = try Fixture()
        let (db, t) = (f.db, f.alice)
        try t.submit("d", tx: "x", base: 0, [["op": "set", "node": "root", "key": "k", "value": 1]])
        for sql in ["UPDATE events SET action = 'forged'", "DELETE FROM events", "TRUNCATE events"] {
            XCTAssertThrowsError(try db.db.query(sql), sql) { e in
                XCTAssertTrue((e as! RewindError).message.contains("append-only"), "\(e)")
            }
        }
        XCTAssertEqual(try db.eventCount("d"), 1)
    }

    func testTheLogRefusesGapsAndRepeatedVersions() throws {
        let f = try Fixture()
        let (db, t) = (f.db, f.alice)
        try t.submit("d", tx: "x", base: 0, [["op": "set", "node": "root", "key": "k", "value": 1]])
        let user = try db.db.query("SELECT id FROM users WHERE name = 'alice'")[0, 0]!
        let insert = """
            INSERT INTO events (doc, version, event_id, tx, tx_digest, user_id, client, grp, kind, base, ops, inverse, time, hash)
            VALUES ('d', $1, gen_random_uuid(), $2, '', $3, 'c', 'g', 'edit', 0, '[]', '[]', now(), '\\x00')
            """
        XCTAssertThrowsError(try db.db.query(insert, ["3", "gap", user]))  // would skip version 2
        XCTAssertThrowsError(try db.db.query(insert, ["1", "dup", user]))  // version 1 exists
        // A stale writer (another server) is told "clash", never allowed to fork the log.
        let clash = try db.db.query("""
            SELECT status, version FROM rewind_append('d', 2, gen_random_uuid(), 'stale', '', $1, 'c', 'g', 'edit', NULL, 0,
                                                      '[]', '[]', NULL, 0, gen_random_uuid(), NULL, 0)
            """, [user])
        XCTAssertEqual(clash[0, 0], "clash")
        XCTAssertEqual(try db.eventCount("d"), 1)
    }

    func testTheHashChainLinksEachEventToThePreviousOne() throws {
        let f = try Fixture()
        let (db, t) = (f.db, f.alice)
        for i in 0..<3 { try t.submit("d", tx: "x\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]]) }
        let mismatches = try db.db.query("""
            SELECT e.version FROM events e LEFT JOIN events p ON p.doc = e.doc AND p.version = e.version - 1
            WHERE e.doc = 'd' AND e.hash <> rewind_event_hash(p.hash, e.doc, e.version, e.event_id, e.tx, e.user_id, e.client,
                e.grp, e.kind, e.action, e.base, e.ops, e.inverse, e.refers, (extract(epoch FROM e.time) * 1000)::bigint)
            """)
        XCTAssertEqual(mismatches.count, 0)
        XCTAssertEqual(try db.db.query("SELECT count(DISTINCT hash) FROM events WHERE doc = 'd'").int(0, 0), 3)
    }

    func testShutdownAnswersCommitsAndSaysByeWithRetry() throws {
        let f = try Fixture()
        let (server, t) = (f.server, f.alice)
        try t.submit("d", tx: "x", base: 0, [["op": "set", "node": "root", "key": "k", "value": 1]])
        XCTAssertEqual(server.terminate(), 0)
        let bye = try t.push("bye")
        XCTAssertEqual(bye["reason"], "shutdown")
        XCTAssertEqual(bye["retry"], true)
        XCTAssertNil(t.readLine(), "connection should be closed after bye")
    }
}
