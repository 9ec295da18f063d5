import XCTest
@testable import RewindCore

final class LedgerTests: XCTestCase {
    func submission(_ tx: String, base: Int64, _ ops: [Op], user: Int64 = 1, action: String? = nil) -> DocumentLedger.Submission {
        .init(tx: tx, base: base, ops: ops, action: action, userID: user, userName: "u\(user)", client: "c",
              eventID: "e-\(tx)-\(user)", time: 1_000)
    }

    func event(_ o: DocumentLedger.AppendResult) -> Event? {
        if case let .appended(e) = o { return e }
        return nil
    }

    /// Property: replaying the events a live ledger produced (with random
    /// stale bases, so rebasing happens) gives exactly the live state.
    func testReplayOfTheLogEqualsTheLiveState() throws {
        for seed in 0..<60 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var live = DocumentLedger(doc: "d")
            var events: [Event] = []
            var states: [Document] = [live.document]
            for i in 0..<40 {
                let base = max(0, live.version - Int64.random(in: 0...3, using: &gen.rng))
                let op = gen.op(on: states[Int(base)])
                guard let e = try? event(live.append(submission("t\(i)", base: base, [op], user: Int64(i % 3)))) else { continue }
                events.append(e)
                states.append(live.document)
            }
            var replayed = DocumentLedger(doc: "d")
            for e in events {
                try replayed.replay(e)
                XCTAssertEqual(replayed.document, states[Int(e.version)], "seed \(seed) v\(e.version)")
            }
            XCTAssertEqual(replayed.document.json, live.document.json)
            XCTAssertEqual(replayed.version, live.version)
        }
    }

    func testResubmittingATransactionReturnsTheFirstResult() throws {
        var l = DocumentLedger(doc: "d")
        let s = submission("tx1", base: 0, [.set("root", key: "k", value: 1)])
        XCTAssertNotNil(event(try l.append(s)))
        guard case let .duplicate(version) = try l.append(s) else { return XCTFail("appended twice") }
        XCTAssertEqual(version, 1)
        XCTAssertEqual(l.version, 1)
        // Another user may use the same tx string.
        XCTAssertNotNil(event(try l.append(submission("tx1", base: 1, [.set("root", key: "k", value: 1)], user: 2))))
    }

    /// Old transaction ids are forgotten past twice the rebase window; the
    /// ledger then says it does not know them all (the log answers for them).
    func testOldTransactionIdsAreForgottenAndTheLedgerSaysSo() throws {
        var limits = Limits()
        limits.maxRebaseDistance = 5
        var l = DocumentLedger(doc: "d", limits: limits)
        _ = try l.append(submission("seed", base: 0, [.create(NodeSpec(id: "n", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0)]))
        for i in 1...20 { _ = try l.append(submission("t\(i)", base: l.version, [.set("n", key: "k", value: .int(Int64(i)))])) }
        l.forgetOldTransactions()
        XCTAssertFalse(l.knowsAllTransactions)
        XCTAssertNil(l.transaction(user: 1, tx: "t1"), "older than the window: the log's to answer")
        XCTAssertEqual(l.transaction(user: 1, tx: "t20")?.version, 21)
        XCTAssertEqual(l.transaction(user: 1, tx: "t16")?.version, 17, "the window's five are kept")
        guard case .duplicate(version: 21) = try l.append(submission("t20", base: 20, [.set("n", key: "k", value: 20)])) else {
            return XCTFail("a recent retry is still recognised")
        }
        XCTAssertThrowsError(try l.append(submission("t1", base: 1, [.set("n", key: "k", value: 1)])), "too far behind to rebase") {
            XCTAssertEqual(($0 as? RewindError)?.code, .version)
        }
        var unbounded = DocumentLedger(doc: "d", limits: .unbounded)
        for i in 1...20 { _ = try unbounded.append(submission("u\(i)", base: unbounded.version, [.set("root", key: "k", value: .int(Int64(i)))])) }
        unbounded.forgetOldTransactions()
        XCTAssertTrue(unbounded.knowsAllTransactions, "no window, nothing forgotten")
    }

    func testTheSameTransactionWithOtherContentIsAConflict() throws {
        var l = DocumentLedger(doc: "d")
        _ = try l.append(submission("tx1", base: 0, [.set("root", key: "k", value: 1)]))
        XCTAssertThrowsError(try l.append(submission("tx1", base: 0, [.set("root", key: "k", value: 2)]))) { e in
            XCTAssertEqual((e as! RewindError).code, .conflict)
        }
    }

    func testBaseBeyondTheHeadOrTooFarBehindIsAVersionError() throws {
        var limits = Limits()
        limits.maxRebaseDistance = 2
        var l = DocumentLedger(doc: "d", limits: limits)
        XCTAssertThrowsError(try l.append(submission("a", base: 1, []))) { XCTAssertEqual(($0 as! RewindError).code, .version) }
        for i in 0..<3 { _ = try l.append(submission("t\(i)", base: Int64(i), [.set("root", key: "k", value: .int(Int64(i)))])) }
        XCTAssertThrowsError(try l.append(submission("old", base: 0, []))) { XCTAssertEqual(($0 as! RewindError).code, .version) }
        XCTAssertNoThrow(try l.append(submission("ok", base: 1, [])))
    }

    func testAnOpOnANodeDeletedConcurrentlyIsAConflict() throws {
        var l = DocumentLedger(doc: "d")
        _ = try l.append(submission("c", base: 0, [.create(NodeSpec(id: "n", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0)]))
        _ = try l.append(submission("d", base: 1, [.delete("n")], user: 2))
        XCTAssertThrowsError(try l.append(submission("s", base: 1, [.set("n", key: "k", value: 1)]))) { e in
            XCTAssertEqual((e as! RewindError).code, .conflict)
        }
        XCTAssertThrowsError(try l.append(submission("s2", base: 2, [.set("n", key: "k", value: 1)]))) { e in
            XCTAssertEqual((e as! RewindError).code, .notFound)
        }
    }

    func testEventsRecordInversesThatUndoThem() throws {
        var l = DocumentLedger(doc: "d")
        let e1 = event(try l.append(submission("a", base: 0, [.create(NodeSpec(id: "n", kind: "text", frame: [0, 0, 1, 1]), parent: "root", index: 0)])))!
        let before = l.document
        let e2 = event(try l.append(submission("b", base: 1, [.insert("n", pos: 0, text: ["h", "i"]), .set("n", key: "c", value: "red")])))!
        var d = l.document
        try d.replay(e2.inverse)
        XCTAssertEqual(d, before)
        try d.replay(e1.inverse)
        XCTAssertEqual(d, Document())
    }
}
