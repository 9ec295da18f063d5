import Foundation
import RewindCore
import RewindStore
import XCTest

/// Quick actions over TCP against real PostgreSQL (issue 12): `shortcuts` at
/// hello and pushed, the `shortcut` request, and a launch shortcut at hello.
final class QuickActionTests: XCTestCase {
    private func titles(_ items: JSON?) -> [String] {
        (items?.arrayValue ?? []).compactMap { $0.objectValue?["title"]?.stringValue }
    }

    private func item(_ items: JSON?, doc: String) -> JSONObject? {
        (items?.arrayValue ?? []).compactMap(\.objectValue).first { $0["info"]?.objectValue?["doc"] == .string(doc) }
    }

    private let typed: JSON = ["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "text": "hi", "focusable": true]

    func testHelloListsNewDocumentThenTheDocumentsTheUserEditedLastWithWhoElseEditedThem() throws {
        let f = try Fixture()
        let fresh = try f.terminal("alice", client: "fresh")
        XCTAssertEqual(try fresh.request("ping")["ok"], true)
        let first = try Terminal(port: f.server.port)
        let hello = try first.hello("alice", f.db, client: "first")
        XCTAssertEqual(titles(hello["shortcuts"]), ["New Document"], "nothing edited yet: the static item only")
        XCTAssertEqual(hello["shortcuts"]?.arrayValue?.first?.objectValue?["type"], "new_document")

        try f.alice.request("create_doc", [("doc", "plans"), ("title", "Plans")])
        try f.alice.submit("d", tx: "a1", base: 0, [typed])
        try f.alice.submit("plans", tx: "a2", base: 0, [typed])
        let bob = try f.terminal("bob")
        try bob.submit("d", tx: "b1", base: 1, [["op": "insert", "node": "t", "pos": 2, "text": "!"]])

        let later = try Terminal(port: f.server.port)
        let items = try later.hello("alice", f.db, client: "later")["shortcuts"]
        XCTAssertEqual(titles(items), ["New Document", "Plans", "d"], "static first, then the newest of alice's edits first")
        XCTAssertEqual(item(items, doc: "d")?["subtitle"], "bob", "who else edited it last")
        XCTAssertEqual(item(items, doc: "plans")?["subtitle"], nil, "nobody else edited it")
        XCTAssertEqual(item(items, doc: "d")?["type"], "open_document")

        // Localized like the rest of the terminal's titles.
        let ja = try Terminal(port: f.server.port)
        let r = try ja.request("hello", [("user", "alice"), ("token", .string(f.db.tokens["alice"]!)), ("locale", "ja-JP")])
        XCTAssertEqual(titles(r["shortcuts"]).first, "新規書類")

        // bob's own list: d only (he edited nothing else), with alice as who else edited it.
        let bob2 = try Terminal(port: f.server.port)
        let bobItems = try bob2.hello("bob", f.db, client: "b2")["shortcuts"]
        XCTAssertEqual(titles(bobItems), ["New Document", "d"])
        XCTAssertEqual(item(bobItems, doc: "d")?["subtitle"], "alice")
    }

    func testAChangedListIsPushedToEveryTerminalOfTheUserAndOnlyWhenItChanges() throws {
        let f = try Fixture(users: ["alice", "bob", "carol"])
        try f.alice.request("create_doc", [("doc", "e")])
        try f.alice.share("e", "bob")
        let phone = try f.terminal("alice", client: "phone")
        let carol = try f.terminal("carol")
        let bob = try f.terminal("bob")

        try f.alice.submit("d", tx: "a1", base: 0, [typed])
        for t in [f.alice, phone] {
            let p = try t.push("shortcuts")
            XCTAssertEqual(titles(p["items"]), ["New Document", "d"], "every terminal of alice hears it")
        }
        try f.alice.submit("e", tx: "a2", base: 0, [typed])
        XCTAssertEqual(titles(try phone.push("shortcuts")["items"]), ["New Document", "e", "d"])

        // bob edits d: alice's subtitle for d changes; bob's own list gets d.
        try bob.submit("d", tx: "b1", base: 1, [["op": "insert", "node": "t", "pos": 0, "text": "b"]])
        XCTAssertEqual(item(try phone.push("shortcuts")["items"], doc: "d")?["subtitle"], "bob")
        XCTAssertEqual(titles(try bob.push("shortcuts")["items"]), ["New Document", "d"])

        // Typing on into the document already at the top changes nothing: no push.
        _ = try f.alice.drainPushes()
        _ = try phone.drainPushes()
        try f.alice.submit("e", tx: "a3", base: 1, [["op": "insert", "node": "t", "pos": 0, "text": "x"]])
        usleep(400_000)
        XCTAssertFalse(try phone.drainPushes().contains { $0["push"] == "shortcuts" }, "no push when the list is the same")
        XCTAssertFalse(try carol.drainPushes().contains { $0["push"] == "shortcuts" }, "carol edited nothing and hears nothing")

        // bob loses d: it leaves his list at once.
        try f.alice.share("d", "bob", nil)
        var bobItems = try bob.push("shortcuts")["items"]
        while item(bobItems, doc: "d") != nil { bobItems = try bob.push("shortcuts")["items"] }
        XCTAssertEqual(titles(bobItems), ["New Document"])
    }

    /// A user's terminals are kept without a table while there is one; when
    /// the first to connect leaves, the others still hear the list change.
    func testTheOtherTerminalsStillHearTheListWhenTheFirstLeaves() throws {
        let f = try Fixture(users: ["alice", "bob"])
        let phone = try f.terminal("alice", client: "phone")
        let tablet = try f.terminal("alice", client: "tablet")
        f.alice.disconnect()  // the first of alice's terminals
        usleep(200_000)
        try phone.submit("d", tx: "p1", base: 0, [typed])
        for t in [phone, tablet] {
            XCTAssertEqual(titles(try t.push("shortcuts")["items"]), ["New Document", "d"], "both remaining terminals hear it")
        }
        phone.disconnect()
        usleep(200_000)
        try tablet.request("create_doc", [("doc", "e")])
        try tablet.submit("e", tx: "t1", base: 0, [typed])
        var items = try tablet.push("shortcuts")["items"]
        while titles(items).first(where: { $0 != "New Document" }) != "e" { items = try tablet.push("shortcuts")["items"] }
        XCTAssertEqual(titles(items), ["New Document", "e", "d"], "the last one left still hears it")
    }

    /// The writers note editors themselves (schema/025, no trigger on the
    /// log): an edit on one instance is announced to the user's terminals on
    /// another, and typing on within 5 seconds writes no row again.
    func testTheAppendNotesItsEditorOnceInFiveSecondsAndEveryInstanceHearsIt() throws {
        let f = try Fixture()
        let other = try ServerProcess(database: f.db)
        let phone = try Terminal(port: other.port)
        try phone.hello("alice", f.db, client: "phone")
        try f.alice.submit("d", tx: "a1", base: 0, [typed])
        XCTAssertEqual(titles(try phone.push("shortcuts")["items"]), ["New Document", "d"], "the other instance heard rewind_editors")
        let row = "SELECT xmin::text, last_edit FROM document_editors WHERE doc = 'd'"
        let noted = try f.db.db.query(row)
        XCTAssertEqual(noted.count, 1)
        for i in 2...4 {
            try f.alice.submit("d", tx: "a\(i)", base: Int64(i - 1), [["op": "insert", "node": "t", "pos": 0, "text": "x"]])
        }
        XCTAssertEqual(try f.db.db.query(row).values, noted.values, "typing on within 5 s rewrites nothing")
    }

    func testTheShortcutRequestRunsNewDocumentAndOpenDocument() throws {
        let f = try Fixture()
        let made = try f.alice.request("shortcut", [("shortcut", ["type": "new_document", "info": ["title": "Notes"]])])
        XCTAssertEqual(made["ok"], true, "\(made)")
        XCTAssertEqual(made["version"], 0)
        let doc = try XCTUnwrap(made["doc"]?.stringValue)
        XCTAssertTrue(doc.hasPrefix("doc-"), doc)
        XCTAssertEqual(try f.db.db.query("SELECT title FROM documents WHERE id = $1", [doc])[0, 0], "Notes")
        try f.alice.submit(doc, tx: "1", base: 0, [typed])  // the caller owns it

        let opened = try f.alice.request("shortcut", [("shortcut", ["type": "open_document", "info": ["doc": "d"]])])
        XCTAssertEqual(opened["version"], 0, "as open: \(opened)")
        XCTAssertNotNil(opened["state"]?.objectValue?["nodes"])
        let bob = try f.terminal("bob")
        try bob.submit("d", tx: "b", base: 0, [typed])
        XCTAssertEqual(try f.alice.push("events")["doc"], "d", "opened: subscribed like open")

        XCTAssertEqual(try f.alice.request("shortcut", [("shortcut", ["type": "open_document", "info": ["doc": "nope"]])]).errorCode, "not_found")
        XCTAssertEqual(try f.alice.request("shortcut", [("shortcut", ["type": "fly"])]).errorCode, "bad_request")
        XCTAssertEqual(try f.alice.request("shortcut", []).errorCode, "bad_request")
    }

    func testAHelloWithALaunchShortcutGetsItsResultAsASecondReplyToTheHello() throws {
        let f = try Fixture()
        try f.alice.submit("d", tx: "a1", base: 0, [typed])
        let t = try Terminal(port: f.server.port)
        t.send(.obj([("id", 1), ("type", "hello"), ("user", "alice"), ("token", .string(f.db.tokens["alice"]!)),
                     ("shortcut", ["type": "open_document", "info": ["doc": "d"]])]))
        t.send(.obj([("id", 2), ("type", "select"), ("doc", "d"), ("node", "t"), ("start", 1)]))
        let hello = try t.nextReply()
        XCTAssertEqual(hello["re"], 1)
        XCTAssertEqual(hello["ok"], true)
        XCTAssertNil(hello["shortcut"])
        let launched = try t.nextReply()
        XCTAssertEqual(launched["re"], 1, "the launch result answers the hello: \(launched)")
        XCTAssertEqual(launched["shortcut"], true)
        XCTAssertEqual(launched["version"], 1)
        let selected = try t.nextReply()
        XCTAssertEqual(selected["re"], 2)
        XCTAssertEqual(selected["ok"], true, "a request sent behind the hello finds the document open: \(selected)")

        let refused = try Terminal(port: f.server.port)
        refused.send(.obj([("id", 9), ("type", "hello"), ("user", "bob"), ("token", .string(f.db.tokens["bob"]!)),
                           ("shortcut", ["type": "open_document", "info": ["doc": "secret"]])]))
        XCTAssertEqual(try refused.nextReply()["ok"], true)
        let failed = try refused.nextReply()
        XCTAssertEqual(failed["re"], 9)
        XCTAssertEqual(failed["shortcut"], true)
        XCTAssertEqual(failed.errorCode, "not_found")
    }

    func testStaticShortcutsComeFromTheConfigurationFile() throws {
        let path = NSTemporaryDirectory() + "rewind-shortcuts-\(getpid()).json"
        try #"[{"type": "open_document", "title": "Welcome", "subtitle": "Start here", "icon": "star", "info": {"doc": "welcome"}}]"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let f = try Fixture(serverArguments: ["--shortcuts", path])
        try f.alice.submit("d", tx: "a1", base: 0, [typed])
        let t = try Terminal(port: f.server.port)
        let items = try t.hello("alice", f.db, client: "x")["shortcuts"]
        XCTAssertEqual(titles(items), ["Welcome", "d"], "the configured items replace the default, recent documents follow")
        XCTAssertEqual(items?.arrayValue?.first?.objectValue?["subtitle"], "Start here")
        XCTAssertEqual(items?.arrayValue?.first?.objectValue?["icon"], "star")

        // A bad file stops the server at once, saying why (exit 2: usage).
        try #"[{"type": "launch_rockets", "title": "x"}]"#.write(toFile: path, atomically: true, encoding: .utf8)
        let p = try ChildProcess.run(ServerProcess.binDirectory + "/rewind-server",
                                     ["--shortcuts", path, "--database", f.db.conninfo, "--listen", "127.0.0.1:0"], timeout: 60)
        XCTAssertEqual(p.status, 2)
        let message = p.err
        XCTAssertTrue(message.contains("new_document"), message)
    }
}
