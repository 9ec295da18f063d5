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
            // What the server encodes: the copy with only what a snapshot needs.
            XCTAssertEqual(JSONWriter.string(live.ledger.forSnapshot.snapshotJSON), JSONWriter.string(snapshot), "seed \(seed)")
            // Through the text form, as stored.
            let stored = try JSONParser.parse(JSONWriter.string(snapshot), maxDepth: 64)
            let start = try DocumentLedger.tailStart(snapshot: stored, limits: Limits())
            // From event `start` to the entry the snapshot was taken at (the last), as the store reads it.
            let from = live.entries.firstIndex { if case let .event(ev) = $0 { return ev.version >= start }; return false } ?? live.entries.count - 1
            let tail = Array(live.entries[from...])
            var restored = live
            restored.ledger = try DocumentLedger(doc: "d", snapshot: stored, tail: tail)
            XCTAssertEqual(restored.doc, live.doc, "seed \(seed)")
            XCTAssertEqual(restored.history.stacks, live.history.stacks, "seed \(seed)")
            XCTAssertEqual(restored.history.groups, live.history.groups, "seed \(seed)")
            XCTAssertEqual(restored.history.markCount, live.history.markCount)
            live.ledger.compactHistory()
            var both = [live, restored]
            for _ in 0..<40 { step(&both, &gen) }
            XCTAssertEqual(both[1].doc, both[0].doc, "seed \(seed): diverged after the snapshot")
            XCTAssertEqual(both[1].history.stacks, both[0].history.stacks, "seed \(seed)")
            XCTAssertEqual(both[1].history.groups, both[0].history.groups, "seed \(seed)")
        }
    }

    /// With few levels, compaction forgets most of the log, and the compacted
    /// ledger still answers every undo and redo like one that kept it all.
    func testCompactionKeepsMemoryToWhatTheStacksReach() throws {
        for seed in 400..<420 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var sims = [UndoSim(levels: 3), UndoSim(levels: 3)]
            for step in 0..<300 {
                let user = Int64.random(in: 1...2, using: &gen.rng)
                let choice = Int.random(in: 0..<10, using: &gen.rng)
                var op = gen.op(on: sims[0].doc)
                // One scope: old groups kept in other scopes' stacks would (rightly) hold the floor down.
                if case .set(_, "undoScope", _) = op { op = .set(Document.rootID, key: "k", value: 1) }
                for i in sims.indices {
                    switch choice {
                    case 0..<7: _ = try? sims[i].edit(user, [op], after: 300)
                    case 7..<9: _ = try? sims[i].undo(user, policy: .force)
                    default: _ = try? sims[i].redo(user, policy: .force)
                    }
                }
                if step % 10 == 0 { sims[1].ledger.compactHistory() }
                XCTAssertEqual(sims[1].doc, sims[0].doc, "seed \(seed) step \(step)")
            }
            XCTAssertEqual(sims[1].history.stacks, sims[0].history.stacks, "seed \(seed)")
            XCTAssertEqual(sims[1].history.groups, sims[0].history.groups, "seed \(seed)")
            XCTAssertLessThan(sims[1].history.log.count, sims[0].history.log.count / 2, "seed \(seed): compaction kept most of the log")
        }
    }

    func testADocumentRoundTripsThroughItsWireForm() throws {
        var gen = OpGenerator(seed: 7)
        let doc = gen.document(ops: 200)
        XCTAssertEqual(try Document(json: JSONParser.parse(JSONWriter.string(doc.json), maxDepth: 64)), doc)
    }
}
