@testable import RewindCore
import XCTest

/// `TextTransform.transform` walks the grid of its two lists without taking
/// them apart at every step; it must give exactly what the recursive
/// definition gives (kept here as the reference), splits included.
final class TextTransformTests: XCTestCase {
    static func reference(_ a: [Op], _ b: [Op]) -> ([Op], [Op]) {
        if a.isEmpty || b.isEmpty { return (a, b) }
        if a.count == 1 && b.count == 1 { return TextTransform.pair(a[0], b[0]) }
        if a.count > 1 {
            let (a1, b1) = reference([a[0]], b)
            let (aRest, b2) = reference(Array(a.dropFirst()), b1)
            return (a1 + aRest, b2)
        }
        let (a1, b1) = reference(a, [b[0]])
        let (a2, bRest) = reference(a1, Array(b.dropFirst()))
        return (a2, b1 + bRest)
    }

    func randomOps(_ n: Int, _ rng: inout SeededRandom) -> [Op] {
        (0..<n).map { _ in
            let node: Key = rng.next() % 4 == 0 ? "u" : "t"
            let pos = Int(rng.next() % 12)
            if rng.next() % 2 == 0 { return .insert(node, pos: pos, text: Array(repeating: "x", count: Int(1 + rng.next() % 3))) }
            return .remove(node, pos: pos, len: Int(1 + rng.next() % 6))
        }
    }

    func testTheGridWalkEqualsTheRecursiveDefinition() {
        var rng = SeededRandom(seed: 7)
        var splits = 0
        for _ in 0..<5_000 {
            let a = randomOps(Int(rng.next() % 5), &rng), b = randomOps(Int(rng.next() % 9), &rng)
            let fast = TextTransform.transform(a, b), slow = Self.reference(a, b)
            XCTAssertEqual(fast.0, slow.0, "a through b: \(a) / \(b)")
            XCTAssertEqual(fast.1, slow.1, "b through a: \(a) / \(b)")
            if fast.0.count > a.count || fast.1.count > b.count { splits += 1 }
        }
        XCTAssertGreaterThan(splits, 100, "the cases include removes split around inserts")
    }

    func testASubmitFarBehindIsRebasedInLinearWork() {
        // 20,000 concurrent inserts: the recursive definition copied the rest of the list at each of them.
        let concurrent = (0..<20_000).map { Op.insert("t", pos: $0, text: ["y"]) }
        let (rebased, _) = TextTransform.transform([.insert("t", pos: 0, text: ["x"])], concurrent)
        XCTAssertEqual(rebased, [.insert("t", pos: 20_000, text: ["x"])], "inserts committed first at its position go before it")
    }
}
