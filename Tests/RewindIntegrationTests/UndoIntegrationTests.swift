import RewindCore
import RewindStore
import XCTest

/// Per-user undo over TCP against real PostgreSQL (issue 3).
final class UndoIntegrationTests: XCTestCase {
    func node(_ state: JSON?, _ id: String) -> JSONObject? { state?.objectValue?["nodes"]?.objectValue?[id]?.objectValue }

    func stateOf(_ t: Terminal, _ doc: String = "d") throws -> JSON? {
        let r = try t.request("open", [("doc", .string(doc))])
        return r["state"]
    }

    /// `[{"op": "create", …}]` for a text node and a box.
    let seed: [JSON] = [
        ["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "text": ""],
        ["op": "create", "node": "box", "parent": "root", "index": 1, "kind": "view", "frame": [0, 0, 10, 10]],
    ]

    func ok(_ r: JSONObject, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r["ok"], true, JSONWriter.string(.object(r)), file: file, line: line)
    }

    /// Issue 12, as a new user tried it: select "ell" in "hello", delete it
    /// (the selection sent with the submit), undo: the reply hands the range back.
    func testUndoOfADeletedSelectionRepliesWithThatSelection() throws {
        let f = try Fixture()
        ok(try f.alice.request("open", [("doc", "d")]))
        try f.alice.submit("d", tx: "1", base: 0, [["op": "create", "node": "t1", "parent": "root", "index": 0, "kind": "text",
                                                    "focusable": true, "text": "hello"]])
        let range: JSON = ["node": "t1", "start": 1, "end": 4]
        let del = try f.alice.request("submit", [("doc", "d"), ("tx", "2"), ("base", 1),
                                                  ("ops", [["op": "remove", "node": "t1", "pos": 1, "len": 3]]), ("selection", range)])
        ok(del)
        let undo = try f.alice.request("undo", [("doc", "d")])
        ok(undo)
        XCTAssertEqual(undo["selection"], range, "the range the user had, not a caret")
        XCTAssertEqual(node(try stateOf(f.alice), "t1")?["text"], "hello")
        let redo = try f.alice.request("redo", [("doc", "d")])
        XCTAssertEqual(redo["selection"], ["node": "t1", "start": 1, "end": 1])
        XCTAssertEqual(try f.alice.request("undo", [("doc", "d")])["selection"], range)
    }

