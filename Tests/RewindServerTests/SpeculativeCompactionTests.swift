import RewindCore
@testable import RewindServer
import RewindTestSupport
import XCTest

/// The speculative ledger's history is compacted with the committed one's at
/// each snapshot (`DocumentRuntime.saveSnapshot`): nothing else compacts it
/// while the document is served (it is replaced by the committed one only
/// after a clash), and without that a document held every event's ops since
/// it was loaded. Undo still works on what is kept.
final class SpeculativeCompactionTests: XCTestCase {
    func set(_ i: Int) -> JSON { .obj([("op", "set"), ("node", "root"), ("key", "k"), ("value", .int(Int64(i)))]) }

    func testTheSpeculativeHistoryIsCompactedAtEachSnapshot() throws {
        let s = try SteppedServer { $0.snapshotEvery = 5; $0.snapshotBytesPerEvent = 0; $0.undoLevels = 2 }
        let alice = try s.terminal("alice")
        XCTAssertTrue(try alice.request("create_doc", [("doc", "d")]).isOK)
        XCTAssertTrue(try alice.request("open", [("doc", "d")]).isOK)
        for i in 0..<23 {
            XCTAssertTrue(try alice.request("submit", [("doc", "d"), ("tx", .string("s\(i)")), ("base", .int(Int64(i))), ("ops", [set(i)])]).isOK)
        }
        let d = try XCTUnwrap(s.document("d"))
        try s.turn(until: { !d.hasPending }, "the last commit")
        XCTAssertEqual(d.committed.version, 23)
        XCTAssertEqual(d.speculative.version, 23)
        // Snapshots at 5, 10, 15 and 20; with two groups kept per stack, the
        // oldest event an undo can reach is far above the first.
        XCTAssertGreaterThan(d.committed.history.logBase, 15, "the committed history is compacted")
        XCTAssertEqual(d.speculative.history.logBase, d.committed.history.logBase, "and the speculative one with it")
        XCTAssertEqual(d.speculative.history.log.count, d.committed.history.log.count)
        XCTAssertLessThan(d.speculative.history.log.count, 8, "not every event's ops since the document was loaded")

        // Undo reads what was kept: the two newest groups, in order.
        XCTAssertTrue(try alice.request("undo", [("doc", "d")]).isOK)
        XCTAssertTrue(try alice.request("undo", [("doc", "d")]).isOK)
        try s.turn(until: { !d.hasPending }, "the undos to commit")
        XCTAssertEqual(d.committed.document[Document.rootID]?.props["k"], .int(20))
        XCTAssertEqual(try alice.request("undo", [("doc", "d")]).errorCode, "not_found", "nothing older is kept (two levels)")
    }
}
