import Foundation
import Glibc
import RewindCore
import RewindStore
import XCTest

/// Several `rewind-server` processes on one database (SPEC section 9): every
/// instance pushes every committed event, in order, with no gap and no
/// duplicate; presence crosses instances; PostgreSQL is the only shared engine.
final class ClusterTests: XCTestCase {
    /// Reads `t`'s messages until its `events` pushes for `doc` reach `head`;
    /// returns every version pushed, in arrival order (replies are kept aside).
    private func versions(_ t: Terminal, doc: String = "d", upTo head: Int64, seconds: Double = 10) throws -> [Int64] {
        var seen: [Int64] = []
        func take(_ m: JSONObject) {
            guard m["push"] == "events", m["doc"] == .string(doc) else { return }
            for e in m["events"]?.arrayValue ?? [] { if let v = e.objectValue?["version"]?.intValue { seen.append(v) } }
        }
        let earlier = t.pushes
        t.pushes = []
        for m in earlier { if m["push"] == "events" && m["doc"] == .string(doc) { take(m) } else { t.pushes.append(m) } }
        let deadline = Date().addingTimeInterval(seconds)
        while (seen.last ?? 0) < head {
            guard Date() < deadline else { throw TestFailure("pushes stopped at \(seen.last ?? 0) of \(head): \(seen.suffix(10))") }
            let m = try t.next()
            if m["push"] == "events" && m["doc"] == .string(doc) { take(m) } else { t.pushes.append(m) }
        }
        return seen
    }

    private func assertGapless(_ seen: [Int64], from first: Int64, to head: Int64, _ who: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(seen, Array(first...head), "\(who): lost, duplicated or reordered deliveries", file: file, line: line)
    }

    func testTwoInstancesSeeEachOthersEditsUndoAndPresence() throws {
        let db = try TestDatabase()
        let a = try ServerProcess(database: db), b = try ServerProcess(database: db)
        let alice = try Terminal(port: a.port), bob = try Terminal(port: b.port)
        try alice.hello("alice", db, client: "laptop")
        try bob.hello("bob", db, client: "desk")
        try alice.request("create_doc", [("doc", "d")])
        try alice.share("d", "bob")
        XCTAssertEqual(try alice.request("open", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try bob.request("open", [("doc", "d")])["ok"], true)

        var start = Date()
        let v1 = try alice.submit("d", tx: "a1", base: 0, [["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "focusable": true, "text": "hello"]])
        XCTAssertEqual(try versions(bob, upTo: v1), [1], "bob (instance B) sees alice's edit from instance A")
        XCTAssertLessThan(Date().timeIntervalSince(start), 1)

        start = Date()
        let v2 = try bob.submit("d", tx: "b1", base: 1, [["op": "insert", "node": "t", "pos": 5, "text": " world"]])
        XCTAssertEqual(try versions(alice, upTo: v2), [1, 2], "alice sees her own edit, then bob's")
        XCTAssertLessThan(Date().timeIntervalSince(start), 1)

        // Presence: alice's selection reaches bob with her name and client.
        start = Date()
        let selected = try alice.request("select", [("doc", "d"), ("node", "t"), ("start", 0), ("end", 5)])
        XCTAssertEqual(selected["ok"], true, "\(selected)")
        let seenByBob = try bob.push("presence")
        XCTAssertEqual(seenByBob["user"], "alice")
        XCTAssertEqual(seenByBob["client"], "laptop")
        XCTAssertEqual(seenByBob["node"], "t")
        XCTAssertEqual(seenByBob["selection"]?.objectValue?["end"], 5)
        XCTAssertLessThan(Date().timeIntervalSince(start), 1)

        // Undo on B of bob's edit reaches alice on A.
        let undo = try bob.request("undo", [("doc", "d")])
        XCTAssertEqual(undo["ok"], true, "\(undo)")
        XCTAssertEqual(try versions(alice, upTo: 3), [3])
        // Both instances serve the same state: the undo took bob's " world" away.
        let onA = try Terminal(port: a.port), onB = try Terminal(port: b.port)
        try onA.hello("alice", db)
        try onB.hello("bob", db)
        let stateA = try onA.request("open", [("doc", "d")])["state"], stateB = try onB.request("open", [("doc", "d")])["state"]
        XCTAssertEqual(stateA, stateB)
        XCTAssertEqual(stateA, try Replay.document("d", db: db.db).document.json)
        XCTAssertEqual(try Replay.document("d", db: db.db).document["t"]?.textString, "hello")

        // A terminal opening later on A sees bob's presence (held by B).
        XCTAssertEqual(try bob.request("focus", [("doc", "d"), ("node", "t")])["ok"], true)
        _ = try alice.push("presence")  // bob's focus, pushed live
        let late = try Terminal(port: a.port)
        try late.hello("alice", db, client: "tablet")
        XCTAssertEqual(try late.request("open", [("doc", "d")])["ok"], true)
        var others: [String: JSONObject] = [:]
        while others["desk"] == nil || others["laptop"] == nil {
            let p = try late.push("presence")
            others[p["client"]?.stringValue ?? "?"] = p
        }
        XCTAssertEqual(others["desk"]?["user"], "bob", "a terminal opening on A is told where bob (on B) is")
        XCTAssertEqual(others["desk"]?["node"], "t")

        // Bob leaves: his presence goes on A too.
        bob.disconnect()
        let gone = try late.push("presence")
        XCTAssertEqual(gone["user"], "bob")
        XCTAssertEqual(gone["node"], .null)
    }
}
