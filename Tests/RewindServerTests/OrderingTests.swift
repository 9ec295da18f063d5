import RewindCore
@testable import RewindServer
import XCTest

/// The ordering rules of docs/protocol.md ("Reply order", "Ordering"), one test
/// each, on a server whose loop the test turns: each pipeline is written at
/// once, as a pasted session is, so every request after the first arrives
/// while the one before it may still be waiting.
final class OrderingTests: XCTestCase {
    /// A panel with its own undo history holding a text field, and a note outside it.
    static let seed: [JSON] = [
        ["op": "create", "node": "panel", "parent": "root", "index": 0, "kind": "view", "frame": [100, 100, 200, 200], "undoScope": true],
        ["op": "create", "node": "field", "parent": "panel", "index": 0, "kind": "text", "frame": [10, 10, 100, 20], "focusable": true,
         "text": "hello"],
        ["op": "create", "node": "note", "parent": "root", "index": 1, "kind": "text", "frame": [0, 0, 50, 50], "focusable": true],
    ]

    static func insert(_ node: String, _ text: String, at pos: Int = 0) -> [JSON] {
        [["op": "insert", "node": .string(node), "pos": .int(Int64(pos)), "text": .string(text)]]
    }

    func fixture(configure: (inout ServerConfig) -> Void = { _ in }) throws -> (SteppedServer, SteppedTerminal) {
        try seededServer(Self.seed, configure: configure)
    }

    /// "Lines sent right behind `hello` wait for it."
    func testLinesSentRightBehindHelloWaitForIt() throws {
        let s = try SteppedServer()
        let t = try s.connect()
        let ids = t.pipeline([
            ("hello", [("user", "alice"), ("token", .string(s.tokens["alice"]!))]),
            ("create_doc", [("doc", "e")]),
            ("open", [("doc", "e")]),
        ])
        for r in try replies(t, ids) { XCTAssertTrue(r.isOK, "behind hello, not `unauthorized`: \(JSONWriter.string(.object(r)))") }
    }

    /// "… and so do lines behind a request whose document's roles the server is still reading."
    func testLinesBehindARequestWhoseRolesAreBeingReadWaitForThem() throws {
        let (s, alice) = try fixture()
        XCTAssertTrue(try alice.request("create_doc", [("doc", "e")]).isOK)
        XCTAssertNil(s.server.access.cached("e"), "nothing has read the roles of e yet")
        let note: [JSON] = [["op": "create", "node": "note", "parent": "root", "index": 0, "kind": "text", "frame": [0, 0, 9, 9], "focusable": true]]
        let ids = alice.pipeline([
            ("submit", [("doc", "e"), ("tx", "e1"), ("base", 0), ("ops", .array(note))]),
            ("open", [("doc", "e")]),
            ("focus", [("doc", "e"), ("node", "note")]),
        ])
        let r = try replies(alice, ids)
        XCTAssertEqual(r[0]["version"], 1)
        // `open` answers the committed state; the submit, queued on the document before it, reaches it as a push.
        let opened = try XCTUnwrap(r[1]["version"]?.intValue, "\(r[1])")
        if opened == 0 { XCTAssertEqual(try alice.push("events") { $0["doc"] == "e" }["events"]?.arrayValue?.count, 1) }
        XCTAssertTrue(r[2].isOK, "the focus behind the open finds it open, and the node the submit made: \(r[2])")
    }

