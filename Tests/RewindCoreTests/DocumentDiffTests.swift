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
