import XCTest
@testable import RewindCore

final class PromptTests: XCTestCase {
    // MARK: Queueing and levels

    func testOnePromptPerLevelTheRestWaitInOrder() throws {
        var q = PromptQueue(limit: 3)
        XCTAssertTrue(try q.present("a", at: .normal))
        XCTAssertFalse(try q.present("b", at: .normal))
        XCTAssertFalse(try q.present("c", at: .normal))
        XCTAssertTrue(try q.present("x", at: .alert), "the alert level has its own slot, shown above")
        XCTAssertEqual(q.presented, ["x", "a"], "alert first: it is on top")
        XCTAssertEqual(q.all, ["x", "a", "b", "c"])

        XCTAssertEqual(q.remove("a").next, "b", "the next one waiting at that level is shown")
        XCTAssertEqual(q.presented, ["x", "b"])
        let waitingGone = q.remove("c")
        XCTAssertFalse(waitingGone.wasShown)
        XCTAssertNil(waitingGone.next)
        XCTAssertEqual(q.remove("b").next, nil)
        XCTAssertEqual(q.presented, ["x"])
        XCTAssertTrue(try q.present("a2", at: .normal))
        XCTAssertEqual(q.remove("nope").wasShown, false)
    }

    func testAFullLevelRefusesWithRateLimitedAndLosesNothing() throws {
        var q = PromptQueue(limit: 2)
        _ = try q.present("shown", at: .normal)
        _ = try q.present("w1", at: .normal)
        _ = try q.present("w2", at: .normal)
        XCTAssertThrowsError(try q.present("w3", at: .normal)) { XCTAssertEqual(($0 as? RewindError)?.code, .rateLimited) }
        XCTAssertTrue(try q.present("alert", at: .alert), "another level is not full")
        XCTAssertEqual(q.all, ["alert", "shown", "w1", "w2"])
        XCTAssertFalse(try q.present("w1", at: .normal), "presenting again is harmless")
        XCTAssertEqual(q.all.count, 4)
    }

    func testPromptsHaveAtMostOneCancel() {
        let c = Prompt.Action(id: "cancel", title: "Cancel", style: .cancel)
        XCTAssertThrowsError(try Prompt(id: "p", title: "t", reason: "r", actions: [c, .init(id: "c2", title: "No", style: .cancel)]))
        XCTAssertThrowsError(try Prompt(id: "p", title: "t", reason: "r", actions: []))
        XCTAssertThrowsError(try Prompt(id: "p", title: "t", reason: "r", actions: [c, c]))
        XCTAssertNoThrow(try Prompt(id: "p", title: "t", reason: "r", actions: [c]))
    }

    // MARK: Shake to undo: the four cases, in every locale

    typealias Expected = (title: String?, actions: [(id: String, title: String, style: Prompt.Action.Style)])

    func shakeCase(undo: Bool, redo: Bool, locale: String) -> Prompt? {
        UndoPrompts.shake(id: "p1", .init(undo: undo ? (group: "g1", action: "Move") : nil, redo: redo ? (group: "g2", action: "Typing") : nil),
                          locale: locale)
    }

    func testShakeBuildsTheFourCasesOfNSUndoManagersAlert() throws {
        let words: [String: (undo: String, redo: String, cancel: String, undoMove: String, redoTyping: String)] = [
            "en": ("Undo", "Redo", "Cancel", "Undo Move", "Redo Typing"),
            "zh-Hant": ("還原", "重做", "取消", "還原「移動」", "重做「輸入」"),
            "zh-Hans": ("撤销", "重做", "取消", "撤销移动", "重做输入"),
            "ja": ("取り消す", "やり直す", "キャンセル", "移動を取り消す", "入力をやり直す"),
            "de": ("Widerrufen", "Wiederholen", "Abbrechen", "„Bewegen“ widerrufen", "„Eingabe“ wiederholen"),
            "fr": ("Annuler", "Rétablir", "Annuler", "Annuler le déplacement", "Rétablir la saisie"),
            "es": ("Deshacer", "Rehacer", "Cancelar", "Deshacer movimiento", "Rehacer escritura"),
            "ko": ("실행 취소", "실행 복귀", "취소", "이동 실행 취소", "입력 실행 복귀"),
        ]
        XCTAssertEqual(Set(Titles.locales), Set(words.keys))
        for locale in Titles.locales {
            let w = words[locale]!
            // Undo only: "Undo X" — Cancel, Undo.
            let u = try XCTUnwrap(shakeCase(undo: true, redo: false, locale: locale))
            XCTAssertEqual(u.title, w.undoMove, locale)
            XCTAssertEqual(u.actions, [.init(id: "cancel", title: w.cancel, style: .cancel), .init(id: "undo", title: w.undo, style: .default)], locale)
            // Redo only: "Redo X" — Cancel, Redo.
            let r = try XCTUnwrap(shakeCase(undo: false, redo: true, locale: locale))
            XCTAssertEqual(r.title, w.redoTyping, locale)
            XCTAssertEqual(r.actions, [.init(id: "cancel", title: w.cancel, style: .cancel), .init(id: "redo", title: w.redo, style: .default)], locale)
            // Both: "Undo X" — Undo, "Redo Y", Cancel.
            let b = try XCTUnwrap(shakeCase(undo: true, redo: true, locale: locale))
            XCTAssertEqual(b.title, w.undoMove, locale)
            XCTAssertEqual(b.actions, [.init(id: "undo", title: w.undo, style: .default),
                                       .init(id: "redo", title: w.redoTyping, style: .default),
                                       .init(id: "cancel", title: w.cancel, style: .cancel)], locale)
            // Neither: no prompt.
            XCTAssertNil(shakeCase(undo: false, redo: false, locale: locale), locale)
            for p in [u, r, b] {
                XCTAssertEqual(p.feedback, .success)
                XCTAssertEqual(p.level, .normal)
                XCTAssertEqual(p.reason, "shake")
            }
        }
    }

