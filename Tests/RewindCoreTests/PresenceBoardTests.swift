import RewindCore
import XCTest

/// Presence decisions without a server: what is announced, when, and whose
/// `prompt_state` may change.
final class PresenceBoardTests: XCTestCase {
    let doc: Document = {
        var d = Document()
        for (i, id) in ["t", "u"].enumerated() {
            var n = NodeSpec(id: Key(id), kind: "text", frame: [0, 0, 10, 10])
            n.focusable = true
            n.text = Array("hello world".unicodeScalars)  // long enough for the carets the edits move (positions are clamped to the text)
            _ = try! d.apply(.create(n, parent: "root", index: i), limits: Limits())
        }
        return d
    }()

    func event(_ ops: [Op], user: Int64 = 9) -> Event {
        Event(doc: "d", version: 2, id: "e", tx: "x", txDigest: "", userID: user, userName: "eve", client: "E", group: "g",
              kind: .edit, action: nil, base: 1, ops: ops, inverse: [], refers: nil, time: 0, meta: EventMeta())
    }

    func caret(_ node: Key, _ at: Int) -> Presence { Presence(node: node, selection: Selection(node: node, start: at, end: at)) }

    func testAChangeIsAnnouncedOnceAndAsksForThePromptState() {
        var board = PresenceBoard()
        XCTAssertEqual(board.set(1, caret("t", 2)), [.announce(terminal: 1, caret("t", 2)), .promptStateMayChange(terminal: 1)])
        XCTAssertEqual(board.set(1, caret("t", 2)), [], "the same place again says nothing")
        XCTAssertEqual(board.set(1, Presence()), [.announce(terminal: 1, Presence()), .promptStateMayChange(terminal: 1)], "blur")
        XCTAssertTrue(board.positions.isEmpty, "an empty presence is not kept")
    }

    func testLeavingAnnouncesOnlyWhatOthersMayHaveSeen() {
        var board = PresenceBoard()
        XCTAssertEqual(board.leave(1), [], "never focused: nothing to take back")
        _ = board.set(1, caret("t", 0))
        XCTAssertEqual(board.leave(1), [.announce(terminal: 1, Presence())])
        XCTAssertEqual(board.leave(1), [])
    }

    func testOthersTypingMovesACaretAnnouncedOncePerTurnAtItsFinalPlace() {
        var board = PresenceBoard()
        _ = board.set(1, caret("t", 3))
        for _ in 0..<3 {
            XCTAssertEqual(board.after(event([.insert("t", pos: 0, text: Array("ab".unicodeScalars))]), madeBy: { _ in false }, current: doc, committed: doc), [],
                           "a text edit moves carets quietly until the turn ends")
        }
        XCTAssertEqual(board[1], caret("t", 9))
        XCTAssertEqual(board.endOfTurn(), [.announce(terminal: 1, caret("t", 9))], "one announcement for three edits")
        XCTAssertEqual(board.endOfTurn(), [])
    }

    func testATerminalsOwnTypingDoesNotMoveItsCaret() {
        var board = PresenceBoard()
        _ = board.set(1, caret("t", 3))
        _ = board.after(event([.insert("t", pos: 0, text: Array("ab".unicodeScalars))]), madeBy: { $0 == 1 }, current: doc, committed: doc)
        XCTAssertEqual(board[1], caret("t", 3))
        XCTAssertEqual(board.endOfTurn(), [])
    }

