import Foundation
import RewindCore
import RewindStore
import XCTest

/// The database goes away, or another server writes first: nothing acknowledged is lost.
final class RecoveryTests: XCTestCase {
    func testTheServerReconnectsByItselfAfterLosingItsDatabaseConnection() throws {
        let f = try Fixture()
        let (db, server, t) = (f.db, f.server, f.alice)
        try t.submit("d", tx: "before", base: 0, [["op": "set", "node": "root", "key": "k", "value": 1]])
        // Cut the server's database connection from the database side.
        let killed = try db.db.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [db.name])
        XCTAssertGreaterThan(killed.count, 0)
        // Requests fail fast with `unavailable` or succeed once reconnected; never hang, never lose.
        var version: Int64?
        let deadline = Date().addingTimeInterval(15)
        var attempts = 0
        while version == nil && Date() < deadline {
            attempts += 1
            let r = try t.request("submit", [("doc", "d"), ("tx", "after"), ("base", 1), ("ops", [["op": "set", "node": "root", "key": "k", "value": 2]])])
            if r["ok"] == true { version = r["version"]?.intValue } else {
                XCTAssertEqual(r.errorCode, "unavailable", "\(r)")
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        XCTAssertEqual(version, 2, "after \(attempts) attempts")
        XCTAssertEqual(try db.eventCount("d"), 2)
    }

    func testTwoServersOnOneDatabaseNeverLoseOrDuplicateAnEvent() throws {
        let db = try TestDatabase()
        let one = try ServerProcess(database: db), two = try ServerProcess(database: db)
        let a = try Terminal(port: one.port), b = try Terminal(port: two.port)
        try a.hello("alice", db)
        try b.hello("bob", db)
        try a.request("create_doc", [("doc", "d")])
        try a.share("d", "bob")
        try a.submit("d", tx: "seed", base: 0, [["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text"]])
        // Each terminal types against the newest version *it* has seen; the
        // other server's events are news to its server, which must catch up.
        var seenA: Int64 = 1, seenB: Int64 = 1
        for i in 0..<20 {
            seenA = try a.submit("d", tx: "a\(i)", base: seenA, [["op": "insert", "node": "t", "pos": 0, "text": "a"]])
            seenB = try b.submit("d", tx: "b\(i)", base: min(seenB, seenA), [["op": "insert", "node": "t", "pos": 0, "text": "b"]])
        }
        XCTAssertEqual(try db.eventCount("d"), 41)
        let versions = try db.db.query("SELECT version FROM events WHERE doc = 'd' ORDER BY version").values.map { Int64($0[0]!)! }
        XCTAssertEqual(versions, Array(1...41))
        let replayed = try Replay.document("d", db: db.db)
        let text = replayed.document["t"]!.textString
        XCTAssertEqual(text.filter { $0 == "a" }.count, 20)
        XCTAssertEqual(text.filter { $0 == "b" }.count, 20)
        // A terminal opening on either server sees that same state.
        let c = try Terminal(port: one.port)
        try c.hello("bob", db)
        XCTAssertEqual(try c.request("open", [("doc", "d")])["state"], replayed.document.json)
    }
}
