import RewindCore
import XCTest

/// The built-in chain actions without a server: who claims what, enabled or
/// not, and what each comes to.
final class EditingActionsTests: XCTestCase {
    let table = EditingActions.table()

    /// A panel (its own undo history) holding `field` ("hello"), and `note` outside; alice typed in the field.
    func ledger() throws -> DocumentLedger {
        var l = DocumentLedger(doc: "d")
        var panel = NodeSpec(id: "panel", kind: "view", frame: [0, 0, 100, 100])
        panel.undoScope = true
        var field = NodeSpec(id: "field", kind: "text", frame: [0, 0, 50, 20])
        field.focusable = true
        field.text = Array("hello".unicodeScalars)
        var note = NodeSpec(id: "note", kind: "text", frame: [0, 0, 50, 20])
        note.focusable = true
        for (i, ops) in [[Op.create(panel, parent: "root", index: 0), .create(note, parent: "root", index: 1)],
                         [.create(field, parent: "panel", index: 0)], [.insert("field", pos: 5, text: ["!"])]].enumerated() {
            let s = DocumentLedger.Submission(tx: "t\(i)", base: l.version, ops: ops, action: i == 2 ? "Typing" : nil, userID: 1,
                                              userName: "alice", client: "A", eventID: "e\(i)", time: Int64(i) * 10_000)
            _ = try l.append(s)
        }
        return l
    }

    func state(_ l: DocumentLedger, _ p: Presence, clipboard: String = "", paste: String? = nil) -> ChainState {
        ChainState(document: l.document, presence: p, history: l.history, user: 1, clipboard: Array(clipboard.unicodeScalars),
                   pasteText: paste.map { Array($0.unicodeScalars) }, locale: "en")
    }

    func perform(_ action: String, _ s: ChainState) -> (by: String, enabled: Bool, title: String, effect: ChainEffect?)? {
        let chain = Responder.chain(from: s.presence.node.map { .node($0) }, in: s.document)
        guard let claim = table.resolve(action, along: chain, s) else { return nil }
        return (claim.responder.id, claim.verdict.enabled, claim.verdict.title, claim.payload(claim.responder, s))
    }

    func testUndoBelongsToTheNearestUndoScopeAndIsTitledByItsTopGroup() throws {
        let l = try ledger()
        let inField = perform("undo", state(l, Presence(node: "field")))!
        XCTAssertEqual(inField.by, "panel")
        XCTAssertEqual(inField.title, "Undo Typing")
        XCTAssertEqual(inField.effect, .revert(.undo, scope: "panel"))
        let inNote = perform("undo", state(l, Presence(node: "note")))!
        XCTAssertEqual(inNote.by, "document")
        XCTAssertEqual(inNote.effect, .revert(.undo, scope: nil))
        let redo = perform("redo", state(l, Presence(node: "field")))!
        XCTAssertFalse(redo.enabled, "claimed but greyed out: nothing to redo")
        XCTAssertEqual(redo.title, "Redo")
    }

    func testDeleteRemovesTheSelectedTextOrTheFirstResponder() throws {
        let l = try ledger()
        let range = Selection(node: "field", start: 1, end: 3)
        let text = perform("delete", state(l, Presence(node: "field", selection: range)))!
        XCTAssertEqual(text.effect, .edit(ops: [.remove("field", pos: 1, len: 2)], action: "Delete", selection: range,
                                          caretAfter: Selection(node: "field", start: 1, end: 1)))
        let caret = perform("delete", state(l, Presence(node: "field", selection: Selection(node: "field", start: 2, end: 2))))!
        XCTAssertFalse(caret.enabled, "a bare caret deletes nothing, as in a text view")
        let node = perform("delete", state(l, Presence(node: "note")))!
        XCTAssertEqual(node.by, "document")
        XCTAssertEqual(node.effect, .edit(ops: [.delete("note")], action: "Delete", selection: nil, caretAfter: nil))
    }

    func testCopyThenPasteThroughThePasteboardOrGivenText() throws {
        let l = try ledger()
        let range = Selection(node: "field", start: 0, end: 4)
        XCTAssertEqual(perform("copy", state(l, Presence(node: "field", selection: range)))!.effect, .copy(Array("hell".unicodeScalars)))
        let caret = Selection(node: "note", start: 0, end: 0)
        XCTAssertFalse(perform("paste", state(l, Presence(node: "note", selection: caret)))!.enabled, "an empty pasteboard")
        let pasted = perform("paste", state(l, Presence(node: "field", selection: range), clipboard: "xy"))!
        XCTAssertEqual(pasted.effect, .edit(ops: [.remove("field", pos: 0, len: 4), .insert("field", pos: 0, text: ["x", "y"])],
                                            action: "Paste", selection: range, caretAfter: Selection(node: "field", start: 2, end: 2)))
        let given = perform("paste", state(l, Presence(node: "note", selection: caret), clipboard: "xy", paste: "abc"))!
        XCTAssertEqual(given.effect, .edit(ops: [.insert("note", pos: 0, text: ["a", "b", "c"])], action: "Paste", selection: caret,
                                           caretAfter: Selection(node: "note", start: 3, end: 3)))
    }

    func testSelectAllSelectsTheFirstRespondersText() throws {
        let l = try ledger()
        XCTAssertEqual(perform("select_all", state(l, Presence(node: "field")))!.effect, .select(Selection(node: "field", start: 0, end: 6)))
        XCTAssertFalse(perform("select_all", state(l, Presence(node: "note")))!.enabled, "nothing to select")
        XCTAssertNil(perform("select_all", state(l, Presence())), "no first responder: nobody claims it")
        XCTAssertEqual(EditingActions.defaultTitle("select_all", locale: "en"), "Select All")
    }
}
