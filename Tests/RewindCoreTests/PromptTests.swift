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
        let words: [String: (undo: String, redo: String, cancel: String, move: String, typing: String)] = [
            "en": ("Undo", "Redo", "Cancel", "Move", "Typing"),
            "zh-Hant": ("還原", "重做", "取消", "移動", "輸入"),
            "zh-Hans": ("撤销", "重做", "取消", "移动", "输入"),
            "ja": ("取り消す", "やり直す", "キャンセル", "移動", "入力"),
        ]
        for locale in Titles.locales {
            let w = words[locale]!
            // Undo only: "Undo X" — Cancel, Undo.
            let u = try XCTUnwrap(shakeCase(undo: true, redo: false, locale: locale))
            XCTAssertEqual(u.title, "\(w.undo) \(w.move)", locale)
            XCTAssertEqual(u.actions, [.init(id: "cancel", title: w.cancel, style: .cancel), .init(id: "undo", title: w.undo, style: .default)], locale)
            // Redo only: "Redo X" — Cancel, Redo.
            let r = try XCTUnwrap(shakeCase(undo: false, redo: true, locale: locale))
            XCTAssertEqual(r.title, "\(w.redo) \(w.typing)", locale)
            XCTAssertEqual(r.actions, [.init(id: "cancel", title: w.cancel, style: .cancel), .init(id: "redo", title: w.redo, style: .default)], locale)
            // Both: "Undo X" — Undo, "Redo Y", Cancel.
            let b = try XCTUnwrap(shakeCase(undo: true, redo: true, locale: locale))
            XCTAssertEqual(b.title, "\(w.undo) \(w.move)", locale)
            XCTAssertEqual(b.actions, [.init(id: "undo", title: w.undo, style: .default),
                                       .init(id: "redo", title: "\(w.redo) \(w.typing)", style: .default),
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
        XCTAssertEqual(p.actions[1].title, "やり直す Recolor")
    }

    func testConflictPromptOffersUndoAnywayAndCancel() {
        let p = UndoPrompts.conflict(id: "p9", kind: .undo, action: "Move", names: ["alice"], conflicts: [], locale: "en")
        XCTAssertEqual(p.title, "Undo Move changes what alice did since")
        XCTAssertEqual(p.actions, [.init(id: "undo_anyway", title: "Undo Anyway", style: .destructive), .init(id: "cancel", title: "Cancel", style: .cancel)])
        let r = UndoPrompts.conflict(id: "p9", kind: .redo, action: nil, names: ["bob", "carol"], conflicts: [], locale: "zh-Hant")
        XCTAssertEqual(r.title, "「重做」會更改 bob, carol 之後所做的變更")
        XCTAssertEqual(r.actions.first?.id, "redo_anyway")
        // A name or action that looks like a placeholder is not expanded.
        let odd = UndoPrompts.conflict(id: "p", kind: .undo, action: "%2", names: ["%1"], conflicts: [], locale: "en")
        XCTAssertEqual(odd.title, "Undo %2 changes what %1 did since")
    }
}
