import RewindCore
import RewindStore
import XCTest

/// Opening a long document from a snapshot gives the same state and stacks
/// as replaying its log, and old transactions are still recognised.
final class SnapshotIntegrationTests: XCTestCase {
    /// `verify` reads each snapshot's state when the replay reaches its
    /// entry (not all of them at once) and still names one changed after it
    /// was stored, and one whose state and digest were rewritten together.
    func testVerifyChecksEverySnapshotAsItReachesIt() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db, arguments: ["--snapshot-every", "5", "--snapshot-bytes-per-event", "0"])
        let t = try Terminal(port: server.port)
        try t.hello("alice", db)
        try t.request("create_doc", [("doc", "d")])
        try t.request("open", [("doc", "d")])
        for i in 0..<12 { try t.submit("d", tx: "s\(i)", base: Int64(i), [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]]) }
        XCTAssertEqual(try waitFor(db, "SELECT count(*) FROM snapshots WHERE doc = 'd'", toReach: 2), 2)
        let rows = try db.db.query("SELECT seq FROM snapshots WHERE doc = 'd' ORDER BY seq")
        XCTAssertEqual((0..<rows.count).compactMap { rows.int($0, 0) }, [5, 10])
        XCTAssertNil(try Verify.document("d", db: db.db))

        try db.db.execute(script: "UPDATE snapshots SET state = state || ' ' WHERE doc = 'd' AND seq = 10")
        XCTAssertEqual(try Verify.document("d", db: db.db), "d entry 10: snapshot does not match its digest (changed after it was stored)")
        // The state of version 5 put at entry 10 with a digest that matches it: the replayed state there differs.
        try db.db.execute(script: """
            UPDATE snapshots SET state = (SELECT state FROM snapshots WHERE doc = 'd' AND seq = 5),
                                 digest = (SELECT digest FROM snapshots WHERE doc = 'd' AND seq = 5)
             WHERE doc = 'd' AND seq = 10
            """)
        XCTAssertEqual(try Verify.document("d", db: db.db), "d entry 10: snapshot's state differs from the replayed state at this entry")
    }

    /// Alice edits twice at the start and never again; Bob edits 1,200
    /// times, setting the key Alice set. After a restart the document opens
    /// from a snapshot whose tail is only the rebase window, far above
    /// Alice's groups: her undo reads their part of the log back first, and
    /// finds Bob's later change (the same conflict as without a restart),
    /// then undoes her other group; the state is the log's.
    func testAnOldUndoGroupIsUndoneAfterARestartAsBefore() throws {
        let db = try TestDatabase()
        let count = try writeOldGroups(db)
        let server = try ServerProcess(database: db, arguments: ["--snapshot-every", "100", "--snapshot-bytes-per-event", "0"])
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", db)
        XCTAssertEqual(try alice.request("open", [("doc", "d")])["version"], .int(count + 2))
        // Sent together: the submit behind the undo must not overtake it while the old group's log is read.
        alice.send(.obj([("id", 901), ("type", "undo"), ("doc", "d"), ("on_conflict", "skip")]))
        alice.send(.obj([("id", 902), ("type", "submit"), ("doc", "d"), ("tx", "after"), ("base", .int(count + 2)),
                         ("ops", [["op": "set", "node": "root", "key": "other", "value": 1]])]))
        let asked = try alice.reply(to: 901)
        XCTAssertEqual(asked["ok"], true, JSONWriter.string(.object(asked)))
        XCTAssertEqual(asked["version"], .int(count + 3), "the undo runs first")
        XCTAssertEqual(try alice.reply(to: 902)["version"], .int(count + 4), "then what was sent behind it")
        let skipped = asked["skipped"]?.arrayValue ?? []
        XCTAssertEqual(skipped.count, 1, JSONWriter.string(.object(asked)))
        XCTAssertEqual(skipped.first?.objectValue?["reason"], "set")
        XCTAssertEqual(skipped.first?.objectValue?["user"], "bob")
        XCTAssertEqual(skipped.first?.objectValue?["version"], .int(count + 2))
        XCTAssertEqual(try alice.request("undo", [("doc", "d")])["ok"], true)  // the set sent behind the first undo
        XCTAssertEqual(try alice.request("undo", [("doc", "d")])["ok"], true)  // her first group
        let opened = try alice.request("open", [("doc", "d")])
        XCTAssertNil(opened["state"]?.objectValue?["nodes"]?.objectValue?["a"], "Alice's first group is undone")
        let replayed = try RewindStore.Replay.document("d", db: db.db)
        XCTAssertEqual(opened["state"], replayed.document.json)
        XCTAssertEqual(opened["version"], .int(replayed.version))
    }

    func testRestartFromASnapshotMatchesReplayAndKeepsUndoAndIdempotency() throws {
        let db = try TestDatabase()
        let args = ["--snapshot-every", "100", "--snapshot-bytes-per-event", "0"]
        var server = try ServerProcess(database: db, arguments: args)
        var a = try Terminal(port: server.port)
        try a.hello("alice", db)
        try a.request("create_doc", [("doc", "d")])
        try a.request("open", [("doc", "d")])
        try a.submit("d", tx: "seed", base: 0, [["op": "create", "node": "n", "parent": "root", "kind": "text", "text": "x"]])
        // 1,150 edits sent at once, each against the version before it.
        let count: Int64 = 1_150
        for i in 0..<count {
            a.send(.obj([("id", .int(10_000 + i)), ("type", "submit"), ("doc", "d"), ("tx", .string("s\(i)")), ("base", .int(1 + i)),
                         ("ops", [["op": "set", "node": "n", "key": "k", "value": .int(i)]])]))
        }
        for i in 0..<count { XCTAssertEqual(try a.reply(to: 10_000 + i)["ok"], true) }
        try a.request("begin_group", [("doc", "d"), ("action", "Typing burst")])
        try a.submit("d", tx: "t1", base: count + 1, [["op": "insert", "node": "n", "pos": 1, "text": "yz"]])
        try a.request("end_group", [("doc", "d")])
        XCTAssertEqual(try a.request("undo", [("doc", "d")])["ok"], true)
        let before = try a.request("history", [("doc", "d")])
        XCTAssertGreaterThanOrEqual(try waitFor(db, "SELECT count(*) FROM snapshots WHERE doc = 'd'", toReach: 11), 11)
        server.kill9()

        server = try ServerProcess(database: db, arguments: args)
        a = try Terminal(port: server.port)
        try a.hello("alice", db)
        let opened = try a.request("open", [("doc", "d")])
        let replayed = try RewindStore.Replay.document("d", db: db.db)
        XCTAssertEqual(opened["state"], replayed.document.json)
        XCTAssertEqual(opened["version"], .int(replayed.version))
        let after = try a.request("history", [("doc", "d")])
        XCTAssertEqual(after["undo"], before["undo"])
        XCTAssertEqual(after["redo"], before["redo"])
        // s0 is older than what the restored ledger keeps; the log still knows it.
        let events = try db.eventCount("d")
        let retry = try a.request("submit", [("doc", "d"), ("tx", "s0"), ("base", 1), ("ops", [["op": "set", "node": "n", "key": "k", "value": 0]])])
        XCTAssertEqual(retry["version"], 2, JSONWriter.string(.object(retry)))
        let reused = try a.request("submit", [("doc", "d"), ("tx", "s1"), ("base", 1), ("ops", [["op": "set", "node": "n", "key": "k", "value": 99]])])
        XCTAssertEqual(reused.errorCode, "conflict")
        XCTAssertEqual(try db.eventCount("d"), events)
        // Undo history works across the restart.
        let redo = try a.request("redo", [("doc", "d")])
        XCTAssertEqual(redo["action"], "Typing burst")
        XCTAssertEqual(try a.request("open", [("doc", "d")])["state"]?.objectValue?["nodes"]?.objectValue?["n"]?.objectValue?["text"], "xyz")
    }

    /// A document read far past its newest snapshot — here written with
    /// snapshots off, as an import or an older release leaves one — gets a
    /// snapshot when it is first loaded, and the next first open starts from it.
    func testADocumentLoadedFarPastItsNewestSnapshotIsSnapshottedOnLoad() throws {
        let db = try TestDatabase()
        var server = try ServerProcess(database: db, arguments: ["--snapshot-every", "0"])
        var a = try Terminal(port: server.port)
        try a.hello("alice", db)
        try a.request("create_doc", [("doc", "d")])
        try a.submit("d", tx: "seed", base: 0, [["op": "create", "node": "n", "parent": "root", "kind": "text", "text": "x"]])
        for i in 1...30 { try a.submit("d", tx: "s\(i)", base: Int64(i), [["op": "set", "node": "n", "key": "k", "value": .int(Int64(i))]]) }
        let snapshots = { try db.db.query("SELECT count(*), max(version) FROM snapshots WHERE doc = 'd'") }
        XCTAssertEqual(try snapshots().int(0, 0), 0, "snapshots off: none written")
        server.kill9()

        server = try ServerProcess(database: db, arguments: ["--snapshot-every", "10", "--snapshot-bytes-per-event", "0"])
        a = try Terminal(port: server.port)
        try a.hello("alice", db)
        XCTAssertEqual(try a.request("open", [("doc", "d")])["version"], 31)
        var taken: Int64 = 0
        for _ in 0..<50 {
            taken = try snapshots().int(0, 1) ?? 0
            if taken > 0 { break }
            usleep(100_000)
        }
        XCTAssertEqual(taken, 31, "a snapshot of the head, taken on load")
        server.kill9()

        server = try ServerProcess(database: db, arguments: ["--snapshot-every", "10", "--snapshot-bytes-per-event", "0"])
        a = try Terminal(port: server.port)
        try a.hello("alice", db)
        XCTAssertEqual(try a.request("open", [("doc", "d")])["state"], try RewindStore.Replay.document("d", db: db.db).document.json)
        XCTAssertEqual(try snapshots().int(0, 0), 1, "loaded from it: no second one")
    }

    /// Snapshots are encoded off the loop and stored after their commit: the
    /// value of `query` once it reaches `target` (or what it is after 5 s).
    private func waitFor(_ db: TestDatabase, _ query: String, toReach target: Int64) throws -> Int64 {
        var value: Int64 = 0
        for _ in 0..<50 {
            value = try db.db.query(query).int(0, 0) ?? 0
            if value >= target { break }
            usleep(100_000)
        }
        return value
    }

    /// Alice creates `a` (version 1) and sets root's `k` (version 2), then
    /// never edits again; Bob sets `k` 1,200 times. Snapshots every 100; the
    /// server is killed once the last is stored. Returns Bob's count.
    private func writeOldGroups(_ db: TestDatabase) throws -> Int64 {
        let server = try ServerProcess(database: db, arguments: ["--snapshot-every", "100", "--snapshot-bytes-per-event", "0"])
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", db)
        try alice.request("create_doc", [("doc", "d")])
        try alice.request("share", [("doc", "d"), ("user", "bob"), ("role", "editor")])
        try alice.request("open", [("doc", "d")])
        try alice.submit("d", tx: "a1", base: 0, [["op": "create", "node": "a", "parent": "root", "kind": "text", "text": "mine"]])
        try alice.submit("d", tx: "a2", base: 1, [["op": "set", "node": "root", "key": "k", "value": "alice"]])
        let bob = try Terminal(port: server.port)
        try bob.hello("bob", db)
        try bob.request("open", [("doc", "d")])
        let count: Int64 = 1_200
        for i in 0..<count {
            bob.send(.obj([("id", .int(10_000 + i)), ("type", "submit"), ("doc", "d"), ("tx", .string("b\(i)")), ("base", .int(2 + i)),
                           ("ops", [["op": "set", "node": "root", "key": "k", "value": .int(i)]])]))
        }
        for i in 0..<count { XCTAssertEqual(try bob.reply(to: 10_000 + i)["ok"], true) }
        XCTAssertEqual(try waitFor(db, "SELECT max(version) FROM snapshots WHERE doc = 'd'", toReach: 1_200), 1_200)
        server.kill9()
        return count
    }

    /// The old group's events are read back checked against the chain the
    /// server trusts (from the entry before them up to the tail it loaded,
    /// without walking the log below): one changed after it was written is
    /// refused, nothing is appended, and the document stops, as tampering
    /// found on a load does.
    func testAnOldGroupReadBackFromAChangedLogIsRefused() throws {
        let db = try TestDatabase()
        _ = try writeOldGroups(db)
        // Version 2's sealed content moved to version 3: it opens (same key), but the chain breaks there.
        try db.db.execute(script: """
            ALTER TABLE log DISABLE TRIGGER USER;
            UPDATE log SET ops = (SELECT ops FROM log WHERE doc = 'd' AND version = 2 AND entry = 'event')
             WHERE doc = 'd' AND version = 3 AND entry = 'event';
            ALTER TABLE log ENABLE TRIGGER USER;
            """)
        let server = try ServerProcess(database: db, arguments: ["--snapshot-every", "100", "--snapshot-bytes-per-event", "0"])
        let alice = try Terminal(port: server.port)
        try alice.hello("alice", db)
        XCTAssertEqual(try alice.request("open", [("doc", "d")])["ok"], true, "the tail it loads is intact")
        let undo = try alice.request("undo", [("doc", "d"), ("on_conflict", "skip")])
        XCTAssertEqual(undo.errorCode, "internal", JSONWriter.string(.object(undo)))
        XCTAssertTrue(undo["error"]?.objectValue?["message"]?.stringValue?.contains("breaks at entry 3") ?? false, JSONWriter.string(.object(undo)))
        XCTAssertEqual(try db.eventCount("d"), 1_202, "nothing was appended")
        // The document stopped; loaded again from its intact tail, the same undo is refused the same way.
        _ = try alice.request("open", [("doc", "d")])
        XCTAssertEqual(try alice.request("undo", [("doc", "d"), ("on_conflict", "skip")]).errorCode, "internal")
        XCTAssertEqual(try db.eventCount("d"), 1_202)
    }
}
