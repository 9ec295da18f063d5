import XCTest
@testable import RewindCore

/// Restore Version (issue 12): the ops from the head to an older state.
final class DocumentDiffTests: XCTestCase {
    /// Property: on random histories, the diff from the head to the state at
    /// any version applies to give that state exactly, and its inverses give
    /// the head back exactly (so undoing a restore is exact).
    func testTheDiffToAnyEarlierStateIsExactAndExactlyUndoable() throws {
        for seed in 0..<80 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var doc = Document()
            var states = [doc]
            for _ in 0..<40 {
                let op = gen.op(on: doc)
                if (try? doc.apply(op, limits: Limits())) != nil { states.append(doc) }
            }
            let head = doc
            for (v, old) in states.enumerated() {
                let ops = DocumentDiff.ops(from: head, to: old)
                var restored = head
                let applied = try restored.apply(ops, limits: .unbounded)
                XCTAssertEqual(restored.json, old.json, "seed \(seed): restore to state \(v)")
                var undone = restored
                _ = try undone.apply(applied.inverse, limits: .unbounded)
                XCTAssertEqual(undone.json, head.json, "seed \(seed): undo of the restore to state \(v)")
                if v == states.count - 1 { XCTAssertEqual(ops, [], "restoring the head itself changes nothing") }
            }
        }
    }

    /// Property, through the ledger as the server drives it: on random
    /// histories of three users (edits, groups, undos), a restore to any
    /// earlier version — one `restore` event, its own "Restore Version" group —
    /// gives that version's state; undoing it at once gives the state before
    /// exactly; and replaying the log (restores included) equals the live ledger.
    func testRestoreThenUndoIsExactAndRestoreThenReplayEqualsLive() throws {
        for seed in 200..<260 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var sim = UndoSim()
            var states: [Int64: Document] = [0: sim.doc]
            func record() { states[sim.ledger.version] = sim.doc }
            for step in 0..<50 {
                let user = Int64.random(in: 1...3, using: &gen.rng)
                switch Int.random(in: 0..<10, using: &gen.rng) {
                case 0..<6: _ = try? sim.edit(user, [gen.op(on: sim.doc)], after: Int64.random(in: 0...800, using: &gen.rng))
                case 6: _ = try? sim.undo(user, policy: .force)
                default:
                    let target = Int64.random(in: 0...sim.ledger.version, using: &gen.rng)
                    let before = sim.doc
                    sim.clock += 1_000
                    var s = DocumentLedger.Submission(
                        tx: sim.nextID(), base: sim.ledger.version, ops: DocumentDiff.ops(from: sim.doc, to: states[target]!),
                        action: Titles.ServerAction.restore, userID: user, userName: "u\(user)", client: "c\(user)",
                        eventID: sim.nextID(), time: sim.clock, openGroup: nil, selection: nil)
                    s.kind = .restore
                    guard !s.ops.isEmpty else { continue }
                    guard case let .appended(e) = try sim.ledger.append(s) else { return XCTFail("seed \(seed): restore not appended") }
                    sim.entries.append(.event(e))
                    XCTAssertEqual(e.kind, .restore)
                    XCTAssertEqual(sim.doc.json, states[target]!.json, "seed \(seed) step \(step): restore to \(target)")
                    XCTAssertEqual(sim.titles(user, locale: "zh-Hant").0, "還原「回復版本」", "seed \(seed): its own group, titled in the locale")
                    record()
                    if Bool.random(using: &gen.rng) {
                        let undone = try sim.undo(user)
                        XCTAssertNotNil(undone.event, "seed \(seed) step \(step): the undo of a restore conflicts with nothing")
                        XCTAssertEqual(sim.doc.json, before.json, "seed \(seed) step \(step): undo of the restore to \(target)")
                    }
                }
                record()
            }
            let replayed = try sim.replayed()
            XCTAssertEqual(replayed.document, sim.doc, "seed \(seed): replay equals live")
            XCTAssertEqual(replayed.history.snapshotJSON, sim.history.snapshotJSON, "seed \(seed): the same undo stacks")
        }
    }

    func testASwapOfParentAndChildAndATextSpliceAreSmall() throws {
        var a = Document()
        _ = try a.apply([.create(NodeSpec(id: "x", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0),
                         .create(NodeSpec(id: "y", kind: "view", frame: [0, 0, 1, 1]), parent: "x", index: 0),
                         .create(.text("t", "hello world"), parent: "root", index: 1)], limits: Limits())
        var b = a
        _ = try b.apply([.move("y", parent: "root", index: 0), .move("x", parent: "y", index: 0),
                         .remove("t", pos: 5, len: 6), .insert("t", pos: 5, text: Array(", you".unicodeScalars))], limits: Limits())
        let ops = DocumentDiff.ops(from: a, to: b)
        XCTAssertEqual(ops, [.move("y", parent: "root", index: 2), .move("x", parent: "y", index: 0), .move("y", parent: "root", index: 0),
                             .remove("t", pos: 5, len: 6), .insert("t", pos: 5, text: Array(", you".unicodeScalars))])
        var c = a
        _ = try c.apply(ops, limits: .unbounded)
        XCTAssertEqual(c.json, b.json)
    }

    func testANodeRecreatedWithAnotherKindStillRestoresExactly() throws {
        var a = Document()
        _ = try a.apply([.create(.text("n", "old"), parent: "root", index: 0)], limits: Limits())
        var b = Document()
        _ = try b.apply([.create(NodeSpec(id: "n", kind: "view", frame: [1, 2, 3, 4]), parent: "root", index: 0),
                         .set("root", key: "title", value: "T")], limits: Limits())
        var c = a
        let applied = try c.apply(DocumentDiff.ops(from: a, to: b), limits: .unbounded)
        XCTAssertEqual(c.json, b.json)
        _ = try c.apply(applied.inverse, limits: .unbounded)
        XCTAssertEqual(c.json, a.json)
    }
}