    /// Issue 12's two-user script: alice types "hello world", bob removes
    /// "world", alice undoes: no conflict, what is left of her typing goes (as in Yjs and Loro).
    func testUndoOfTypingPartlyRemovedByAnotherIsNoConflict() throws {
        let f = try Fixture()
        let bob = try f.terminal("bob")
        ok(try f.alice.request("open", [("doc", "d")]))
        try f.alice.submit("d", tx: "1", base: 0, [["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "text": ""]])
        try f.alice.submit("d", tx: "2", base: 1, [["op": "insert", "node": "t", "pos": 0, "text": "hello world"]])
        try bob.submit("d", tx: "b1", base: 2, [["op": "remove", "node": "t", "pos": 6, "len": 5]])
        let undo = try f.alice.request("undo", [("doc", "d")])
        ok(undo)
        XCTAssertEqual(node(try stateOf(f.alice), "t")?["text"], "")
    }

    /// Two terminals of one user: A drags the box inside a group while B
    /// types; undo takes back the drag and the typing as two separate groups.
    func testTwoTerminalsOfOneUserUndoAsSeparateGroups() throws {
        let f = try Fixture()
        let a = f.alice
        let b = try f.terminal("alice", client: "B")
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, b] { try t.request("open", [("doc", "d")]) }
        ok(try a.request("begin_group", [("doc", "d"), ("action", "Move")]))
        ok(try a.request("submit", [("doc", "d"), ("tx", "m1"), ("base", 1), ("ops", [["op": "set", "node": "box", "key": "frame", "value": [5, 0, 10, 10]]])]))
        ok(try b.request("submit", [("doc", "d"), ("tx", "k1"), ("base", 2), ("ops", [["op": "insert", "node": "t", "pos": 0, "text": "h"]])]))
        ok(try a.request("submit", [("doc", "d"), ("tx", "m2"), ("base", 3), ("ops", [["op": "set", "node": "box", "key": "frame", "value": [9, 0, 10, 10]]])]))
        ok(try b.request("submit", [("doc", "d"), ("tx", "k2"), ("base", 4), ("ops", [["op": "insert", "node": "t", "pos": 1, "text": "i"]])]))
        let end = try a.request("end_group", [("doc", "d")])
        XCTAssertEqual(end["level"], 0)

        let h = try a.request("history", [("doc", "d")])
        let titles = h["undo"]?.arrayValue?.compactMap { $0.objectValue?["action"]?.stringValue }
        XCTAssertEqual(titles, ["Move", "Typing", nil].compactMap { $0 }, "the drag closed last, so it is on top")

        let u1 = try b.request("undo", [("doc", "d")])  // from the other terminal: same stacks
        XCTAssertEqual(u1["action"], "Move")
        var s = try stateOf(a)
        XCTAssertEqual(node(s, "box")?["frame"], [0, 0, 10, 10])
        XCTAssertEqual(node(s, "t")?["text"], "hi", "the typing is untouched by undoing the drag")
        let u2 = try a.request("undo", [("doc", "d")])
        XCTAssertEqual(u2["action"], "Typing")
        s = try stateOf(a)
        XCTAssertEqual(node(s, "t")?["text"], "", "both keystrokes were one Typing group")
    }

    /// Undo on terminal A, redo on terminal B; prompt_state reaches both.
    func testUndoOnOneTerminalRedoOnAnotherAndPromptStateReachesBoth() throws {
        let f = try Fixture()
        let a = f.alice
        let b = try f.terminal("alice", client: "B")
        let bob = try f.terminal("bob")
        try a.request("hello_again_is_not_a_type", [])  // an unknown type is refused and harmless
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, b, bob] { try t.request("open", [("doc", "d")]) }
        for t in [a, b] {
            let ps = try t.push("prompt_state")
            XCTAssertEqual(ps["can_undo"], true)
            XCTAssertEqual(ps["undo_title"], "Undo")
        }
        _ = try bob.push("prompt_state")
        ok(try a.request("submit", [("doc", "d"), ("tx", "mv"), ("base", 1), ("ops", [["op": "move", "node": "box", "parent": "root", "index": 0]])]))
        for t in [a, b] {
            let ps = try t.push("prompt_state")
            XCTAssertEqual(ps["undo_title"], "Undo Move")
            XCTAssertEqual(ps["can_redo"], false)
        }
        ok(try a.request("undo", [("doc", "d"), ("tx", "u-1")]))
        for t in [a, b] {
            let ps = try t.push("prompt_state")
            XCTAssertEqual(ps["redo_title"], "Redo Move")
            XCTAssertEqual(ps["can_redo"], true)
        }
        // A retried undo (same tx) appends nothing.
        let again = try a.request("undo", [("doc", "d"), ("tx", "u-1")])
        ok(again)
        XCTAssertEqual(again["version"], 3)
        XCTAssertEqual(try f.db.eventCount("d"), 3)

        let r = try b.request("redo", [("doc", "d")])
        XCTAssertEqual(r["action"], "Move")
        XCTAssertEqual(node(try stateOf(b), "root")?["children"], ["box", "t"])
        let ps = try a.push("prompt_state")
        XCTAssertEqual(ps["undo_title"], "Undo Move")
        // Bob has no history of his own, and was not sent Alice's state changes.
        XCTAssertEqual(try bob.request("undo", [("doc", "d")]).errorCode, "not_found")
        XCTAssertFalse(bob.pushes.contains { $0["push"] == "prompt_state" && $0["can_undo"] == true })
        // The undo and redo events went to everyone, with kind and refers.
        var e: JSONObject?
        for _ in 0..<5 {
            e = try bob.push("events")["events"]?.arrayValue?.first?.objectValue
            if e?["kind"] != "edit" { break }
        }
        XCTAssertEqual(e?["kind"], "undo")
        XCTAssertNotNil(e?["refers"]?.stringValue)
    }

    /// A session pasted in one piece (as into nc): undo right behind `open` and
    /// the submits waits for them, and takes back the typing.
    func testUndoPipelinedBehindOpenAndSubmitsRunsInOrder() throws {
        let f = try Fixture(doc: nil)
        let lines: [JSON] = [
            ["id": 2, "type": "create_doc", "doc": "p"],
            ["id": 3, "type": "open", "doc": "p"],
            ["id": 4, "type": "submit", "doc": "p", "tx": "1", "base": 0, "ops": [["op": "create", "node": "t", "parent": "root", "kind": "text", "text": "Hello"]]],
            ["id": 5, "type": "submit", "doc": "p", "tx": "2", "base": 1, "ops": [["op": "insert", "node": "t", "pos": 5, "text": ", world"]]],
            ["id": 6, "type": "undo", "doc": "p"],
            ["id": 7, "type": "redo", "doc": "p"],
        ]
        f.alice.sendRaw(lines.flatMap { Message.line($0) })
        for id in 2...5 as ClosedRange<Int64> { ok(try f.alice.reply(to: id)) }
        let undo = try f.alice.reply(to: 6)
        ok(undo)
        XCTAssertEqual(undo["action"], "Typing")
        XCTAssertEqual(undo["version"], 3)
        ok(try f.alice.reply(to: 7))
        XCTAssertEqual(node(try stateOf(f.alice, "p"), "t")?["text"], "Hello, world")
    }

    func testTitlesFollowTheTerminalsLocale() throws {
        let f = try Fixture()
        let ja = try Terminal(port: f.server.port)
        ok(try ja.request("hello", [("user", "alice"), ("token", .string(f.db.tokens["alice"]!)), ("locale", "ja-JP")]))
        try f.alice.submit("d", tx: "seed", base: 0, seed)
        try f.alice.submit("d", tx: "k", base: 1, [["op": "insert", "node": "t", "pos": 0, "text": "x"]])
        try ja.request("open", [("doc", "d")])
        let ps = try ja.push("prompt_state")
        XCTAssertEqual(ps["undo_title"], "入力を取り消す")
        XCTAssertEqual(ps["redo_title"], "やり直す")
    }

    /// Each conflict policy, over the wire.
    func testConflictPolicies() throws {
        let f = try Fixture()
        let a = f.alice
        let bob = try f.terminal("bob")
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, bob] { try t.request("open", [("doc", "d")]) }
        try a.submit("d", tx: "red", base: 1, [["op": "set", "node": "box", "key": "color", "value": "red"],
                                              ["op": "set", "node": "box", "key": "size", "value": 2]])
        try bob.submit("d", tx: "blue", base: 2, [["op": "set", "node": "box", "key": "color", "value": "blue"]])

        // Under `prompt` (the default) the conflict becomes a prompt; Cancel drops the undo.
        let prompted = try a.request("undo", [("doc", "d")])
        ok(prompted)
        let id = try XCTUnwrap(prompted["prompt"]?.stringValue)
        let conflict = prompted["conflicts"]?.arrayValue?.first?.objectValue
        XCTAssertEqual(conflict?["user"], "bob")
        XCTAssertEqual(conflict?["reason"], "set")
        let shown = try a.push("prompt")["prompt"]?.objectValue
        XCTAssertEqual(shown?["id"], .string(id))
        XCTAssertEqual(shown?["title"], "Undo changes what bob did since")
        XCTAssertEqual(shown?["reason"], "conflict")
        ok(try a.request("respond", [("prompt", .string(id)), ("action", "cancel")]))
        XCTAssertEqual(try a.push("dismiss")["prompt"], .string(id))
        XCTAssertEqual(try f.db.eventCount("d"), 3, "a prompted undo appends nothing until answered; Cancel drops it")

        XCTAssertEqual(try a.request("undo", [("doc", "d"), ("on_conflict", "maybe")]).errorCode, "bad_request")

        let skip = try a.request("undo", [("doc", "d"), ("on_conflict", "skip")])
        ok(skip)
        XCTAssertEqual(skip["skipped"]?.arrayValue?.count, 1)
        var box = node(try stateOf(a), "box")
        XCTAssertEqual(box?["props"]?.objectValue?["color"], "blue", "skip keeps bob's colour")
        XCTAssertNil(box?["props"]?.objectValue?["size"])

        try a.submit("d", tx: "pink", base: 4, [["op": "set", "node": "box", "key": "color", "value": "pink"]])
        try bob.submit("d", tx: "green", base: 5, [["op": "set", "node": "box", "key": "color", "value": "green"]])
        let force = try a.request("undo", [("doc", "d"), ("on_conflict", "force")])
        ok(force)
        XCTAssertNil(force["skipped"])
        box = node(try stateOf(a), "box")
        XCTAssertEqual(box?["props"]?.objectValue?["color"], "blue", "force puts back the colour from before alice's edit")
    }