    /// "`focus`, `select`, … sent behind an `open` wait for it (even when the
    /// document is already loaded for others)."
    func testRequestsSentBehindAnOpenWaitForItEvenWhenTheDocumentIsLoaded() throws {
        let (s, alice) = try fixture()
        XCTAssertTrue(try alice.request("open", [("doc", "d")]).isOK)
        let bob = try s.terminal("bob")
        let ids = bob.pipeline([
            ("open", [("doc", "d")]),
            ("focus", [("doc", "d"), ("node", "field")]),
            ("select", [("doc", "d"), ("node", "field"), ("start", 1), ("end", 3)]),
            ("hit_test", [("doc", "d"), ("x", 115), ("y", 115)]),
            ("validate", [("doc", "d"), ("actions", ["undo"])]),
            ("history", [("doc", "d")]),
            ("blur", [("doc", "d")]),
            ("close", [("doc", "d")]),
        ])
        let r = try replies(bob, ids)
        for (i, reply) in r.enumerated() { XCTAssertTrue(reply.isOK, "request \(i) behind the open: \(JSONWriter.string(.object(reply)))") }
        XCTAssertEqual(r[3]["node"], "field")
        XCTAssertEqual(r[7]["closed"], true, "the close behind an open closes what it opened")
    }

    /// "… `perform`, `validate`, `motion`, `undo`, `redo`, `history`,
    /// `clear_history`, `set_action` … sent behind an `open` wait for it": a
    /// second terminal of alice's pastes its undo work right behind its open.
    func testUndoRequestsSentBehindAnOpenWaitForIt() throws {
        let (s, _) = try fixture()
        let again = try s.terminal("alice", client: "A2")
        let ids = again.pipeline([
            ("open", [("doc", "d")]),
            ("set_action", [("doc", "d"), ("action", "Seed")]),
            ("validate", [("doc", "d"), ("actions", ["undo"])]),
            ("undo", [("doc", "d")]),
            ("perform", [("doc", "d"), ("action", "redo")]),
            ("motion", [("doc", "d"), ("motion", "shake")]),
            ("clear_history", [("doc", "d")]),
            ("history", [("doc", "d")]),
        ])
        let r = try replies(again, ids)
        for (i, reply) in r.enumerated() { XCTAssertTrue(reply.isOK, "request \(i) behind the open: \(JSONWriter.string(.object(reply)))") }
        XCTAssertEqual(r[2]["actions"]?.objectValue?["undo"]?.objectValue?["title"], "Undo Seed", "validate sees the rename before it")
        XCTAssertEqual(r[3]["action"], "Seed")
        XCTAssertEqual(r[4]["version"], 3, "the redo follows the undo: \(r[4])")
        XCTAssertEqual(r[5]["prompt"], "d:p1", "the shake sees the redone group on top: \(r[5])")
        XCTAssertEqual(r[7]["undo"], [], "history behind clear_history: \(r[7])")
    }

    /// "… they see the document with everything sent before them applied,
    /// including submits not yet committed": the next line is taken once the
    /// submit is applied, not once it is answered.
    func testARequestSeesTheSubmitsSentBeforeItBeforeTheyAreCommitted() throws {
        let (s, alice) = try fixture()
        XCTAssertTrue(try alice.request("open", [("doc", "d")]).isOK)
        let create: [JSON] = [["op": "create", "node": "new", "parent": "root", "index": 2, "kind": "text", "frame": [0, 0, 9, 9], "focusable": true]]
        let ids = alice.pipeline([
            ("submit", [("doc", "d"), ("tx", "n"), ("base", 1), ("ops", .array(create))]),
            ("focus", [("doc", "d"), ("node", "new")]),
        ])
        let focus = try alice.reply(to: ids[1])
        XCTAssertTrue(focus.isOK, "the node the submit creates can be focused on the next line: \(focus)")
        XCTAssertNil(alice.position(ofReplyTo: ids[0]), "… before the submit is answered (it waits for its commit)")
        XCTAssertEqual(try alice.reply(to: ids[0])["version"], 2)
        XCTAssertEqual(try s.eventCount("d"), 2)
    }

