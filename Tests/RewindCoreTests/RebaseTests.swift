import XCTest
@testable import RewindCore

final class RebaseTests: XCTestCase {
    func text(_ s: String) -> [Unicode.Scalar] { Array(s.unicodeScalars) }

    func docWithText(_ s: String) throws -> Document {
        var d = Document()
        var spec = NodeSpec(id: "t", kind: "text", frame: [0, 0, 1, 1])
        spec.text = text(s)
        _ = try d.apply([.create(spec, parent: "root", index: 0)], limits: Limits())
        return d
    }

    func testConcurrentInsertsKeepBothUsersText() throws {
        var d = try docWithText("hello")
        _ = try d.apply([.insert("t", pos: 5, text: text(" world"))], limits: Limits())  // committed first
        let mine = TextTransform.rebase([.insert("t", pos: 0, text: text("oh, "))], through: [.insert("t", pos: 5, text: text(" world"))])
        _ = try d.apply(mine, limits: Limits())
        XCTAssertEqual(d["t"]!.textString, "oh, hello world")
    }

    func testInsertAtTheSamePositionGoesAfterTheCommittedOne() {
        let r = TextTransform.rebase([.insert("t", pos: 2, text: text("B"))], through: [.insert("t", pos: 2, text: text("A"))])
        XCTAssertEqual(r, [.insert("t", pos: 3, text: text("B"))])
    }

    func testTextInsertedInsideARangeSomeoneRemovesSurvives() throws {
        var d = try docWithText("abcdef")
        let committed: [Op] = [.insert("t", pos: 3, text: text("XY"))]
        _ = try d.apply(committed, limits: Limits())
        let mine = TextTransform.rebase([.remove("t", pos: 1, len: 4)], through: committed)
        _ = try d.apply(mine, limits: Limits())
        XCTAssertEqual(d["t"]!.textString, "aXYf")
    }

    func testOverlappingRemovesRemoveTheUnionOnce() throws {
        var d = try docWithText("abcdefgh")
        let committed: [Op] = [.remove("t", pos: 2, len: 3)]  // cde
        _ = try d.apply(committed, limits: Limits())
        _ = try d.apply(TextTransform.rebase([.remove("t", pos: 3, len: 4)], through: committed), limits: Limits())  // defg
        XCTAssertEqual(d["t"]!.textString, "abh")
    }

    func testOpsOnOtherNodesAreUntouched() {
        let ops: [Op] = [.insert("u", pos: 0, text: text("x")), .set("t", key: "k", value: 1)]
        XCTAssertEqual(TextTransform.rebase(ops, through: [.insert("t", pos: 0, text: text("zz"))]), ops)
    }

    /// Property (convergence): for random concurrent text edits A and B on the
    /// same text, B then A-rebased equals A then B-rebased, and both keep every
    /// scalar either side inserted.
    func testConcurrentTextEditsConvergeWhicheverCommitsFirst() throws {
        for seed in 0..<500 as Range<UInt64> {
            var rng = SeededRandom(seed: seed)
            let start = String((0..<Int.random(in: 0...8, using: &rng)).map { _ in "abcdefgh".randomElement(using: &rng)! })
            func edits(marker: Character) -> [Op] {
                var len = start.unicodeScalars.count
                var out: [Op] = []
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    if Bool.random(using: &rng) || len == 0 {
                        let n = Int.random(in: 1...3, using: &rng)
                        out.append(.insert("t", pos: Int.random(in: 0...len, using: &rng), text: text(String(repeating: marker, count: n))))
                        len += n
                    } else {
                        let p = Int.random(in: 0..<len, using: &rng)
                        let l = Int.random(in: 1...(len - p), using: &rng)
                        out.append(.remove("t", pos: p, len: l))
                        len -= l
                    }
                }
                return out
            }
            let a = edits(marker: "X"), b = edits(marker: "Y")
            var viaB = try docWithText(start)
            _ = try viaB.apply(b, limits: Limits())
            _ = try viaB.apply(TextTransform.rebase(a, through: b), limits: Limits())
            var viaA = try docWithText(start)
            _ = try viaA.apply(a, limits: Limits())
            _ = try viaA.apply(TextTransform.transform(a, b).1, limits: Limits())
            XCTAssertEqual(viaB["t"]!.textString, viaA["t"]!.textString, "seed \(seed): \(start) a=\(a) b=\(b)")
            let inserted = a.reduce(0) { if case let .insert(_, _, t) = $1 { return $0 + t.count }; return $0 }
            var onlyA = try docWithText(start)
            _ = try onlyA.apply(a, limits: Limits())
            XCTAssertEqual(viaB["t"]!.textString.filter { $0 == "X" }.count, onlyA["t"]!.textString.filter { $0 == "X" }.count,
                           "seed \(seed): X inserted \(inserted)")
        }
    }
}