    /// Stacks are projections of the log: they survive kill -9, and a group
    /// left open by the crash is closed when the document loads again.
    func testStacksSurviveKillDashNineAndOpenGroupsAreClosed() throws {
        let db = try TestDatabase()
        var server = try ServerProcess(database: db)
        var a = try Terminal(port: server.port)
        try a.hello("alice", db)
        try a.request("create_doc", [("doc", "d")])
        try a.request("open", [("doc", "d")])
        try a.submit("d", tx: "seed", base: 0, seed)
        try a.submit("d", tx: "n1", base: 1, [["op": "set", "node": "box", "key": "n", "value": 1]])
        ok(try a.request("undo", [("doc", "d")]))
        ok(try a.request("begin_group", [("doc", "d"), ("action", "Drag")]))
        try a.submit("d", tx: "d1", base: 3, [["op": "set", "node": "box", "key": "frame", "value": [1, 1, 10, 10]]])
        let before = try a.request("history", [("doc", "d")])
        XCTAssertEqual(before["level"], 1)
        XCTAssertEqual(before["redo"]?.arrayValue?.count, 0, "the edit in the open group cleared the redo stack")
        server.kill9()

        server = try ServerProcess(database: db)
        a = try Terminal(port: server.port)
        try a.hello("alice", db)
        try a.request("open", [("doc", "d")])
        let after = try a.request("history", [("doc", "d")])
        XCTAssertEqual(after["undo"]?.arrayValue?.compactMap { $0.objectValue?["action"]?.stringValue }, ["Drag"],
                       "the group left open was closed on load and is on the stack")
        XCTAssertEqual(after["level"], 0)
        ok(try a.request("undo", [("doc", "d")]))
        XCTAssertEqual(node(try stateOf(a), "box")?["frame"], [0, 0, 10, 10])
        // Replay from the log (the admin CLI's code) agrees with the live state.
        let replayed = try RewindStore.Replay.document("d", db: db.db)
        XCTAssertEqual(replayed.document.json, try stateOf(a))
    }

