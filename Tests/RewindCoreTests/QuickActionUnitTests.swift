import RewindCore
import XCTest

final class QuickActionUnitTests: XCTestCase {
    private func recent(_ doc: String, by other: (Int64, String)? = nil) -> RecentDocument {
        RecentDocument(doc: doc, title: nil, lastOtherEditor: other.map { (id: $0.0, name: $0.1) })
    }

    func testStaticItemsComeFirstThenRecentDocumentsAtMostFourWithoutRepeats() {
        var pinned = ShortcutItem(type: "open_document", title: "Welcome", info: JSONObject([("doc", "w")]))
        pinned.icon = "star"
        let list = Shortcuts.list(static: Shortcuts.defaultStatic + [pinned], recent: [recent("a"), recent("w"), recent("b"), recent("c")])
        XCTAssertEqual(list.map(\.title), ["New Document", "Welcome", "a", "b"], "w is already pinned; four at most")
        XCTAssertEqual(list.map(\.isDynamic), [false, false, true, true])
        XCTAssertEqual(list[0].json(locale: "zh-Hant").objectValue?["title"], "新增文件", "the built-in title is localized")
        XCTAssertEqual(list[1].json(locale: "ja").objectValue?["title"], "Welcome", "a configured title is shown as given")
    }

    func testOnlyEditsThatCanMoveTheListMakeItStale() {
        let list = Shortcuts.list(static: Shortcuts.defaultStatic, recent: [recent("a", by: (2, "bob")), recent("b")])
        XCTAssertFalse(Shortcuts.mayChange(list, user: 1, doc: "a", editor: 1), "typing on in the newest document")
        XCTAssertTrue(Shortcuts.mayChange(list, user: 1, doc: "b", editor: 1), "an older document comes first")
        XCTAssertTrue(Shortcuts.mayChange(list, user: 1, doc: "new", editor: 1), "a document not listed yet")
        XCTAssertFalse(Shortcuts.mayChange(list, user: 1, doc: "a", editor: 2), "bob is already who else edited a last")
        XCTAssertTrue(Shortcuts.mayChange(list, user: 1, doc: "b", editor: 2), "bob is now who else edited b last")
        XCTAssertFalse(Shortcuts.mayChange(list, user: 1, doc: "z", editor: 2), "someone else's document")
        let full = Shortcuts.list(static: Array(repeating: Shortcuts.defaultStatic[0], count: 4), recent: [])
        XCTAssertFalse(Shortcuts.mayChange(full, user: 1, doc: "x", editor: 1), "no place left for recent documents")
    }

    func testStaticConfigurationIsValidated() throws {
        let ok = try Shortcuts.parseStatic(try JSONParser.parse(#"[{"type":"new_document","title":"New"},{"type":"open_document","title":"W","info":{"doc":"w"}}]"#))
        XCTAssertEqual(ok.map(\.type), ["new_document", "open_document"])
        XCTAssertEqual(try Shortcuts.parseStatic(try JSONParser.parse("[]")), [])
        for bad in [#"{}"#, #"[{"type":"x","title":"t"}]"#, #"[{"type":"new_document"}]"#, #"[{"type":"open_document","title":"t"}]"#,
                    #"[{"type":"new_document","title":"t","icon":3}]"#, #"[1]"#,
                    "[" + Array(repeating: #"{"type":"new_document","title":"t"}"#, count: 5).joined(separator: ",") + "]"] {
            XCTAssertThrowsError(try Shortcuts.parseStatic(try JSONParser.parse(bad)), bad)
        }
    }

    func testPreviewActionsFollowTheRoleAndTheVersion() {
        func ids(_ a: [PreviewAction]) -> [String] { a.map { $0.id + ($0.actions.isEmpty ? "" : "(\($0.actions.map(\.id).joined(separator: ",")))") } }
        XCTAssertEqual(ids(PreviewMenu.actions(role: .owner, version: 3, head: 5, locale: "en")), ["open", "restore", "share(share_editor,share_viewer)"])
        XCTAssertEqual(ids(PreviewMenu.actions(role: .owner, version: 5, head: 5, locale: "en")), ["open", "share(share_editor,share_viewer)"])
        XCTAssertEqual(ids(PreviewMenu.actions(role: .editor, version: 3, head: 5, locale: "en")), ["open", "restore"])
        XCTAssertEqual(ids(PreviewMenu.actions(role: .viewer, version: 3, head: 5, locale: "en")), ["open"])
        let owner = PreviewMenu.actions(role: .owner, version: 0, head: 5, locale: "ja")
        XCTAssertEqual(owner[1].title, "このバージョンを復元")
        XCTAssertEqual(owner[1].style, .destructive)
        XCTAssertNil(PreviewMenu.find("share", in: owner), "a group is not chosen itself")
        XCTAssertEqual(PreviewMenu.find("share_viewer", in: owner)?.id, "share_viewer")
    }

    func testAConnectionHoldsTheNewestEightPreviews() {
        var shelf = PreviewShelf()
        let made = (0..<10).map { i in shelf.add(doc: "d", node: nil, version: Int64(i), actions: []) }
        XCTAssertEqual(shelf.held.map(\.id), made.suffix(8).map(\.id))
        XCTAssertNil(shelf.find(made[1].id))
        XCTAssertEqual(shelf.end(made[5].id)?.version, 5)
        XCTAssertNil(shelf.find(made[5].id))
        XCTAssertEqual(Set(made.map(\.id)).count, 10, "ids are never reused on a connection")
    }
}
