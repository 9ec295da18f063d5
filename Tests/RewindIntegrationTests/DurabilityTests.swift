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
        for sql in ["UPDATE log SET action = 'forged'", "DELETE FROM log", "TRUNCATE log", "UPDATE events SET action = 'forged'"] {
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
        // Claims the head (seq, version) and inserts in one statement, as a writer does.
        func append(seq: Int, version: Int, tx: String, claim: Int) throws {
            try db.db.query("""
                WITH c AS (UPDATE documents SET seq = $4, head = $5 WHERE id = 'd' RETURNING 1)
                INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, tx, tx_digest, base, ops, inverse, time, hash)
                SELECT 'd', $1, $2, 'event', gen_random_uuid(), $3, 'c', 'edit', 'g', $6, '', 0, '[]', '[]', now(), sha256('x') FROM c
                """, [String(seq), String(version), user, String(claim), String(version), tx])
        }
        XCTAssertThrowsError(try append(seq: 3, version: 2, tx: "gap", claim: 3))      // would skip entry 2
        XCTAssertThrowsError(try append(seq: 2, version: 3, tx: "miscount", claim: 2))  // versions count events
        XCTAssertThrowsError(try append(seq: 1, version: 1, tx: "dup", claim: 1))      // entry 1 exists
        XCTAssertThrowsError(try append(seq: 2, version: 2, tx: "x", claim: 2))        // the same transaction twice
        // An entry past a head nobody claimed (documents still says 1) is refused too.
        XCTAssertThrowsError(try db.db.query("""
            INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, tx, tx_digest, base, ops, inverse, time, hash)
            VALUES ('d', 2, 2, 'event', gen_random_uuid(), $1, 'c', 'edit', 'g', 'unclaimed', '', 0, '[]', '[]', now(), sha256('x'))
            """, [user]))
        XCTAssertEqual(try db.eventCount("d"), 1)
        // The server's next append still goes through: nothing above changed the head.
        XCTAssertEqual(try t.submit("d", tx: "y", base: 1, [["op": "set", "node": "root", "key": "k", "value": 2]]), 2)
    }

    /// What each entry must hold (its kind's columns, a 32-byte hash, …) is
    /// checked by the log's trigger for every INSERT, a superuser's included
    /// (schema/029: they were CHECK constraints, prepared again by
    /// PostgreSQL for every statement): each malformed entry is refused with
    /// a check violation naming it, in the right place in the log and with
    /// its head claimed, so that only its form is wrong; a well-formed one,
    /// mark or event, goes in.
    func testTheLogRefusesMalformedEntries() throws {
        let f = try Fixture()
        let (db, t) = (f.db, f.alice)
        try t.submit("d", tx: "x", base: 0, [["op": "set", "node": "root", "key": "k", "value": 1]])
        let user = try XCTUnwrap(db.db.query("SELECT id FROM users WHERE name = 'alice'")[0, 0])
        let event: [String: String] = ["entry": "'event'", "kind": "'edit'", "grp": "'g'", "tx": "'t'", "tx_digest": "''", "base": "1",
                                       "ops": "'[]'", "inverse": "'[]'", "hash": "sha256('x')"]
        let mark: [String: String] = ["entry": "'mark'", "kind": "'close'", "grp": "'g'", "tx": "NULL", "tx_digest": "NULL", "base": "NULL",
                                      "ops": "NULL", "inverse": "NULL", "hash": "sha256('x')"]
        // Entry 2 of `d` (version 2 for an event, 1 for a mark), its head claimed in the same statement.
        func append(_ columns: [String: String], rollBack: Bool = true) throws {
            let version = columns["entry"] == "'mark'" ? 1 : 2
            try db.db.query("BEGIN")
            defer { _ = try? db.db.query(rollBack ? "ROLLBACK" : "COMMIT") }
            try db.db.query("""
                WITH c AS (UPDATE documents SET seq = 2, head = \(version), head_hash = \(columns["hash"]!) WHERE id = 'd' RETURNING 1)
                INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, tx, tx_digest, base, ops, inverse, time, hash)
                SELECT 'd', 2, \(version), \(columns["entry"]!), gen_random_uuid(), \(user), 'c', \(columns["kind"]!), \(columns["grp"]!),
                       \(columns["tx"]!), \(columns["tx_digest"]!), \(columns["base"]!), \(columns["ops"]!), \(columns["inverse"]!), now(),
                       \(columns["hash"]!) FROM c
                """)
        }
        let malformed: [(String, [String: String])] = [
            ("an entry neither event nor mark", event.merging(["entry": "'note'"]) { $1 }),
            ("a hash of 31 bytes", event.merging(["hash": "substring(sha256('x') FROM 2)"]) { $1 }),
            ("an event of a mark's kind", event.merging(["kind": "'close'"]) { $1 }),
            ("an event with no group", event.merging(["grp": "NULL"]) { $1 }),
            ("an event with an empty tx", event.merging(["tx": "''"]) { $1 }),
            ("an event whose base is its own version", event.merging(["base": "2"]) { $1 }),
            ("an event with no ops", event.merging(["ops": "NULL"]) { $1 }),
            ("an event with no inverse", event.merging(["inverse": "NULL"]) { $1 }),
            ("a mark of an event's kind", mark.merging(["kind": "'edit'"]) { $1 }),
            ("a mark with ops", mark.merging(["ops": "'[]'"]) { $1 }),
            ("a mark with a base", mark.merging(["base": "0"]) { $1 }),
        ]
        for (what, columns) in malformed {
            XCTAssertThrowsError(try append(columns), what) { e in
                XCTAssertEqual(Database.failure(of: e)?.sqlstate, "23514", "\(what): \(e)")
                XCTAssertTrue("\(e)".contains("entry 2 of d is not a well-formed log entry"), "\(what): \(e)")
            }
        }
        XCTAssertEqual(try db.db.query("SELECT count(*) FROM log WHERE doc = 'd'").int(0, 0), 1, "nothing malformed went in")
        XCTAssertNoThrow(try append(mark), "a well-formed mark")
        XCTAssertNoThrow(try append(event, rollBack: false), "a well-formed event")
        XCTAssertEqual(try db.eventCount("d"), 2)
    }

    /// The server computes the chain in Swift; PostgreSQL's `rewind_entry_hash`
    /// (the encoding as SQL) computes the same for every entry, marks included.
    func testTheHashChainLinksEachEntryToThePreviousOneAsSQLComputesIt() throws {
        let f = try Fixture()
        let (db, t) = (f.db, f.alice)
        try t.request("open", [("doc", "d")])
        for i in 0..<3 { try t.submit("d", tx: "x\(i)", base: Int64(i), [["op": "set", "node": "root", "key": .string("k\n\(i)"), "value": .int(Int64(i))]]) }
        XCTAssertEqual(try t.request("begin_group", [("doc", "d"), ("action", "A\nB")])["ok"], true)
        try t.submit("d", tx: "g", base: 3, [["op": "set", "node": "root", "key": "k", "value": "é"]])
        XCTAssertEqual(try t.request("end_group", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try t.request("undo", [("doc", "d")])["ok"], true)
        let rows = try db.db.query("SELECT count(*), count(*) FILTER (WHERE entry = 'mark') FROM log WHERE doc = 'd'")
        XCTAssertEqual(rows.int(0, 0), 6)
        XCTAssertEqual(rows.int(0, 1), 1, "the group's close is an entry of the same stream")
        let mismatches = try db.db.query("""
            SELECT l.seq FROM log l LEFT JOIN log p ON p.doc = l.doc AND p.seq = l.seq - 1
            WHERE l.doc = 'd' AND l.hash <> rewind_entry_hash(p.hash, l.doc, l.seq, l.version, l.entry, l.id, l.user_id, l.client,
                l.kind, l.grp, l.action, l.tx, l.tx_digest, l.base, l.ops, l.inverse, l.refers, l.meta,
                (extract(epoch FROM l.time) * 1000)::bigint)
            """)
        XCTAssertEqual(mismatches.count, 0, "entries whose hash SQL computes otherwise: \(mismatches.values)")
        XCTAssertEqual(try db.db.query("SELECT count(DISTINCT hash) FROM log WHERE doc = 'd'").int(0, 0), 6)
        XCTAssertEqual(try db.db.query("SELECT head_hash = (SELECT hash FROM log WHERE doc = 'd' ORDER BY seq DESC LIMIT 1) FROM documents WHERE id = 'd'")[0, 0], "t")
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