    /// "… and an `undo` right after a `focus` uses the scope that focus picked."
    func testAnUndoRightAfterAFocusUsesTheScopeThatFocusPicked() throws {
        let (_, alice) = try fixture()
        XCTAssertTrue(try alice.request("open", [("doc", "d")]).isOK)
        XCTAssertTrue(try alice.request("submit", [("doc", "d"), ("tx", "f"), ("base", 1), ("ops", .array(Self.insert("field", "F")))]).isOK)
        XCTAssertTrue(try alice.request("submit", [("doc", "d"), ("tx", "n"), ("base", 2), ("ops", .array(Self.insert("note", "N")))]).isOK)
        let ids = alice.pipeline([
            ("focus", [("doc", "d"), ("node", "field")]),
            ("undo", [("doc", "d")]),
            ("history", [("doc", "d")]),
        ])
        let r = try replies(alice, ids)
        XCTAssertEqual(r[0]["scope"], "panel")
        XCTAssertEqual(r[1]["version"], 4, "\(r[1])")
        XCTAssertEqual(r[2]["scope"], "panel", "history behind the undo, in the focused scope")
        let state = try alice.request("open", [("doc", "d")])["state"]?.objectValue?["nodes"]?.objectValue
        XCTAssertEqual(state?["field"]?.objectValue?["text"], "hello", "the panel's typing was undone")
        XCTAssertEqual(state?["note"]?.objectValue?["text"], "N", "not the document's, which came later")
    }

    /// "A `respond` sent right behind a `motion` waits for that shake's prompt."
    func testARespondSentRightBehindAMotionWaitsForItsPrompt() throws {
        let (s, alice) = try fixture()
        XCTAssertTrue(try alice.request("open", [("doc", "d")]).isOK)
        let ids = alice.pipeline([
            ("submit", [("doc", "d"), ("tx", "t"), ("base", 1), ("ops", .array(Self.insert("note", "typed"))), ("action", "Typing")]),
            ("motion", [("doc", "d"), ("motion", "shake")]),
            ("respond", [("prompt", "d:p1"), ("action", "undo")]),
        ])
        let r = try replies(alice, ids)
        XCTAssertEqual(r[1]["prompt"], "d:p1", "\(r[1])")
        XCTAssertTrue(r[2].isOK, "the answer found the prompt: \(r[2])")
        XCTAssertEqual(r[2]["version"], 3, "and undid the typing")
        XCTAssertEqual(try s.eventCount("d"), 3)
    }

    /// "Behind an `open` with `since` that needs several pages … until then
    /// the document is not open and such requests are `bad_request`."
    func testBehindAnOpenOfSeveralPagesTheDocumentIsNotOpenUntilTheLast() throws {
        let (s, alice) = try fixture { $0.catchUpPage = 2; $0.recentEvents = 1 }
        for v in 1...5 {
            XCTAssertTrue(try alice.request("submit", [("doc", "d"), ("tx", .string("t\(v)")), ("base", .int(Int64(v))),
                                                      ("ops", .array(Self.insert("note", "x")))]).isOK)
        }
        let bob = try s.terminal("bob")
        let ids = bob.pipeline([("open", [("doc", "d"), ("since", 0)]), ("focus", [("doc", "d"), ("node", "note")])])
        let r = try replies(bob, ids)
        XCTAssertEqual(r[0]["more"], true, "\(r[0])")
        XCTAssertEqual(r[1].errorCode, "bad_request", "not open before the last page: \(r[1])")
    }

    /// "A reply that waits for the database (a `submit` waits for its commit)
    /// can come after the replies to later requests": and never before its commit.
    func testASubmitIsAnsweredOnlyOnceCommittedAndMayFollowLaterReplies() throws {
        let (s, alice) = try fixture()
        let ids = alice.pipeline([
            ("submit", [("doc", "d"), ("tx", "t"), ("base", 1), ("ops", .array(Self.insert("note", "x")))]),
            ("ping", []),
        ])
        _ = try alice.reply(to: ids[1])
        XCTAssertNil(alice.position(ofReplyTo: ids[0]), "the ping behind the submit is answered first")
        try s.turn(until: { alice.position(ofReplyTo: ids[0]) != nil }, "the submit's reply")
        XCTAssertEqual(try s.eventCount("d"), 2, "the event is in the log when its reply is read")
    }
}