    func testUnnamedGroupsGiveBareVerbsAndClientNamesStayAsGiven() throws {
        let p = try XCTUnwrap(UndoPrompts.shake(id: "p", .init(undo: (group: "g", action: nil), redo: (group: "h", action: "Recolor")), locale: "ja"))
        XCTAssertEqual(p.title, "取り消す")
        XCTAssertEqual(p.actions[1].title, "Recolorをやり直す")
    }

    func testConflictPromptOffersUndoAnywayAndCancel() {
        let p = UndoPrompts.conflict(id: "p9", kind: .undo, action: "Move", names: ["alice"], conflicts: [], locale: "en")
        XCTAssertEqual(p.title, "Undo Move changes what alice did since")
        XCTAssertEqual(p.actions, [.init(id: "undo_anyway", title: "Undo Anyway", style: .destructive), .init(id: "cancel", title: "Cancel", style: .cancel)])
        let r = UndoPrompts.conflict(id: "p9", kind: .redo, action: nil, names: ["bob", "carol"], conflicts: [], locale: "zh-Hant")
        XCTAssertEqual(r.title, "重做會更改 bob, carol 之後所做的變更")
        XCTAssertEqual(r.actions.first?.id, "redo_anyway")
        // A name or action that looks like a placeholder is not expanded.
        let odd = UndoPrompts.conflict(id: "p", kind: .undo, action: "%2", names: ["%1"], conflicts: [], locale: "en")
        XCTAssertEqual(odd.title, "Undo %2 changes what %1 did since")
    }
}

/// What a stored prompt keeps (schema/024): enough to show it again anywhere and carry out its answer.
final class PromptCauseTests: XCTestCase {
    func testACauseReadsBackAsWrittenAndRebuildsTheSamePrompt() throws {
        let causes: [PromptCause] = [
            .shake(scope: nil, undo: .init(group: "g1", action: "Move"), redo: nil),
            .shake(scope: "panel", undo: .init(group: "g1", action: nil), redo: .init(group: "g2", action: "Recolor")),
            .conflict(kind: .redo, scope: nil, group: "g3", action: "Typing",
                      conflicts: [.init(node: "t", reason: "set", user: 2, version: 7), .init(node: "u", reason: "deleted", user: nil, version: nil)], tx: "t9"),
            .conflict(kind: .undo, scope: "s", group: "g4", action: nil, conflicts: [], tx: nil),
        ]
        for cause in causes {
            let text = JSONWriter.string(cause.json)
            let back = try XCTUnwrap(PromptCause(json: try JSONParser.parse(text)), text)
            XCTAssertEqual(back, cause, text)
            XCTAssertEqual(back.prompt(id: "d:p7", locale: "ja"), cause.prompt(id: "d:p7", locale: "ja"))
        }
        XCTAssertEqual(causes[0].prompt(id: "d:p1", locale: "ko")?.title, "이동 실행 취소", "rebuilt in the locale of the terminal shown it")
        let named = causes[2].prompt(id: "d:p2", locale: "en", userName: { [2: "bob"][$0] })
        XCTAssertEqual(named?.title, "Redo Typing changes what bob did since", "names read when shown, from the ids kept")
        XCTAssertFalse(JSONWriter.string(causes[2].json).contains("bob"), "no names kept")
        XCTAssertNil(PromptCause(json: ["reason": "shake", "undo": ["action": "x"]]), "a top without its group")
        XCTAssertNil(PromptCause(json: ["reason": "conflict", "kind": "edit", "group": "g", "conflicts": []]), "only undo and redo conflict")
        XCTAssertNil(PromptCause(json: ["reason": "wobble"]))
    }

    func testACauseStandsOnlyWhileTheGroupsItNamesAreOnTop() {
        let shake = PromptCause.shake(scope: nil, undo: .init(group: "g1", action: "Move"), redo: nil)
        XCTAssertTrue(shake.stillStands(undoTop: "g1", redoTop: nil))
        XCTAssertFalse(shake.stillStands(undoTop: "g2", redoTop: nil), "another group on top: the prompt would undo something else")
        XCTAssertFalse(shake.stillStands(undoTop: nil, redoTop: "g1"), "undone meanwhile")
        let conflict = PromptCause.conflict(kind: .redo, scope: nil, group: "g3", action: nil, conflicts: [], tx: nil)
        XCTAssertTrue(conflict.stillStands(undoTop: "x", redoTop: "g3"))
        XCTAssertFalse(conflict.stillStands(undoTop: "g3", redoTop: nil))
    }
}
