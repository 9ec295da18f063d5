import XCTest
@testable import RewindCore

final class ChainTests: XCTestCase {
    func node(_ id: Key, _ frame: [JSON], focusable: Bool = false, undoScope: Bool = false, clips: Bool = false) -> NodeSpec {
        var n = NodeSpec(id: id, kind: "view", frame: frame)
        n.focusable = focusable
        n.undoScope = undoScope
        n.clips = clips
        return n
    }

    func build(_ specs: [(NodeSpec, Key)]) throws -> Document {
        var d = Document()
        for (s, parent) in specs { _ = try d.apply(.create(s, parent: parent, index: Int.max), limits: Limits()) }
        return d
    }

    // MARK: Hit-testing

    func testHitTestFindsTheDeepestNodeInParentCoordinates() throws {
        // panel at (100,100) 200×200; card inside at (10,10) 50×50 → card covers (110..<160, 110..<160) on the canvas.
        let d = try build([(node("panel", [100, 100, 200, 200]), "root"), (node("card", [10, 10, 50, 50]), "panel"),
                           (node("label", [5, 5, 10, 10]), "card")])
        XCTAssertEqual(d.hitTest(x: 150, y: 150), "card")
        XCTAssertEqual(d.hitTest(x: 115, y: 115), "label")
        XCTAssertEqual(d.hitTest(x: 250, y: 250), "panel")
        XCTAssertEqual(d.hitTest(x: 50, y: 50), "root", "outside everything: root")
        // Edges: x <= px < x + w.
        XCTAssertEqual(d.hitTest(x: 100, y: 100), "panel")
        XCTAssertEqual(d.hitTest(x: 300, y: 150), "root")
        XCTAssertEqual(d.hitTest(x: 299.5, y: 150), "panel")
        XCTAssertEqual(d.hitTest(x: 160, y: 120), "panel", "the card's right edge is outside it")
    }

    func testLaterSiblingsAreInFront() throws {
        let d = try build([(node("back", [0, 0, 100, 100]), "root"), (node("front", [50, 50, 100, 100]), "root")])
        XCTAssertEqual(d.hitTest(x: 60, y: 60), "front", "overlap: the later child is in front")
        XCTAssertEqual(d.hitTest(x: 10, y: 10), "back")
        // Moving back to the end brings it to the front.
        var moved = d
        _ = try moved.apply(.move("back", parent: "root", index: 5), limits: Limits())
        XCTAssertEqual(moved.hitTest(x: 60, y: 60), "back")
    }

    func testAChildOutsideItsParentIsNotHitThere() throws {
        // The child sticks out of its (clipping or not) parent: points outside the parent never reach it.
        for clips in [true, false] {
            let d = try build([(node("box", [0, 0, 50, 50], clips: clips), "root"), (node("overhang", [40, 40, 100, 100]), "box")])
            XCTAssertEqual(d.hitTest(x: 45, y: 45), "overhang")
            XCTAssertEqual(d.hitTest(x: 80, y: 80), "root", "clips: \(clips)")
        }
    }

    func testEmptyFramesAndFractionalPoints() throws {
        let d = try build([(node("zero", [10, 10, 0, 0]), "root"), (node("f", [0.5, 0.5, 1, 1]), "root")])
        XCTAssertEqual(d.hitTest(x: 10, y: 10), "root", "an empty frame contains nothing")
        XCTAssertEqual(d.hitTest(x: 0.5, y: 1.49), "f")
        XCTAssertEqual(d.hitTest(x: 1.5, y: 1), "root")
    }

    /// Property: the node hit contains the point in canvas coordinates, and no
    /// node in front of it (a later sibling of it or of an ancestor) does.
    func testHitTestAgreesWithABruteForceSearch() throws {
        for seed in 0..<100 as Range<UInt64> {
            var rng = SeededRandom(seed: seed)
            var d = Document()
            var ids: [Key] = ["root"]
            for i in 0..<25 {
                let parent = ids[Int(rng.next() % UInt64(ids.count))]
                let f: [JSON] = (0..<4).map { k in .int(Int64(rng.next() % (k < 2 ? 80 : 60))) }
                _ = try d.apply(.create(node(Key("n\(i)"), f), parent: parent, index: Int(rng.next() % 4)), limits: Limits())
                ids.append(Key("n\(i)"))
            }
            // Independently: a node can be hit where it and all its ancestors contain the point
            // (in canvas coordinates); of those, the one painted last (pre-order) is on top.
            func canvasRect(_ id: Key) -> (FrameRect, Bool) {
                guard let p = d[id]!.parent else { return (FrameRect(x: 0, y: 0, w: 0, h: 0), true) }
                let (pr, _) = canvasRect(p)
                let f = d[id]!.frameRect!
                return (FrameRect(x: pr.x + f.x, y: pr.y + f.y, w: f.w, h: f.h), false)
            }
            for _ in 0..<50 {
                let px = Double(rng.next() % 200), py = Double(rng.next() % 200)
                func hittable(_ id: Key) -> Bool {
                    var cur: Key? = id
                    while let c = cur, c != "root" {
                        guard canvasRect(c).0.contains(px, py) else { return false }
                        cur = d[c]!.parent
                    }
                    return true
                }
                let winner = d.subtreeIDs("root").last(where: hittable)!
                XCTAssertEqual(d.hitTest(x: px, y: py), winner, "seed \(seed) at (\(px), \(py))")
            }
        }
    }

