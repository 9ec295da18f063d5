import XCTest
@testable import RewindCore

final class SnapshotTests: XCTestCase {
    /// A ledger restored from a snapshot (plus the tail of the log it asks
    /// for) behaves exactly like the live one: same state, same stacks, and
    /// the same results for every later edit, undo and redo.
    func testARestoredLedgerBehavesLikeTheLiveOne() throws {
        for seed in 300..<340 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var live = UndoSim()
            func step(_ sims: inout [UndoSim], _ gen: inout OpGenerator) {
                let user = Int64.random(in: 1...3, using: &gen.rng)
                let choice = Int.random(in: 0..<10, using: &gen.rng)
                let op = gen.op(on: sims[0].doc)
                let group = Int.random(in: 0..<4, using: &gen.rng) == 0 ? "g\(sims[0].counter)" : nil
                for i in sims.indices {
                    switch choice {
                    case 0..<6:
                        _ = try? sims[i].edit(user, [op], after: 300, group: group)
                        if let group { sims[i].mark(.close, user, group: group, action: "Grouped") }
                    case 6..<8: _ = try? sims[i].undo(user, policy: .force)
                    default: _ = try? sims[i].redo(user, policy: .skip)
                    }
                }
            }
            var one = [live]
            for _ in 0..<40 { step(&one, &gen) }
            live = one[0]
            let snapshot = live.ledger.snapshotJSON
            // Through the text form, as stored.
            let stored = try JSONParser.parse(JSONWriter.string(snapshot), maxDepth: 64)
            let start = try DocumentLedger.tailStart(snapshot: stored, limits: Limits())
            let tail = live.entries.compactMap { e -> Event? in if case let .event(ev) = e, ev.version >= start { return ev }; return nil }
            var restored = live
            restored.ledger = try DocumentLedger(doc: "d", snapshot: stored, tail: tail)
            XCTAssertEqual(restored.doc, live.doc, "seed \(seed)")
            XCTAssertEqual(restored.history.stacks, live.history.stacks, "seed \(seed)")
            XCTAssertEqual(restored.history.groups, live.history.groups, "seed \(seed)")
            XCTAssertEqual(restored.history.markCount, live.history.markCount)
            var both = [live, restored]
            for _ in 0..<40 { step(&both, &gen) }
            XCTAssertEqual(both[1].doc, both[0].doc, "seed \(seed): diverged after the snapshot")
            XCTAssertEqual(both[1].history.stacks, both[0].history.stacks, "seed \(seed)")
            XCTAssertEqual(both[1].history.groups, both[0].history.groups, "seed \(seed)")
        }
    }

    func testADocumentRoundTripsThroughItsWireForm() throws {
        var gen = OpGenerator(seed: 7)
        let doc = gen.document(ops: 200)
        XCTAssertEqual(try Document(json: JSONParser.parse(JSONWriter.string(doc.json), maxDepth: 64)), doc)
    }
}
