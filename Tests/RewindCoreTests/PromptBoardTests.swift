@testable import RewindCore
import XCTest

/// Who holds which prompt, and what is pushed, without a server.
final class PromptBoardTests: XCTestCase {
    func prompt(_ id: String, level: Prompt.Level = .normal, cancel: String? = "cancel") throws -> Prompt {
        var actions = [Prompt.Action(id: "undo", title: "Undo", style: .default)]
        if let cancel { actions.append(.init(id: cancel, title: "Cancel", style: .cancel)) }
        return try Prompt(id: id, title: id, level: level, reason: "shake", actions: actions)
    }

    func testPresentingShowsWhereTheLevelIsFreeElseWaitsAndDismissShowsTheNext() throws {
        var board = PromptBoard()
        XCTAssertEqual(try board.present(prompt("p1"), doc: "d", to: [1, 2]),
                       [.show("p1", terminal: 1), .presentedChanged(terminal: 1), .show("p1", terminal: 2), .presentedChanged(terminal: 2)])
        XCTAssertEqual(try board.present(prompt("p2"), doc: "d", to: [1]), [], "waits behind p1 on 1: nothing pushed")
        XCTAssertEqual(board.presented(1, doc: "d"), ["p1"])
        XCTAssertEqual(board.presented(1, doc: "other"), [], "about another document")
        XCTAssertEqual(board.dismiss("p1"), [.dismiss("p1", terminal: 1), .show("p2", terminal: 1), .presentedChanged(terminal: 1),
                                             .dismiss("p1", terminal: 2), .presentedChanged(terminal: 2)])
        XCTAssertNil(board.held["p1"])
        XCTAssertEqual(board.dismiss("p1"), [], "answered once")
    }

    func testAFullQueueAnywhereRefusesTheWholePresentation() throws {
        var board = PromptBoard(waitingLimit: 1)
        _ = try board.present(prompt("a"), doc: nil, to: [1])
        _ = try board.present(prompt("b"), doc: nil, to: [1])
        XCTAssertThrowsError(try board.present(prompt("c"), doc: nil, to: [2, 1])) { XCTAssertEqual(($0 as? RewindError)?.code, .rateLimited) }
        XCTAssertNil(board.held["c"])
        XCTAssertEqual(board.queue(of: 2).all, [], "all or nothing: 2 did not keep it")
    }

    func testAPromptNobodyHoldsAnyMoreIsCancelledWithItsCancelAction() throws {
        var board = PromptBoard()
        _ = try board.present(prompt("shared"), doc: "d", to: [1, 2])
        _ = try board.present(prompt("mine", cancel: "never_mind"), doc: "d", to: [1])
        XCTAssertEqual(board.leave(1, doc: "d", connected: true),
                       [.cancel("mine", action: "never_mind", by: 1), .dismiss("shared", terminal: 1), .presentedChanged(terminal: 1)],
                       "the waiting one goes first, without being shown; the shared one stays held by 2")
        XCTAssertEqual(board.held["shared"]?.terminals, [2])
        XCTAssertEqual(board.leave(2, doc: nil, connected: false), [.cancel("shared", action: "cancel", by: 2)],
                       "a terminal that went is pushed nothing")
        XCTAssertTrue(board.held.isEmpty)
    }

    func testClosingOneDocumentKeepsPromptsAboutOthers() throws {
        var board = PromptBoard()
        _ = try board.present(prompt("a", level: .alert), doc: "d", to: [1])
        _ = try board.present(prompt("b"), doc: "e", to: [1])
        XCTAssertEqual(board.leave(1, doc: "e", connected: true).first, .dismiss("b", terminal: 1))
        XCTAssertEqual(board.presented(1, doc: "d"), ["a"])
    }
}

/// Prompt ids: counted per document, so a written-down session can name the
/// first prompt of its new document whatever the server showed before.
final class PromptIDTests: XCTestCase {
    private func prompt(_ id: String) -> Prompt {
        UndoPrompts.error(id: id, RewindError(.badRequest, "x"), request: "submit", re: 1, locale: "en")
    }

    func testIdsAreCountedPerDocumentAndNeverRepeatWhileHeld() throws {
        var board = PromptBoard()
        XCTAssertEqual(board.newID(), "p1")
        XCTAssertEqual(board.newID(doc: "a"), "a:p1")
        XCTAssertEqual(board.newID(doc: "b"), "b:p1", "another document starts at 1 too")
        XCTAssertEqual(board.newID(doc: "a"), "a:p2")
        XCTAssertEqual(board.newID(), "p2")
        _ = try board.present(prompt("a:p3"), doc: "a", to: [1])
        board.forget(doc: "a")
        XCTAssertEqual(board.newID(doc: "a"), "a:p4", "a held prompt keeps its document's count, and its id is skipped")
        _ = board.dismiss("a:p3")
        board.forget(doc: "a")
        XCTAssertEqual(board.newID(doc: "a"), "a:p1", "an unloaded document with nothing held starts again")
        // Even counting again, an id still held is never given twice.
        _ = try board.present(prompt("c:p1"), doc: "c", to: [2])
        XCTAssertEqual(board.newID(doc: "c"), "c:p2")
    }
}
