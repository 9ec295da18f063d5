import RewindCore
@testable import RewindServer
import RewindStore
import XCTest

/// A busy document's ledger forgets the transaction ids of events older than
/// twice the rebase window (bounded memory), and appends do not ask the log
/// about them (issue 44: that lookup, planned on a young log, stalled a busy
/// document for seconds). A repeat the ledger cannot see is then refused by
/// the log's unique index and found by the store's second try: answered as
/// the first result, never appended twice, and no other document's commit is lost.
final class ForgottenTransactionTests: XCTestCase {
    func set(_ i: Int) -> JSON { .obj([("op", "set"), ("node", "root"), ("key", "k"), ("value", .int(Int64(i)))]) }

    /// Rebase window 5, a snapshot every 5 events, one writer (every document in one batch);
    /// document "e" of alice's with 20 events (tx s1…s20): its ledger has forgotten s1…s10.
    func serverWithAForgetfulDocument() throws -> (SteppedServer, SteppedTerminal) {
        let s = try SteppedServer {
            $0.snapshotEvery = 5; $0.snapshotBytesPerEvent = 0
            $0.limits.maxRebaseDistance = 5
            $0.writers = 1
        }
        let alice = try s.terminal("alice", client: "A")
        XCTAssertTrue(try alice.request("create_doc", [("doc", "e")]).isOK)
        XCTAssertTrue(try alice.request("open", [("doc", "e")]).isOK)
        for i in 1...20 {
            XCTAssertTrue(try alice.request("submit", [("doc", "e"), ("tx", .string("s\(i)")), ("base", .int(Int64(i - 1))), ("ops", [set(i)])]).isOK)
        }
        try s.turn(until: { s.document("e")?.committed.knowsAllTransactions == false }, "the ledger to forget old transactions")
        XCTAssertNil(s.document("e")?.committed.transaction(user: 1, tx: "s2"), "s2 is forgotten")
        return (s, alice)
    }

    /// A retry of s2 sent with a newer base (as a client that rebased its
    /// pending edit before sending it again would): the ledger does not know
    /// it, the log does. Answered version 2, nothing appended; the same tx
    /// with other content is a conflict; and a new transaction after it commits.
    func testARetryOlderThanTheLedgerRemembersIsAnsweredFromTheLog() throws {
        let (s, alice) = try serverWithAForgetfulDocument()
        let retry = try alice.request("submit", [("doc", "e"), ("tx", "s2"), ("base", 20), ("ops", [set(2)])])
        XCTAssertEqual(retry["version"], 2, JSONWriter.string(.object(retry)))
        XCTAssertEqual(s.server.store.repeatsLookedUp, 1, "refused by the unique index, then looked up")
        let changed = try alice.request("submit", [("doc", "e"), ("tx", "s3"), ("base", 20), ("ops", [set(99)])])
        XCTAssertEqual(changed.errorCode, "conflict", JSONWriter.string(.object(changed)))
        XCTAssertEqual(changed["error"]?.objectValue?["details"]?.objectValue?["version"], 3)
        XCTAssertEqual(s.server.store.repeatsLookedUp, 1, "after one miss, the document's entries are looked up before they are sent")
        XCTAssertEqual(try alice.request("submit", [("doc", "e"), ("tx", "s21"), ("base", 20), ("ops", [set(21)])])["version"], 21)
        XCTAssertEqual(try s.eventCount("e"), 21, "no transaction appended twice")
        // The undo stack is what the log says: the newest group is s21's.
        XCTAssertEqual(try alice.request("undo", [("doc", "e")])["version"], 22)
    }

    /// An undo retried by its `tx` has no base to bound its age: on a ledger
    /// that has forgotten, it is looked up before it is sent (no refused batch).
    func testAnUndoRetriedAfterItsIdWasForgottenIsNotUndoneTwice() throws {
        let (s, alice) = try serverWithAForgetfulDocument()
        XCTAssertEqual(try alice.request("undo", [("doc", "e"), ("tx", "u1")])["version"], 21)
        // Fifteen more edits: u1 (version 21) falls out of what the ledger keeps.
        for i in 22...36 {
            XCTAssertTrue(try alice.request("submit", [("doc", "e"), ("tx", .string("s\(i)")), ("base", .int(Int64(i - 1))), ("ops", [set(i)])]).isOK)
        }
        try s.turn(until: { s.document("e")?.committed.transaction(user: 1, tx: "u1") == nil }, "u1 to be forgotten")
        let again = try alice.request("undo", [("doc", "e"), ("tx", "u1")])
        XCTAssertEqual(again["version"], 21, "the first undo's result: \(JSONWriter.string(.object(again)))")
        XCTAssertEqual(try s.eventCount("e"), 36, "nothing undone twice")
        XCTAssertEqual(s.server.store.repeatsLookedUp, 0, "looked up before it was sent")
    }

    /// The refused batch holds another document's new entry; a second batch
    /// with that document's next entry ran behind it (pipelined) and failed
    /// its claim, so its answer came before the first entry's. Both commit,
    /// in order, and the repeat is answered as one.
    func testAnEntryAnsweredBeforeTheOneAheadOfItWaitsForIt() throws {
        let (s, alice) = try serverWithAForgetfulDocument()
        let bob = try s.terminal("bob", client: "B")
        XCTAssertTrue(try bob.request("create_doc", [("doc", "d")]).isOK)
        XCTAssertTrue(try bob.request("submit", [("doc", "d"), ("tx", "d1"), ("base", 0), ("ops", [set(1)])]).isOK)
        // Holds d's head row: the first batch waits in PostgreSQL, so the second is sent behind it.
        let locker = try s.db.another()
        try locker.query("BEGIN")
        try locker.query("SELECT 1 FROM documents WHERE id = 'd' FOR UPDATE")
        let d2 = bob.pipeline([("submit", [("doc", "d"), ("tx", "d2"), ("base", 1), ("ops", [set(2)])])])[0]
        let repeatOfS2 = alice.pipeline([("submit", [("doc", "e"), ("tx", "s2"), ("base", 20), ("ops", [set(2)])])])[0]
        try s.turn(until: { s.server.store.batchesInFlight == 1 }, "the first batch to be sent")
        // Two entries: a batch goes behind one in flight only once it is as big (EventStore.sendBatch).
        let behind = bob.pipeline([("submit", [("doc", "d"), ("tx", "d3"), ("base", 2), ("ops", [set(3)])]),
                                   ("submit", [("doc", "d"), ("tx", "d4"), ("base", 3), ("ops", [set(4)])])])
        try s.turn(until: { s.server.store.batchesInFlight == 2 }, "the second batch, behind the first")
        try locker.query("COMMIT")
        XCTAssertEqual(try alice.reply(to: repeatOfS2)["version"], 2)
        XCTAssertEqual(try bob.reply(to: d2)["version"], 2)
        XCTAssertEqual(try bob.reply(to: behind[0])["version"], 3)
        XCTAssertEqual(try bob.reply(to: behind[1])["version"], 4)
        XCTAssertEqual(s.server.store.repeatsLookedUp, 1)
        XCTAssertEqual(try s.eventCount("d"), 4)
        XCTAssertEqual(try s.eventCount("e"), 20)
    }
}
