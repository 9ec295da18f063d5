import RewindCore
@testable import RewindServer
import RewindTestSupport
import RewindStore
import XCTest

/// A snapshot holds every user's undo stacks: ten users editing one document
/// made each ~134 KB, encoded, sealed and written every 1,000 events (issue 44).
/// One that `snapshotEvery` asks for is skipped while the events since the last
/// one stored are fewer than that one's size in bytes over
/// `snapshotBytesPerEvent`; the ledgers are compacted all the same, and another
/// instance opening the document reads the longer tail.
final class SnapshotBudgetTests: XCTestCase {
    func set(_ i: Int) -> JSON { .obj([("op", "set"), ("node", "root"), ("key", "k"), ("value", .int(Int64(i)))]) }

    func storedSnapshots(_ s: SteppedServer, _ doc: String) throws -> [Int64] {
        let r = try s.db.query("SELECT version FROM snapshots WHERE doc = $1 ORDER BY version", [doc])
        return (0..<r.count).map { r.int($0, 0)! }
    }

    /// 23 events on `d` by alice; the snapshot asked for at 5 is stored (and
    /// its size known) before the next events commit.
    func fill(_ s: SteppedServer) throws -> DocumentRuntime {
        let alice = try s.terminal("alice")
        XCTAssertTrue(try alice.request("create_doc", [("doc", "d")]).isOK)
        XCTAssertTrue(try alice.request("open", [("doc", "d")]).isOK)
        let d = try XCTUnwrap(s.document("d"))
        for i in 0..<23 {
            XCTAssertTrue(try alice.request("submit", [("doc", "d"), ("tx", .string("s\(i)")), ("base", .int(Int64(i))), ("ops", [set(i)])]).isOK)
            if i == 4 { try s.turn(until: { d.lastSnapshotBytes > 0 }, "the snapshot at 5 to be encoded") }
        }
        try s.turn(until: { !d.hasPending }, "the last commit")
        XCTAssertEqual(d.committed.version, 23)
        return d
    }

    func testASnapshotWaitsUntilTheEventsSinceTheLastOneHavePaidForIt() throws {
        // One byte an event: the snapshot at 5 (hundreds of bytes) is not followed by another within 23 events.
        let configure: (inout ServerConfig) -> Void = { $0.snapshotEvery = 5; $0.undoLevels = 2; $0.snapshotBytesPerEvent = 1 }
        let s = try SteppedServer(configure: configure)
        let d = try fill(s)
        XCTAssertGreaterThan(d.lastSnapshotBytes, 23)
        try s.turn(until: { try self.storedSnapshots(s, "d").contains(5) }, "the snapshot at 5 to be stored")
        let settled = Date().addingTimeInterval(0.5)  // time for any other asked for to be stored too
        try s.turn(until: { Date() > settled }, "half a second")
        XCTAssertEqual(try storedSnapshots(s, "d"), [5], "those asked for at 10, 15 and 20 came too soon after it for its size")
        // The ledgers are compacted at each snapshot asked for, stored or not.
        XCTAssertGreaterThan(d.committed.history.logBase, 15, "the committed history is compacted")
        XCTAssertEqual(d.speculative.history.logBase, d.committed.history.logBase, "and the speculative one with it")

        // Another instance reads the snapshot at 5 and the 18 events after it; undo still reaches the kept groups.
        let other = try SteppedServer(sharing: s, configure: configure)
        let alice = try other.terminal("alice")
        XCTAssertTrue(try alice.request("open", [("doc", "d")]).isOK)
        let e = try XCTUnwrap(other.document("d"))
        XCTAssertEqual(e.committed.version, 23)
        // Loaded 18 events past its newest snapshot (≥ snapshotEvery), it takes one at once, as before.
        try other.turn(until: { try self.storedSnapshots(other, "d") == [5, 23] }, "the snapshot taken on load")
        XCTAssertTrue(try alice.request("undo", [("doc", "d")]).isOK)
        try other.turn(until: { !e.hasPending }, "the undo to commit")
        XCTAssertEqual(e.committed.document[Document.rootID]?.props["k"], .int(21))
    }

    func testSnapshotsThatHavePaidForThemselvesAreStoredAsAskedFor() throws {
        for perEvent in [0, 1_000_000] {  // 0: never skipped; a million: any snapshot here has paid for itself
            let s = try SteppedServer { $0.snapshotEvery = 5; $0.undoLevels = 2; $0.snapshotBytesPerEvent = perEvent }
            _ = try fill(s)
            try s.turn(until: { try self.storedSnapshots(s, "d").count == 4 }, "four snapshots to be stored")
            XCTAssertEqual(try storedSnapshots(s, "d"), [5, 10, 15, 20], "--snapshot-bytes-per-event \(perEvent)")
        }
    }
}
