import RewindCore
import RewindStore
import XCTest

/// Focus, presence, hit-testing and the responder chain over TCP (issue 4).
final class ChainIntegrationTests: XCTestCase {
    /// A panel with its own undo history holding a text field, and a note outside it.
    let seed: [JSON] = [
        ["op": "create", "node": "panel", "parent": "root", "index": 0, "kind": "view", "frame": [100, 100, 200, 200], "undoScope": true],
        ["op": "create", "node": "field", "parent": "panel", "index": 0, "kind": "text", "frame": [10, 10, 100, 20], "focusable": true,
         "text": "hello"],
        ["op": "create", "node": "note", "parent": "root", "index": 1, "kind": "text", "frame": [0, 0, 50, 50], "focusable": true],
    ]

    func ok(_ r: JSONObject, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r["ok"], true, JSONWriter.string(.object(r)), file: file, line: line)
    }

    func presences(_ pushes: [JSONObject]) -> [JSONObject] { pushes.filter { $0["push"] == "presence" } }

    func text(_ t: Terminal, _ node: String) throws -> JSON? {
        try t.request("open", [("doc", "d")])["state"]?.objectValue?["nodes"]?.objectValue?[node]?.objectValue?["text"]
    }

    /// Presence appears for the others, moves through their edits, reaches a
    /// terminal that opens later, and disappears when the terminal is killed.
    func testPresenceAppearsMovesAndDisappears() throws {
        let f = try Fixture()
        let a = try f.terminal("alice", client: "A")
        let bob = try f.terminal("bob")
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, bob] { ok(try t.request("open", [("doc", "d")])) }
        _ = try bob.drainPushes()

        XCTAssertEqual(try a.request("focus", [("doc", "d"), ("node", "panel")]).errorCode, "bad_request", "not focusable")
        XCTAssertEqual(try a.request("focus", [("doc", "d"), ("node", "ghost")]).errorCode, "not_found")
        let focus = try a.request("focus", [("doc", "d"), ("node", "field")])
        ok(focus)
        XCTAssertEqual(focus["scope"], "panel", "focus picks the undo scope")
        var seen = presences(try bob.drainPushes())
        XCTAssertEqual(seen.count, 1)
        XCTAssertEqual(seen.first?["user"], "alice")
        XCTAssertEqual(seen.first?["client"], "A")
        XCTAssertEqual(seen.first?["node"], "field")
        XCTAssertTrue(presences(try a.drainPushes()).isEmpty, "a terminal is not told its own presence")

        ok(try a.request("select", [("doc", "d"), ("node", "field"), ("start", 1), ("end", 3)]))
        XCTAssertEqual(try a.request("select", [("doc", "d"), ("node", "field"), ("start", 2), ("end", 9)]).errorCode, "bad_request")
        seen = presences(try bob.drainPushes())
        XCTAssertEqual(seen.last?["selection"], ["node": "field", "start": 1, "end": 3])

        // Bob types in front of alice's selection: it moves, and bob is told where it went.
        try bob.submit("d", tx: "k", base: 1, [["op": "insert", "node": "field", "pos": 0, "text": ">> "]])
        seen = presences(try bob.drainPushes())
        XCTAssertEqual(seen.last?["selection"], ["node": "field", "start": 4, "end": 6])

        // A terminal opening later is told who is where.
        let carol = try f.terminal("bob", client: "C")
        ok(try carol.request("open", [("doc", "d")]))
        seen = presences(try carol.drainPushes())
        XCTAssertEqual(seen.count, 1)
        XCTAssertEqual(seen.first?["selection"], ["node": "field", "start": 4, "end": 6])

        // Killed: gone at once for everyone, no ghost.
        a.disconnect()
        for t in [bob, carol] {
            let gone = try t.push("presence")
            XCTAssertEqual(gone["client"], "A")
            XCTAssertEqual(gone["node"], .null)
        }
        let late = try f.terminal("bob", client: "D")
        ok(try late.request("open", [("doc", "d")]))
        XCTAssertTrue(presences(try late.drainPushes()).isEmpty)
    }

    /// A terminal that goes silent past the idle timeout loses its presence.
    func testIdleTerminalLosesItsPresence() throws {
        let f = try Fixture(serverArguments: ["--idle-timeout", "2"])
        let a = try f.terminal("alice", client: "A")
        let bob = try f.terminal("bob")
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, bob] { ok(try t.request("open", [("doc", "d")])) }
        ok(try a.request("focus", [("doc", "d"), ("node", "note")]))
        XCTAssertEqual(try bob.push("presence")["node"], "note")
        // Bob keeps talking; alice goes quiet.
        var gone: JSONObject?
        for _ in 0..<12 where gone == nil {
            usleep(500_000)
            gone = presences(try bob.drainPushes()).first
        }
        XCTAssertEqual(gone?["client"], "A")
        XCTAssertEqual(gone?["node"], .null)
    }

    func testHitTestOverTheWire() throws {
        let f = try Fixture()
        let a = f.alice
        try a.submit("d", tx: "seed", base: 0, seed)
        ok(try a.request("open", [("doc", "d")]))
        XCTAssertEqual(try a.request("hit_test", [("doc", "d"), ("x", 115), ("y", 115)])["node"], "field", "nested, in parent coordinates")
        XCTAssertEqual(try a.request("hit_test", [("doc", "d"), ("x", 250.5), ("y", 250)])["node"], "panel")
        XCTAssertEqual(try a.request("hit_test", [("doc", "d"), ("x", 10), ("y", 10)])["node"], "note")
        XCTAssertEqual(try a.request("hit_test", [("doc", "d"), ("x", 500), ("y", 10)])["node"], "root")
        XCTAssertEqual(try a.request("hit_test", [("doc", "d"), ("x", "1"), ("y", 10)]).errorCode, "bad_request")
    }

    /// Actions walk the chain: undo goes to the nearest undo history, the
    /// editing menu validates with titles, delete/copy/paste/select_all work
    /// on the first responder's selection.
    func testPerformAndValidateAlongTheChain() throws {
        let f = try Fixture()
        let a = f.alice
        try a.submit("d", tx: "seed", base: 0, seed)
        ok(try a.request("open", [("doc", "d")]))
        ok(try a.request("focus", [("doc", "d"), ("node", "field")]))
        // Typing in the field belongs to the panel's history.
        ok(try a.request("submit", [("doc", "d"), ("tx", "k"), ("base", 1), ("ops", [["op": "insert", "node": "field", "pos": 5, "text": "!"]])]))

        var menu = try a.request("validate", [("doc", "d"), ("actions", ["undo", "redo", "copy", "paste", "select_all", "fly"])])
        var actions = try XCTUnwrap(menu["actions"]?.objectValue)
        XCTAssertEqual(actions["undo"], ["enabled": true, "title": "Undo Typing", "by": "panel"])
        XCTAssertEqual(actions["redo"], ["enabled": false, "title": "Redo", "by": "panel"])
        XCTAssertEqual(actions["copy"], ["enabled": false, "title": "Copy", "by": nil], "no selection: nobody claims copy")
        XCTAssertEqual(actions["select_all"], ["enabled": true, "title": "Select All", "by": "field"])
        XCTAssertEqual(actions["fly"], ["enabled": false, "title": "fly", "by": nil])
        // Seen from the document, its own history: the (unnamed) seed.
        menu = try a.request("validate", [("doc", "d"), ("actions", ["undo"]), ("target", "document")])
        XCTAssertEqual(menu["actions"]?.objectValue?["undo"], ["enabled": true, "title": "Undo", "by": "document"])

        let undo = try a.request("perform", [("doc", "d"), ("action", "undo")])
        ok(undo)
        XCTAssertEqual(undo["handled_by"], "panel")
        XCTAssertEqual(try text(a, "field"), "hello")
        XCTAssertEqual(try a.request("perform", [("doc", "d"), ("action", "fly")]).errorCode, "not_found")
        XCTAssertEqual(try a.request("perform", [("doc", "d"), ("action", "copy")]).errorCode, "not_found", "nothing selected")
        XCTAssertEqual(try a.request("perform", [("doc", "d"), ("action", "undo"), ("target", "ghost")]).errorCode, "not_found")

        let all = try a.request("perform", [("doc", "d"), ("action", "select_all")])
        XCTAssertEqual(all["selection"], ["node": "field", "start": 0, "end": 5])
        let copy = try a.request("perform", [("doc", "d"), ("action", "copy")])
        XCTAssertEqual(copy["handled_by"], "field")
        XCTAssertEqual(copy["text"], "hello")
        ok(try a.request("select", [("doc", "d"), ("node", "field"), ("start", 1), ("end", 4)]))
        menu = try a.request("validate", [("doc", "d"), ("actions", ["delete"])])
        XCTAssertEqual(menu["actions"]?.objectValue?["delete"], ["enabled": true, "title": "Delete", "by": "field"])
        ok(try a.request("perform", [("doc", "d"), ("action", "delete")]))
        XCTAssertEqual(try text(a, "field"), "ho")
        ok(try a.request("perform", [("doc", "d"), ("action", "paste")]))
        XCTAssertEqual(try text(a, "field"), "hhelloo", "pasted at the caret the delete left")
        ok(try a.request("perform", [("doc", "d"), ("action", "paste"), ("args", ["text": "[x]"])]))
        XCTAssertEqual(try text(a, "field"), "hhello[x]o", "the caret moved past the paste")
        let h = try a.request("history", [("doc", "d")])
        XCTAssertEqual(h["undo"]?.arrayValue?.compactMap { $0.objectValue?["action"]?.stringValue }, ["Paste", "Paste", "Delete"])
        XCTAssertEqual(h["scope"], "panel")

        // A bare caret: the field claims delete and copy, greyed out (the node is not deleted).
        menu = try a.request("validate", [("doc", "d"), ("actions", ["delete", "copy"])])
        XCTAssertEqual(menu["actions"]?.objectValue?["delete"], ["enabled": false, "title": "Delete", "by": "field"])
        XCTAssertEqual(menu["actions"]?.objectValue?["copy"], ["enabled": false, "title": "Copy", "by": "field"])
        XCTAssertEqual(try a.request("perform", [("doc", "d"), ("action", "delete")]).errorCode, "not_found")

        // Deleting with no selection at all deletes the first responder itself (document level).
        ok(try a.request("focus", [("doc", "d"), ("node", "note")]))
        let del = try a.request("perform", [("doc", "d"), ("action", "delete")])
        XCTAssertEqual(del["handled_by"], "document")
        XCTAssertNil(try a.request("open", [("doc", "d")])["state"]?.objectValue?["nodes"]?.objectValue?["note"])
    }

    /// Presence goes away on `close`, on a replaced connection, and when
    /// another user deletes the focused node; a request pipelined behind `open`
    /// of a document others already have loaded runs after that open.
    func testPresenceOnCloseReplaceDeleteAndPipelinedOpen() throws {
        let f = try Fixture()
        let a = try f.terminal("alice", client: "A")
        let a2 = try f.terminal("alice", client: "A2")
        let bob = try f.terminal("bob")
        try bob.submit("d", tx: "seed", base: 0, seed)
        ok(try bob.request("open", [("doc", "d")]))
        ok(try a2.request("open", [("doc", "d")]))

        // open + focus in one write, on a document already loaded: focus runs after the open.
        let replies = try a.pipeline([["id": 1, "type": "open", "doc": "d"], ["id": 2, "type": "focus", "doc": "d", "node": "note"]])
        ok(replies[1]!)
        ok(replies[2]!)
        var seen = try bob.push("presence")
        XCTAssertEqual(seen["node"], "note")
        XCTAssertEqual(try a2.push("presence")["client"], "A", "another terminal of the same user sees it too")

        // close: gone for the others.
        ok(try a.request("close", [("doc", "d")]))
        seen = try bob.push("presence")
        XCTAssertEqual(seen["client"], "A")
        XCTAssertEqual(seen["node"], .null)

        // Replaced by a new connection with the same client id: gone, and the old one is told why.
        ok(try a.request("open", [("doc", "d")]))
        ok(try a.request("focus", [("doc", "d"), ("node", "field")]))
        XCTAssertEqual(try bob.push("presence")["node"], "field")
        let again = try f.terminal("alice", client: "A")
        XCTAssertEqual(try a.push("bye")["reason"], "replaced")
        seen = try bob.push("presence")
        XCTAssertEqual(seen["node"], .null)

        // Bob deletes the node alice's new connection focuses: her focus is dropped and pushed.
        ok(try again.request("open", [("doc", "d")]))
        ok(try again.request("focus", [("doc", "d"), ("node", "note")]))
        XCTAssertEqual(try bob.push("presence")["node"], "note")
        try bob.submit("d", tx: "del", base: 1, [["op": "delete", "node": "note"]])
        seen = try bob.push("presence")
        XCTAssertEqual(seen["client"], "A")
        XCTAssertEqual(seen["node"], .null)
        XCTAssertEqual(try again.request("blur", [("doc", "d")])["ok"], true)
        XCTAssertTrue(presences(try bob.drainPushes()).isEmpty, "nothing left to take away")
    }

    /// `--presence-moves quiet`: carets moved by others' edits are not pushed,
    /// but the server keeps them moved (a terminal opening later sees where they are).
    func testQuietPresenceMovesKeepTheMovedCaretWithoutPushing() throws {
        let f = try Fixture(serverArguments: ["--presence-moves", "quiet"])
        let a = try f.terminal("alice", client: "A")
        let bob = try f.terminal("bob")
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, bob] { ok(try t.request("open", [("doc", "d")])) }
        ok(try a.request("select", [("doc", "d"), ("node", "field"), ("start", 5)]))
        XCTAssertEqual(try bob.push("presence")["selection"], ["node": "field", "start": 5, "end": 5])
        try bob.submit("d", tx: "k", base: 1, [["op": "insert", "node": "field", "pos": 0, "text": "ab"]])
        XCTAssertTrue(presences(try bob.drainPushes()).isEmpty, "quiet: the move is not pushed")
        let later = try f.terminal("bob", client: "L")
        ok(try later.request("open", [("doc", "d")]))
        XCTAssertEqual(presences(try later.drainPushes()).first?["selection"], ["node": "field", "start": 7, "end": 7])
        // Losing focus is still pushed.
        try bob.submit("d", tx: "del", base: 2, [["op": "delete", "node": "panel"]])
        XCTAssertEqual(presences(try bob.drainPushes()).first?["node"], .null)
    }

    /// `open`, `focus`, `undo`, `close` in one write on a document another
    /// terminal keeps loaded: the undo runs in the scope that focus picked,
    /// and the close closes what the open opened.
    func testPipelinedOpenFocusUndoCloseKeepTheirOrder() throws {
        let f = try Fixture()
        let a = try f.terminal("alice", client: "A")
        let bob = try f.terminal("bob")
        try bob.submit("d", tx: "seed", base: 0, seed)
        ok(try bob.request("open", [("doc", "d")]))
        ok(try a.request("open", [("doc", "d")]))
        try a.submit("d", tx: "k", base: 1, [["op": "insert", "node": "field", "pos": 5, "text": "!"]])
        ok(try a.request("close", [("doc", "d")]))

        let lines: [JSON] = [
            ["id": 1, "type": "open", "doc": "d"],
            ["id": 2, "type": "focus", "doc": "d", "node": "field"],
            ["id": 3, "type": "undo", "doc": "d"],
            ["id": 4, "type": "close", "doc": "d"],
        ]
        let replies = try a.pipeline(lines)
        for id in 1...2 as ClosedRange<Int64> { ok(replies[id]!) }
        XCTAssertEqual(replies[3]?["action"], "Typing", "undone in the panel's history, which the focus picked: \(JSONWriter.string(.object(replies[3]!)))")
        XCTAssertEqual(replies[4]?["closed"], true)
        XCTAssertEqual(try text(bob, "field"), "hello")
    }
}
