import RewindCore
import RewindStore
import XCTest

/// Opening a long document from a snapshot gives the same state and stacks
/// as replaying its log, and old transactions are still recognised.
final class SnapshotIntegrationTests: XCTestCase {
    func testRestartFromASnapshotMatchesReplayAndKeepsUndoAndIdempotency() throws {
        let db = try TestDatabase()
        let args = ["--snapshot-every", "100"]
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
        // Snapshots are encoded off the loop and stored after their commit: give the last one a moment.
        var snapshots: Int64 = 0
        for _ in 0..<50 {
            snapshots = try db.db.query("SELECT count(*) FROM snapshots WHERE doc = 'd'").int(0, 0) ?? 0
            if snapshots >= 11 { break }
            usleep(100_000)
        }
        XCTAssertGreaterThanOrEqual(snapshots, 11)
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

        server = try ServerProcess(database: db, arguments: ["--snapshot-every", "10"])
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

        server = try ServerProcess(database: db, arguments: ["--snapshot-every", "10"])
        a = try Terminal(port: server.port)
        try a.hello("alice", db)
        XCTAssertEqual(try a.request("open", [("doc", "d")])["state"], try RewindStore.Replay.document("d", db: db.db).document.json)
        XCTAssertEqual(try snapshots().int(0, 0), 1, "loaded from it: no second one")
    }
}