    func testFocusOnADeletedNodeIsDroppedAndAnnouncedEvenWhenMovedCaretsAreQuiet() {
        var board = PresenceBoard(announcesMovedCarets: false)
        _ = board.set(1, caret("t", 1))
        _ = board.set(2, caret("u", 1))
        var gone = doc
        _ = try! gone.apply(.delete("t"), limits: Limits())
        let effects = board.after(event([.delete("t")]), madeBy: { _ in false }, current: gone, committed: gone)
        XCTAssertEqual(effects, [.promptStateMayChange(terminal: 1), .promptStateMayChange(terminal: 2)],
                       "a structural change may move every terminal's undo scope")
        XCTAssertEqual(board.endOfTurn(), [.announce(terminal: 1, Presence())], "focus lost is announced; 2 did not move")

        _ = board.set(2, caret("u", 1))
        _ = board.after(event([.insert("u", pos: 0, text: ["x"])]), madeBy: { _ in false }, current: doc, committed: doc)
        XCTAssertEqual(board[2], caret("u", 2))
        XCTAssertEqual(board.endOfTurn(), [], "quiet: a caret that only moved is not announced")
    }

    /// Only what can move an undo scope asks for focused terminals' prompt
    /// state: a prop or a frame set by anyone does not (it cost every focused
    /// terminal a prompt state per commit).
    func testOnlyMovesDeletesAndScopeOrFocusChangesAskForEveryPromptState() {
        var board = PresenceBoard(announcesMovedCarets: false)
        _ = board.set(1, caret("t", 1))
        _ = board.set(2, caret("u", 1))
        let both: [PresenceBoard.Effect] = [.promptStateMayChange(terminal: 1), .promptStateMayChange(terminal: 2)]
        func effects(_ ops: [Op]) -> [PresenceBoard.Effect] {
            board.after(event(ops), madeBy: { _ in false }, current: doc, committed: doc)
        }
        XCTAssertEqual(effects([.set("t", key: "color", value: "red")]), [])
        XCTAssertEqual(effects([.set("t", key: "frame", value: [0, 0, 5, 5])]), [])
        XCTAssertEqual(effects([.create(NodeSpec(id: "v", kind: "text", frame: [0, 0, 1, 1]), parent: "root", index: 2)]), [])
        XCTAssertEqual(effects([.set("root", key: "undoScope", value: true)]), both)
        XCTAssertEqual(effects([.set("u", key: "focusable", value: true)]), both, "focus on a node made unfocusable is dropped")
        XCTAssertEqual(effects([.move("u", parent: "t", index: 0)]), both)
        XCTAssertEqual(effects([.set("t", key: "color", value: "blue"), .delete("v")]), both)
    }

    func testLeavingAfterAMoveThisTurnIsStillAnnounced() {
        var board = PresenceBoard()
        _ = board.set(1, caret("t", 1))
        var gone = doc
        _ = try! gone.apply(.delete("t"), limits: Limits())
        _ = board.after(event([.delete("t")]), madeBy: { _ in false }, current: gone, committed: gone)
        XCTAssertEqual(board.leave(1), [.announce(terminal: 1, Presence())], "the others may not have seen it lose focus yet")
        XCTAssertEqual(board.endOfTurn(), [])
    }
}

extension PresenceBoardTests {
    func testOtherInstancesTerminalsAreAnnouncedOnChangeAndLeaveWhenTheirInstanceIsGone() {
        var board = PresenceBoard()
        let here = caret("t", 1)
        XCTAssertEqual(board.setRemote(instance: 7, terminal: 3, user: "bob", client: "B", here),
                       [.announceRemote(user: "bob", client: "B", here)])
        XCTAssertEqual(board.setRemote(instance: 7, terminal: 3, user: "bob", client: "B", here), [], "the same notice again")
        _ = board.setRemote(instance: 8, terminal: 3, user: "carol", client: "C", caret("u", 0))
        XCTAssertEqual(board.remote.count, 2, "terminal 3 of two instances: two terminals")
        XCTAssertEqual(board.dropRemote(notIn: [8]), [.announceRemote(user: "bob", client: "B", Presence())], "instance 7 is gone")
        XCTAssertEqual(board.setRemote(instance: 8, terminal: 3, user: "carol", client: "C", Presence()),
                       [.announceRemote(user: "carol", client: "C", Presence())])
        XCTAssertTrue(board.remote.isEmpty)
    }
}
