import Foundation
import XCTest
@testable import RewindCore

final class UndoTests: XCTestCase {
    func assertSameHistory(_ a: UndoHistory, _ b: UndoHistory, _ msg: String = "", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.stacks, b.stacks, "stacks differ \(msg)", file: file, line: line)
        XCTAssertEqual(a.groups, b.groups, "groups differ \(msg)", file: file, line: line)
        XCTAssertEqual(a.open.mapValues { $0.map { $0?.string } }, b.open.mapValues { $0.map { $0?.string } }, file: file, line: line)
    }

    /// The touch index's short way (an event whose ops and inverse change one
    /// node) names exactly the nodes the long way does, over random ops of
    /// every kind, alone and in twos.
    func testTheTouchIndexShortWayNamesWhatTheLongWayDoes() throws {
        var gen = OpGenerator(seed: 11)
        var doc = Document()
        let history = UndoHistory()
        var short = 0, long = 0
        for i in 0..<3_000 {
            let ops = (0..<(i % 3 == 0 ? 2 : 1)).map { _ in gen.op(on: doc) }
            guard let applied = try? doc.apply(ops, limits: Limits()) else { continue }
            let entry = UndoHistory.Logged(user: 1, ops: applied.ops, inverse: applied.inverse, version: Int64(i + 1))
            let nodes = history.nodes(of: entry)
            if let only = UndoHistory.onlyNode(entry) {
                XCTAssertEqual([only], nodes, "\(applied.ops)")
                short += 1
            } else {
                long += 1
            }
        }
        XCTAssertGreaterThan(short, 500)
        XCTAssertGreaterThan(long, 500)
    }

    /// An edit named by its own id starts its group without a look-up; in a
    /// log whose ids repeat (imported by hand), one that names a group already
    /// there still joins it, as every other edit does.
    func testAnEditWhoseIdNamesAGroupAlreadyThereJoinsIt() {
        func edit(_ version: Int64, id: String, group: String) -> Event {
            Event(doc: "d", version: version, id: id, tx: "t\(version)", txDigest: "", userID: 1, userName: "u", client: "c",
                  group: group, kind: .edit, action: "Paint", base: version - 1, ops: [.set("root", key: "k", value: .int(version))],
                  inverse: [.set("root", key: "k", value: .null)], refers: nil, time: version)
        }
        var h = UndoHistory()
        h.record(edit(1, id: "a", group: "a"))
        h.record(edit(2, id: "b", group: "a"))  // joins a
        h.record(edit(3, id: "a", group: "a"))  // the id again: still joins a
        h.record(edit(4, id: "c", group: "c"))
        XCTAssertEqual(h.groups[UndoHistory.GroupKey(id: "a", scope: nil)]?.edits, [1, 2, 3])
        XCTAssertEqual(h.groups[UndoHistory.GroupKey(id: "c", scope: nil)]?.edits, [4])
        XCTAssertEqual(h.stacks(user: 1, scope: nil).undo.map(\.id), ["a", "c"])
    }

    // MARK: Properties over random multi-user sequences

    /// Three users edit at random (some in explicit groups); users undo and redo
    /// at random, and now and then choose their undo levels. Undo then redo leaves
    /// the document unchanged, as does a run of undos then as many redos; no stack
    /// is longer than its user's levels; replay of the log gives the same document
    /// and the same stacks.
    func testUndoRedoRoundTripsAndReplayEqualsLive() throws {
        for seed in 0..<80 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var sim = UndoSim(levels: 12)
            for step in 0..<60 {
                let user = Int64.random(in: 1...3, using: &gen.rng)
                switch Int.random(in: 0..<11, using: &gen.rng) {
                case 10:
                    sim.mark(.levels, user, group: Bool.random(using: &gen.rng) ? GroupMark.documentLevels : nil,
                             action: [nil, "1", "3", "8", "40"].randomElement(using: &gen.rng)!)
                case 0..<5:
                    _ = try? sim.edit(user, [gen.op(on: sim.doc)], after: Int64.random(in: 0...800, using: &gen.rng))
                case 5:
                    let g = sim.nextID()
                    for _ in 0..<Int.random(in: 1...3, using: &gen.rng) {
                        _ = try? sim.edit(user, [gen.op(on: sim.doc)], group: g)
                    }
                    sim.mark(.close, user, group: g, action: "Drag")
                case 6 where step % 7 == 0:
                    // Forgetting what no group can reach changes nothing a user can see.
                    sim.ledger.compactHistory()
                default:
                    let k = Int.random(in: 1...3, using: &gen.rng)
                    let before = sim.doc
                    var undone = 0
                    for _ in 0..<k {
                        guard (try? sim.undo(user, policy: .force)) != nil else { break }
                        undone += 1
                    }
                    if Bool.random(using: &gen.rng) {
                        for _ in 0..<undone { _ = try sim.redo(user, policy: .force) }
                        XCTAssertEqual(sim.doc, before, "seed \(seed) step \(step): \(undone) undos then redos changed the document")
                    }
                }
                assertPromptTopsMatchTheGroups(sim.history, "seed \(seed) step \(step)")
                for (k, st) in sim.history.stacks {
                    XCTAssertLessThanOrEqual(max(st.undo.count, st.redo.count), sim.history.levels(for: k.user), "seed \(seed) step \(step)")
                }
            }
            let replayed = try sim.replayed()
            XCTAssertEqual(replayed.document, sim.doc, "seed \(seed)")
            assertSameHistory(replayed.history, sim.history, "seed \(seed)")
        }
    }

    /// What a prompt shows (`tops`, read in place) is what the top groups say.
    private func assertPromptTopsMatchTheGroups(_ h: UndoHistory, _ what: String) {
        for user in 0...4 as ClosedRange<Int64> {
            for scope in Set(h.stacks.keys.map(\.scope) + [nil]) {
                let tops = h.tops(user: user, scope: scope)
                let undo = h.topUndo(user: user, scope: scope), redo = h.topRedo(user: user, scope: scope)
                XCTAssertEqual(tops.canUndo, undo != nil, what)
                XCTAssertEqual(tops.undoAction, undo?.action, what)
                XCTAssertEqual(tops.canRedo, redo != nil, what)
                XCTAssertEqual(tops.redoAction, redo?.action, what)
            }
        }
    }

    /// With no concurrent edits, undoing all of a user's groups returns the
    /// document to its state before them, and redoing them all comes back.
    func testUndoingEverythingRestoresTheStartWithoutConcurrentEdits() throws {
        for seed in 100..<160 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var sim = UndoSim()
            func op(on d: Document) -> Op {
                let op = gen.op(on: d)
                // Scopes stay put here: every group lands in the document's history.
                if case .set(_, "undoScope", _) = op { return .set(Document.rootID, key: "k", value: 1) }
                return op
            }
            for _ in 0..<5 { _ = try? sim.edit(9, [op(on: sim.doc)]) }  // someone else's document to start from
            let start = sim.doc
            var groups = 0
            var statesBefore: [(Document, Event)] = []
            for _ in 0..<30 {
                let ops = (0..<Int.random(in: 1...3, using: &gen.rng)).reduce(into: [Op]()) { ops, _ in
                    var d = sim.doc
                    for o in ops { _ = try? d.apply(o, limits: Limits()) }
                    ops.append(op(on: d))
                }
                let before = sim.doc
                if let e = try? sim.edit(1, ops, after: 1_000) { groups += 1; statesBefore.append((before, e)) }
            }
            let end = sim.doc
            var undone = 0
            var lastError = ""
            while true {
                do {
                    let r = try sim.undo(1, policy: .prompt); undone += 1
                    let (want, e) = statesBefore[statesBefore.count - undone]
                    if sim.doc != want && ProcessInfo.processInfo.environment["UNDO_DEBUG"] != nil {
                        print("seed \(seed) undo #\(undone) of v\(e.version) ops \(e.ops) inverse \(e.inverse)\n  applied \(r.event!.ops)\n  want \(want.json)\n  got  \(sim.doc.json)")
                        break
                    }
                } catch { lastError = "\(error)"; break }
            }
            XCTAssertEqual(undone, groups, "seed \(seed): \(lastError)")
            XCTAssertTrue(sim.doc == start, "seed \(seed): undoing everything did not restore the start")
            while (try? sim.redo(1, policy: .prompt)) != nil {}
            XCTAssertTrue(sim.doc == end, "seed \(seed): redoing everything did not come back")
        }
    }

    /// Others' later changes survive a user's undo, whatever they were.
    func testOthersLaterChangesSurviveAnUndo() throws {
        for seed in 200..<260 as Range<UInt64> {
            var gen = OpGenerator(seed: seed)
            var sim = UndoSim()
            try sim.edit(1, [.create(.text("mine", "abc"), parent: "root", index: 0)])
            try sim.edit(2, [.create(.text("theirs", "xyz"), parent: "root", index: 1)])
            try sim.edit(1, [.set("mine", key: "color", value: "red"), .insert("mine", pos: 3, text: Array("def".unicodeScalars))])
            // User 2 works on its own node and the root afterwards.
            for _ in 0..<10 {
                var op = gen.op(on: sim.doc)
                if op.node == "mine" || sim.doc.isInSubtree(op.node, of: "mine") { continue }
                if case .delete = op { continue }
                if case let .move(n, p, _) = op, sim.doc.isInSubtree(p, of: "mine") || n == "theirs" { continue }
                if case let .create(s, p, i) = op, sim.doc.isInSubtree(p, of: "mine") { op = .create(s, parent: "root", index: i) }
                _ = try? sim.edit(2, [op])
            }
            let theirs = sim.doc.subtreeIDs("theirs").map { sim.doc[$0]! }
            let root = sim.doc["root"]!.props
            try sim.undo(1)
            XCTAssertEqual(sim.doc.text("mine"), "abc")
            XCTAssertNil(sim.doc["mine"]!.props["color"])
            XCTAssertEqual(sim.doc.subtreeIDs("theirs").map { sim.doc[$0]! }, theirs, "seed \(seed)")
            XCTAssertEqual(sim.doc["root"]!.props, root, "seed \(seed)")
        }
    }

    // MARK: Selective text undo

    func testUndoKeepsOthersTextTypedInsideAndAround() throws {
        var sim = UndoSim()
        try sim.edit(2, [.create(.text("t", "[]"), parent: "root", index: 0)])
        try sim.edit(1, [.insert("t", pos: 1, text: Array("hello".unicodeScalars))])
        try sim.edit(2, [.insert("t", pos: 3, text: Array("XY".unicodeScalars))])  // inside user 1's text
        try sim.edit(2, [.insert("t", pos: 0, text: Array(">".unicodeScalars))])
        XCTAssertEqual(sim.doc.text("t"), ">[heXYllo]")
        let r = try sim.undo(1)
        XCTAssertEqual(sim.doc.text("t"), ">[XY]")
        XCTAssertTrue(r.conflicts.isEmpty)
        try sim.redo(1)
        XCTAssertEqual(sim.doc.text("t"), ">[heXYllo]")
    }

    /// Issue 12: removing text someone else already removed takes nothing
    /// from them, so it is no conflict (SPEC section 4 transforms text), as in Yjs and Loro.
    func testUndoingAnInsertRemovesWhatIsLeftOfItWithoutAConflict() throws {
        var sim = UndoSim()
        try sim.edit(1, [.create(.text("t", ""), parent: "root", index: 0)], after: 1)
        try sim.edit(1, [.insert("t", pos: 0, text: Array("abcdef".unicodeScalars))], after: 10_000)
        try sim.edit(2, [.remove("t", pos: 2, len: 2)])
        XCTAssertEqual(sim.doc.text("t"), "abef")
        let undone = try sim.undo(1, policy: .prompt)
        XCTAssertEqual(sim.doc.text("t"), "", "what is left of the insert goes")
        XCTAssertEqual(undone.conflicts, [])
        let redone = try sim.redo(1, policy: .prompt)
        XCTAssertEqual(sim.doc.text("t"), "abef", "redo brings back what the undo took, not what the other user removed")
        XCTAssertEqual(redone.conflicts, [])
    }

    /// The scripted case of issue 12: A types "hello world", B removes "world", A undoes.
    func testUndoOfTypingAfterAnotherRemovedPartOfItMatchesYjsAndLoro() throws {
        var sim = UndoSim()
        try sim.edit(2, [.create(.text("t", ""), parent: "root", index: 0)], after: 1)
        try sim.edit(1, [.insert("t", pos: 0, text: Array("hello world".unicodeScalars))], after: 10_000)
        try sim.edit(2, [.remove("t", pos: 6, len: 5)], after: 10_000)
        XCTAssertEqual(sim.doc.text("t"), "hello ")
        XCTAssertEqual(try sim.undo(1, policy: .prompt).conflicts, [])
        XCTAssertEqual(sim.doc.text("t"), "")
    }

    func testReinsertingTextIntoANodeThatIsGoneIsStillAConflict() throws {
        var sim = UndoSim()
        try sim.edit(2, [.create(.text("t", "abc"), parent: "root", index: 0)], after: 1)
        try sim.edit(1, [.remove("t", pos: 0, len: 3)], after: 10_000)
        try sim.edit(2, [.delete("t")], after: 10_000)
        XCTAssertThrowsError(try sim.undo(1, policy: .prompt)) { e in
            let c = (e as! RewindError).details?.objectValue?["conflicts"]?.arrayValue?.first?.objectValue
            XCTAssertEqual(c?["reason"], "deleted")
        }
    }

    // MARK: Conflict policies

    func testConflictPolicies() throws {
        func setup() throws -> UndoSim {
            var sim = UndoSim()
            try sim.edit(1, [.create(NodeSpec(id: "n", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0)])
            try sim.edit(1, [.set("n", key: "color", value: "red"), .set("n", key: "size", value: 2)])
            try sim.edit(2, [.set("n", key: "color", value: "blue")])
            return sim
        }
        var sim = try setup()
        XCTAssertThrowsError(try sim.undo(1)) { XCTAssertEqual(($0 as! RewindError).code, .conflict) }
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).undo.count, 2, "a prompted undo leaves the stack alone")

        sim = try setup()
        let skipped = try sim.undo(1, policy: .skip)
        XCTAssertEqual(skipped.skipped.map(\.reason), [.set])
        XCTAssertEqual(sim.doc["n"]!.props["color"], "blue", "skip keeps the other user's value")
        XCTAssertNil(sim.doc["n"]!.props["size"], "the op without conflict is undone")

        sim = try setup()
        let forced = try sim.undo(1, policy: .force)
        XCTAssertTrue(forced.skipped.isEmpty)
        XCTAssertNil(sim.doc["n"]!.props["color"], "force reverts it anyway")
        XCTAssertEqual(try sim.replayed().document, sim.doc)
    }

    func testUndoOfANodeSomeoneElseDeletedIsSkippedAndStillRecorded() throws {
        var sim = UndoSim()
        try sim.edit(1, [.create(NodeSpec(id: "n", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0)])
        try sim.edit(1, [.move("n", parent: "root", index: 0), .set("n", key: "k", value: 1)])
        try sim.edit(2, [.delete("n")])
        let r = try sim.undo(1, policy: .skip)
        XCTAssertEqual(Set(r.skipped.map(\.reason)), [.deleted])
        XCTAssertEqual(r.event?.ops, [])
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).redo.count, 1, "an all-skipped undo is still recorded")
        XCTAssertEqual(try sim.replayed().history.stacks, sim.history.stacks)
    }

    // MARK: Grouping and coalescing

    func testTypingCoalescesPerTerminalWithinTheWindow() throws {
        var sim = UndoSim()
        try sim.edit(1, [.create(.text("t"), parent: "root", index: 0)])
        for (i, ch) in "abc".unicodeScalars.enumerated() {
            try sim.edit(1, [.insert("t", pos: i, text: [ch])], client: "a", after: 200)
        }
        try sim.edit(1, [.insert("t", pos: 3, text: ["d"])], client: "a", after: 900)  // window passed
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).undo.count, 3)
        XCTAssertEqual(sim.titles(1).0, "Undo Typing")
        XCTAssertEqual(sim.titles(1, locale: "ja").0, "入力を取り消す")
        XCTAssertEqual(sim.titles(1, locale: "zh-Hant").0, "還原「輸入」")
        try sim.undo(1)
        XCTAssertEqual(sim.doc.text("t"), "abc")
        try sim.undo(1)
        XCTAssertEqual(sim.doc.text("t"), "", "the three quick inserts are one Typing group")
        XCTAssertEqual(sim.titles(1).1, "Redo Typing")
    }

    func testTwoTerminalsOfOneUserKeepSeparateGroups() throws {
        var sim = UndoSim()
        try sim.edit(1, [.create(.text("t"), parent: "root", index: 0),
                         .create(NodeSpec(id: "box", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 1)])
        let drag = "drag-1"
        try sim.edit(1, [.set("box", key: "frame", value: [1, 1, 1, 1])], client: "A", after: 10, group: drag)
        try sim.edit(1, [.insert("t", pos: 0, text: ["h"])], client: "B", after: 10)
        try sim.edit(1, [.set("box", key: "frame", value: [2, 2, 1, 1])], client: "A", after: 10, group: drag)
        try sim.edit(1, [.insert("t", pos: 1, text: ["i"])], client: "B", after: 10)
        // B's typing is on the stack; A's drag is not until it closes.
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).undo.count, 2)
        sim.mark(.close, 1, group: drag, action: "Move")
        XCTAssertEqual(sim.titles(1).0, "Undo Move", "the stack is ordered by closing time")
        try sim.undo(1)
        XCTAssertEqual(sim.doc["box"]!.frame, [0, 0, 1, 1])
        XCTAssertEqual(sim.doc.text("t"), "hi")
        try sim.undo(1)
        XCTAssertEqual(sim.doc.text("t"), "", "typing from B is one group")
        assertSameHistory(try sim.replayed().history, sim.history)
    }

    func testUnnamedGroupsGetTheServersNamesAndRenamesAreRecorded() throws {
        var sim = UndoSim()
        try sim.edit(1, [.create(NodeSpec(id: "n", kind: "view", frame: [0, 0, 1, 1]), parent: "root", index: 0)])
        XCTAssertEqual(sim.titles(1).0, "Undo")
        try sim.edit(1, [.move("n", parent: "root", index: 0)])
        XCTAssertEqual(sim.titles(1).0, "Undo Move")
        let top = sim.history.topUndo(user: 1, scope: nil)!
        sim.mark(.rename, 1, group: top.key.id, action: "Nudge")
        XCTAssertEqual(sim.titles(1).0, "Undo Nudge")
        XCTAssertEqual(sim.titles(1, locale: "zh-Hans").0, "撤销Nudge", "client names are not translated")
        try sim.edit(1, [.delete("n")])
        XCTAssertEqual(sim.titles(1, locale: "zh-Hans").0, "撤销删除")
        assertSameHistory(try sim.replayed().history, sim.history)
    }

    func testANewEditClearsOnlyThatUsersRedoStack() throws {
        var sim = UndoSim()
        try sim.edit(1, [.set("root", key: "a", value: 1)])
        try sim.edit(2, [.set("root", key: "b", value: 1)])
        try sim.undo(1)
        try sim.undo(2)
        try sim.edit(2, [.set("root", key: "c", value: 1)])
        XCTAssertEqual(sim.history.stacks(user: 2, scope: nil).redo.count, 0)
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).redo.count, 1)
        try sim.redo(1)
        XCTAssertEqual(sim.doc["root"]!.props["a"], 1)
    }

    func testLevelsAndClear() throws {
        var sim = UndoSim(levels: 3)
        for i in 0..<5 { try sim.edit(1, [.set("root", key: "k", value: .int(Int64(i)))]) }
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).undo.count, 3)
        for _ in 0..<3 { try sim.undo(1) }
        XCTAssertThrowsError(try sim.undo(1)) { XCTAssertEqual(($0 as! RewindError).code, .notFound) }
        XCTAssertEqual(sim.doc["root"]!.props["k"], 1)
        sim.mark(.clear, 1)
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil), UndoHistory.Stacks())
        assertSameHistory(try sim.replayed().history, sim.history)
    }

    /// `set_undo_levels` as a `levels` mark: lowering drops the user's oldest groups at
    /// once (others' untouched), raising brings nothing back, the server's levels cap the
    /// choice, null returns to the default; replay and a snapshot hold the same.
    func testLevelsPerUserSetLoweredRaisedAndReplayed() throws {
        var sim = UndoSim(levels: 10)
        for i in 0..<6 {
            try sim.edit(1, [.set("root", key: "a", value: .int(Int64(i)))])
            try sim.edit(2, [.set("root", key: "b", value: .int(Int64(i)))])
        }
        XCTAssertEqual(sim.history.levels(for: 1), 10)
        let oldest = sim.history.stacks(user: 1, scope: nil).undo
        sim.mark(.levels, 1, action: "2")
        XCTAssertEqual(sim.history.levels(for: 1), 2)
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).undo, Array(oldest.suffix(2)), "lowered: the two newest kept")
        XCTAssertEqual(sim.history.stacks(user: 2, scope: nil).undo.count, 6, "another user's stacks untouched")
        XCTAssertNil(sim.history.groups[oldest[0]], "the dropped groups are gone, not just unlisted")
        sim.mark(.levels, 1, action: "5")
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).undo.count, 2, "raised: nothing dropped comes back")
        for i in 0..<5 { try sim.edit(1, [.set("root", key: "a", value: .int(Int64(10 + i)))]) }
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).undo.count, 5, "then it keeps five")
        sim.mark(.levels, 1, action: "50")
        XCTAssertEqual(sim.history.levels(for: 1), 10, "never above the server's levels")
        sim.mark(.levels, 1, action: "3")
        sim.mark(.levels, 2, action: "1")
        XCTAssertEqual(sim.history.stacks(user: 2, scope: nil).undo.count, 1)
        try sim.undo(2)
        XCTAssertEqual(sim.history.stacks(user: 2, scope: nil).redo.count, 1, "redo is kept to the same levels")
        XCTAssertThrowsError(try sim.undo(2)) { XCTAssertEqual(($0 as! RewindError).code, .notFound) }
        sim.mark(.levels, 1, action: nil)
        XCTAssertEqual(sim.history.levels(for: 1), 10, "null: back to the server's default")
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).undo.count, 3)

        // The owner's cap on the document: everyone's stacks, whatever they chose.
        sim.mark(.levels, 1, group: GroupMark.documentLevels, action: "2")
        XCTAssertEqual(sim.history.documentLevels, 2)
        XCTAssertEqual(sim.history.levels(for: 1), 2)
        XCTAssertEqual(sim.history.levels(for: 2), 1, "a user's lower choice stands")
        XCTAssertEqual(sim.history.levels(for: 3), 2, "a user who chose nothing: the cap")
        XCTAssertEqual(sim.history.stacks(user: 1, scope: nil).undo.count, 2)
        sim.mark(.levels, 1, group: GroupMark.documentLevels, action: nil)
        XCTAssertNil(sim.history.documentLevels)
        XCTAssertEqual(sim.history.levels(for: 3), 10)

        let replayed = try sim.replayed().history
        assertSameHistory(replayed, sim.history, "replay")
        XCTAssertEqual(replayed.userLevels, sim.history.userLevels)
        XCTAssertEqual(replayed.documentLevels, sim.history.documentLevels)
        let restored = try UndoHistory(snapshot: sim.history.snapshotJSON, floor: 1)
        XCTAssertEqual(restored.userLevels, sim.history.userLevels, "kept in snapshots")
        XCTAssertEqual(restored.levels(for: 2), 1)
        // A snapshot from before levels per user (no `user_levels`) still reads.
        var old = sim.history.snapshotJSON.objectValue!
        old.members.removeAll { $0.key == "user_levels" }
        XCTAssertEqual(try UndoHistory(snapshot: .object(old), floor: 1).userLevels, [:])
    }

    // MARK: Scopes

    func testEditsBelongToTheInnermostUndoScope() throws {
        var sim = UndoSim()
        var panel = NodeSpec(id: "panel", kind: "view", frame: [0, 0, 1, 1])
        panel.undoScope = true
        panel.children = [.text("field")]
        try sim.edit(1, [.create(panel, parent: "root", index: 0), .create(.text("title"), parent: "root", index: 1)])
        let inPanel = try sim.edit(1, [.insert("field", pos: 0, text: ["x"])])
        XCTAssertEqual(inPanel.meta.scope, "panel")
        let both = try sim.edit(1, [.insert("field", pos: 0, text: ["y"]), .insert("title", pos: 0, text: ["z"])])
        XCTAssertNil(both.meta.scope, "touching nodes inside and outside the panel: the document's scope")
        XCTAssertEqual(sim.history.stacks(user: 1, scope: "panel").undo.count, 1)
        try sim.undo(1, scope: "panel")
        XCTAssertEqual(sim.doc.text("field"), "y")
        XCTAssertEqual(sim.doc.text("title"), "z", "the document's history is untouched")
    }

    // MARK: Selection and idempotency

    func testSelectionComesBackThroughOthersEditsAndSurvivesARoundTrip() throws {
        var sim = UndoSim()
        try sim.edit(2, [.create(.text("t", "hello"), parent: "root", index: 0)])
        try sim.edit(1, [.insert("t", pos: 5, text: Array(" world".unicodeScalars))],
                     selection: Selection(node: "t", start: 5, end: 5))
        try sim.edit(2, [.insert("t", pos: 0, text: Array(">> ".unicodeScalars))])
        let u = try sim.undo(1)
        XCTAssertEqual(u.selection, Selection(node: "t", start: 8, end: 8))
        XCTAssertEqual(u.action, "Typing")
        let r = try sim.redo(1)
        XCTAssertEqual(sim.doc.text("t"), ">> hello world")
        XCTAssertEqual(r.selection, Selection(node: "t", start: 14, end: 14))
        let u2 = try sim.undo(1)
        XCTAssertEqual(u2.selection, u.selection)
    }

    // Issue 12: the selection an undo hands back is the one the terminal had,
    // moved only through others' later edits.

    func testUndoOfDeletingASelectedRangeGivesTheRangeBack() throws {
        var sim = UndoSim()
        try sim.edit(2, [.create(.text("t", "hello"), parent: "root", index: 0)], after: 1)
        let range = Selection(node: "t", start: 1, end: 4)
        try sim.edit(1, [.remove("t", pos: 1, len: 3)], after: 10_000, selection: range)
        XCTAssertEqual(sim.doc.text("t"), "ho")
        let u = try sim.undo(1)
        XCTAssertEqual(sim.doc.text("t"), "hello")
        XCTAssertEqual(u.selection, range, "the range, not a caret")
        let r = try sim.redo(1)
        XCTAssertEqual(r.selection, Selection(node: "t", start: 1, end: 1), "after the delete: the caret where the text was")
        XCTAssertEqual(try sim.undo(1).selection, range, "undo, redo, undo: the same selection")
    }

    func testUndoOfTypingPutsTheCaretBack() throws {
        var sim = UndoSim()
        try sim.edit(2, [.create(.text("t", "ab"), parent: "root", index: 0)], after: 1)
        try sim.edit(1, [.insert("t", pos: 1, text: ["x"])], after: 10_000, selection: Selection(node: "t", start: 1, end: 1))
        try sim.edit(1, [.insert("t", pos: 2, text: ["y"])], after: 100, selection: Selection(node: "t", start: 2, end: 2))
        XCTAssertEqual(sim.doc.text("t"), "axyb")
        let u = try sim.undo(1)
        XCTAssertEqual(sim.doc.text("t"), "ab")
        XCTAssertEqual(u.selection, Selection(node: "t", start: 1, end: 1))
    }

    func testAnotherUsersEditBeforeTheRangeMovesTheRestoredSelectionByItsLength() throws {
        var sim = UndoSim()
        try sim.edit(2, [.create(.text("t", "hello"), parent: "root", index: 0)], after: 1)
        try sim.edit(1, [.remove("t", pos: 1, len: 3)], after: 10_000, selection: Selection(node: "t", start: 1, end: 4))
        try sim.edit(2, [.insert("t", pos: 0, text: Array("XY".unicodeScalars))], after: 10_000)
        try sim.edit(2, [.insert("t", pos: 4, text: ["!"])], after: 10_000)  // after the range: does not move it
        XCTAssertEqual(sim.doc.text("t"), "XYho!")
        let u = try sim.undo(1)
        XCTAssertEqual(sim.doc.text("t"), "XYhello!")
        XCTAssertEqual(u.selection, Selection(node: "t", start: 3, end: 6), "moved by the 2 characters inserted before it, not by the one after")
        let r = try sim.redo(1)
        XCTAssertEqual(sim.doc.text("t"), "XYho!")
        XCTAssertEqual(r.selection, Selection(node: "t", start: 3, end: 3))
        XCTAssertEqual(try sim.undo(1).selection, u.selection)
    }

    /// Property: with nobody else editing, undo hands back exactly the
    /// selection sent with the group's first edit, whatever the edit.
    func testUndoRestoresTheSentSelectionExactlyWhenNobodyElseEdited() throws {
        var rng = SeededRandom(seed: 12)
        for round in 0..<300 {
            var sim = UndoSim()
            let start = String(repeating: "abcdefgh", count: 2)
            try sim.edit(2, [.create(.text("t", start), parent: "root", index: 0)], after: 1)
            let a = Int(rng.next() % UInt64(start.count + 1)), b = Int(rng.next() % UInt64(start.count + 1))
            let sel = Selection(node: "t", start: min(a, b), end: max(a, b))
            let op: Op = sel.start == sel.end || rng.next() % 3 == 0
                ? .insert("t", pos: sel.start, text: Array("XYZ".unicodeScalars))
                : .remove("t", pos: sel.start, len: sel.end - sel.start)
            try sim.edit(1, [op], after: 10_000, selection: sel)
            let u = try sim.undo(1)
            XCTAssertEqual(sim.doc.text("t"), start)
            XCTAssertEqual(u.selection, sel, "round \(round): \(op)")
            _ = try sim.redo(1)
            XCTAssertEqual(try sim.undo(1).selection, sel, "round \(round), after a redo: \(op)")
        }
    }

    func testARetriedUndoWithTheSameTxAppendsNothing() throws {
        var sim = UndoSim()
        try sim.edit(1, [.set("root", key: "a", value: 1)])
        try sim.edit(1, [.set("root", key: "a", value: 2)])
        let first = try sim.revert(.undo, 1, tx: "u-1")
        let again = try sim.revert(.undo, 1, tx: "u-1")
        XCTAssertNil(again.event)
        XCTAssertEqual(again.version, first.version)
        XCTAssertEqual(sim.doc["root"]!.props["a"], 1)
    }
}