    /// `set_undo_levels`: per user, capped by the server's `--undo-levels`, recorded in the
    /// log (a restart replays it), reported by `history`; bad values refused.
    func testUndoLevelsPerUserAreSetReportedAndReplayed() throws {
        let db = try TestDatabase()
        var server = try ServerProcess(database: db, arguments: ["--undo-levels", "10"])
        var a = try Terminal(port: server.port)
        try a.hello("alice", db)
        let b = try Terminal(port: server.port)
        try b.hello("bob", db)
        try a.request("create_doc", [("doc", "d")])
        try a.share("d", "bob")
        for t in [a, b] { ok(try t.request("open", [("doc", "d")])) }
        var base: Int64 = 0
        for i in 0..<6 {
            for (t, who) in [(a, "a"), (b, "b")] {
                base = try t.submit("d", tx: "\(who)\(i)", base: base, [["op": "set", "node": "root", "key": .string(who), "value": .int(Int64(i))]])
            }
        }
        XCTAssertEqual(try a.request("history", [("doc", "d")])["levels"], 10, "the server's default")
        let set = try a.request("set_undo_levels", [("doc", "d"), ("levels", 2)])
        XCTAssertEqual(set["levels"], 2, "\(set)")
        var h = try a.request("history", [("doc", "d")])
        XCTAssertEqual(h["undo"]?.arrayValue?.count, 2, "lowered: the oldest groups dropped at once")
        XCTAssertEqual(h["levels"], 2)
        XCTAssertEqual(try b.request("history", [("doc", "d")])["undo"]?.arrayValue?.count, 6, "bob's stacks untouched")
        for bad: JSON in [0, 11, -1, "3", 2.5] {
            let r = try a.request("set_undo_levels", [("doc", "d"), ("levels", bad)])
            XCTAssertEqual(r.errorCode, "bad_request", "\(bad): \(r)")
        }
        XCTAssertEqual(try a.request("set_undo_levels", [("doc", "d")]).errorCode, "bad_request", "levels is required")
        // The document's cap is the owner's: bob may not; alice's applies to bob's stacks too.
        XCTAssertEqual(try b.request("set_undo_levels", [("doc", "d"), ("levels", 1), ("document", true)]).errorCode, "forbidden")
        let cap = try a.request("set_undo_levels", [("doc", "d"), ("levels", 3), ("document", true)])
        XCTAssertEqual(cap["document_levels"], 3, "\(cap)")
        let bob = try b.request("history", [("doc", "d")])
        XCTAssertEqual(bob["levels"], 3)
        XCTAssertEqual(bob["document_levels"], 3)
        XCTAssertEqual(bob["undo"]?.arrayValue?.count, 3, "bob's oldest groups dropped by the owner's cap")
        ok(try a.request("set_undo_levels", [("doc", "d"), ("levels", .null), ("document", true)]))
        ok(try a.request("set_undo_levels", [("doc", "d"), ("levels", 4)]))
        XCTAssertEqual(try a.request("history", [("doc", "d")])["undo"]?.arrayValue?.count, 2, "raised: nothing comes back")
        // Replayed after a restart (kill -9: nothing but the log).
        server.kill9()
        server = try ServerProcess(database: db, arguments: ["--undo-levels", "10"])
        a = try Terminal(port: server.port)
        try a.hello("alice", db)
        ok(try a.request("open", [("doc", "d")]))
        h = try a.request("history", [("doc", "d")])
        XCTAssertEqual(h["levels"], 4)
        XCTAssertEqual(h["undo"]?.arrayValue?.count, 2)
        for i in 0..<4 { base = try a.submit("d", tx: "later\(i)", base: base, [["op": "set", "node": "root", "key": "a", "value": .int(Int64(100 + i))]]) }
        XCTAssertEqual(try a.request("history", [("doc", "d")])["undo"]?.arrayValue?.count, 4)
        let back = try a.request("set_undo_levels", [("doc", "d"), ("levels", .null)])
        XCTAssertEqual(back["levels"], 10, "null: the server's default again")
        let replayed = try RewindStore.Replay.document("d", db: db.db)
        let alice = try XCTUnwrap(try db.db.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0))
        XCTAssertNil(replayed.history.userLevels[alice], "the CLI's replay read the null: the default applies")
        XCTAssertEqual(replayed.history.stacks(user: alice, scope: nil).undo.count, 4, "the CLI's replay agrees with the live server")
    }

    func testGroupingErrorsAndClearHistory() throws {
        let f = try Fixture()
        let a = f.alice
        try a.submit("d", tx: "seed", base: 0, seed)
        XCTAssertEqual(try a.request("undo", [("doc", "d")]).errorCode, "bad_request", "undo needs the document open")
        try a.request("open", [("doc", "d")])
        XCTAssertEqual(try a.request("end_group", [("doc", "d")]).errorCode, "bad_request")
        XCTAssertEqual(try a.request("begin_group", [("doc", "d")])["level"], 1)
        XCTAssertEqual(try a.request("begin_group", [("doc", "d")])["level"], 2)
        XCTAssertEqual(try a.request("end_group", [("doc", "d")])["level"], 1)
        XCTAssertEqual(try a.request("end_group", [("doc", "d")])["level"], 0)
        XCTAssertEqual(try a.request("undo", [("doc", "d"), ("scope", "box")]).errorCode, "bad_request", "box is not an undo scope")
        ok(try a.request("set_action", [("doc", "d"), ("action", "Build")]))
        XCTAssertEqual(try a.request("history", [("doc", "d")])["undo"]?.arrayValue?.first?.objectValue?["action"], "Build")
        ok(try a.request("clear_history", [("doc", "d"), ("tx", "c1")]))
        ok(try a.request("clear_history", [("doc", "d"), ("tx", "c1")]))
        XCTAssertEqual(try a.request("undo", [("doc", "d")]).errorCode, "not_found")
        XCTAssertEqual(try a.request("history", [("doc", "d")])["undo"], [])
    }
}