    // MARK: The chain

    func testChainGoesFromTheNodeUpToTheApplication() throws {
        let d = try build([(node("panel", [0, 0, 10, 10], undoScope: true), "root"), (node("field", [0, 0, 5, 5], focusable: true), "panel")])
        XCTAssertEqual(Responder.chain(from: .node("field"), in: d).map(\.id), ["field", "panel", "root", "document", "session", "application"])
        XCTAssertEqual(Responder.chain(from: nil, in: d).map(\.id), ["document", "session", "application"])
        XCTAssertEqual(Responder.chain(from: .session, in: d).map(\.id), ["session", "application"])
        XCTAssertEqual(Responder.named("application", in: d), .application)
        XCTAssertNil(Responder.named("ghost", in: d))
        XCTAssertEqual(d.undoScope(around: "field"), "panel")
        XCTAssertEqual(d.undoScope(around: "panel"), "panel")
        XCTAssertNil(d.undoScope(around: "root"))
        XCTAssertNil(d.undoScope(around: nil))
    }

    func testTheFirstLinkThatClaimsAnActionHandlesIt() throws {
        let d = try build([(node("panel", [0, 0, 10, 10], undoScope: true), "root"), (node("field", [0, 0, 5, 5], focusable: true), "panel")])
        // Context: which nodes have a selection; payload: a label for the handler.
        var table = ActionTable<Set<Key>, String>()
        table.register("undo", at: .node, payload: "scope-undo") { r, _ in
            guard case let .node(k) = r, d[k]!.undoScope else { return nil }
            return .init(enabled: false, title: "Undo")
        }
        table.register("undo", at: .document, payload: "doc-undo") { _, _ in .init(enabled: true, title: "Undo Move") }
        table.register("copy", at: .node, payload: "copy") { r, selected in
            guard case let .node(k) = r, selected.contains(k) else { return nil }
            return .init(enabled: true, title: "Copy")
        }
        table.register("quit", at: .application, payload: "quit") { _, _ in .init(enabled: true, title: "Quit") }

        let fromField = Responder.chain(from: .node("field"), in: d)
        let undo = try XCTUnwrap(table.resolve("undo", along: fromField, []))
        XCTAssertEqual(undo.responder, .node("panel"), "the nearest undo scope claims undo, even when it cannot undo")
        XCTAssertEqual(undo.verdict, .init(enabled: false, title: "Undo"))
        XCTAssertEqual(table.resolve("undo", along: Responder.chain(from: .node("root"), in: d), [])?.payload, "doc-undo")
        XCTAssertEqual(table.resolve("copy", along: fromField, ["field"])?.responder, .node("field"))
        XCTAssertNil(table.resolve("copy", along: fromField, []), "nobody claims: not handled")
        XCTAssertEqual(table.resolve("quit", along: fromField, [])?.responder, .application, "a new action needs no change to the walk")
        XCTAssertNil(table.resolve("quit", along: [.document], []), "a chain that does not reach the level")
        XCTAssertNil(table.resolve("fly", along: fromField, []))
    }

    // MARK: Presence

    func testSelectionsMoveThroughOthersTextEdits() throws {
        var d = Document()
        var spec = NodeSpec.text("t", "hello world")
        spec.focusable = true
        _ = try d.apply(.create(spec, parent: "root", index: 0), limits: Limits())
        let p = Presence(node: "t", selection: Selection(node: "t", start: 6, end: 11))
        var after = d
        let ins = Op.insert("t", pos: 0, text: Array(">> ".unicodeScalars))
        _ = try after.apply(ins, limits: Limits())
        XCTAssertEqual(p.after([ins], byThisTerminal: false, in: after).selection, Selection(node: "t", start: 9, end: 14))
        let atCaret = Op.insert("t", pos: 6, text: ["X"])
        XCTAssertEqual(Presence(node: "t", selection: .init(node: "t", start: 7, end: 7)).after([atCaret], byThisTerminal: true, in: after).selection?.start, 7,
                       "a terminal's own edits do not move its selection: its `select` already says where it is")
        XCTAssertEqual(Presence(node: "t", selection: .init(node: "t", start: 6, end: 6)).after([atCaret], byThisTerminal: false, in: after).selection?.start, 6,
                       "another's caret stays before text inserted at it")
        // Ahead-of-commit state (bob's remove(0, 6) not committed yet) must not clamp alice's caret:
        // the remove moves it later, from where it really is.
        var pending = after
        _ = try pending.apply(.remove("t", pos: 0, len: 6), limits: Limits())
        let atEnd = Presence(node: "t", selection: .init(node: "t", start: 14, end: 14))
        let other = Op.set("t", key: "color", value: "red")
        let kept = atEnd.after([other], byThisTerminal: false, in: pending, committed: after)
        XCTAssertEqual(kept.selection?.start, 14)
        XCTAssertEqual(kept.after([.remove("t", pos: 0, len: 6)], byThisTerminal: false, in: pending, committed: pending).selection?.start, 8)
        var gone = d
        _ = try gone.apply(.delete("t"), limits: Limits())
        XCTAssertEqual(p.after([.delete("t")], byThisTerminal: false, in: gone), Presence(), "focus on a deleted node is dropped")
        var unfocusable = d
        _ = try unfocusable.apply(.set("t", key: "focusable", value: false), limits: Limits())
        XCTAssertEqual(p.after([], byThisTerminal: false, in: unfocusable), Presence())
    }
}
