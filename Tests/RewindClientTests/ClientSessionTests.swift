import RewindCore
import XCTest

@testable import RewindClient

/// The session's side of the protocol, line by line: what it sends, in what
/// order, and what it does with replies and pushes (the server's side of the
/// same exchanges is tested against a real server in RewindIntegrationTests).
final class ClientSessionTests: XCTestCase {
    private var session: ClientSession!
    private var failures: [String] = []

    override func setUp() {
        session = ClientSession(options: .init(user: "alice", token: "tok", doc: "d", client: "c1"))
        failures = []
        session.onChange = { [unowned self] c in if case let .failed(r, e) = c { self.failures.append("\(r): \(e.code)") } }
    }

    /// What the session wrote since the last call, as objects.
    private func sent() -> [JSONObject] {
        session.takeOutgoing().map { try! JSONParser.parse($0).objectValue! }
    }

    private func reply(_ to: JSONObject, _ fields: [(String, JSON?)] = []) {
        session.receive(Message.line(.obj([("re", to["id"]!), ("ok", true)] + fields)))
    }

    private func push(_ kind: String, _ fields: [(String, JSON?)]) {
        session.receive(Message.line(.obj([("push", .string(kind))] + fields)))
    }

    private static let textNode: JSON = ["nodes": ["root": ["parent": nil, "children": ["t"], "kind": "root", "frame": [0, 0, 0, 0],
                                                              "clips": false, "focusable": false, "undoScope": false, "props": [:], "text": ""],
                                                   "t": ["parent": "root", "children": [], "kind": "text", "frame": [0, 0, 10, 10],
                                                         "clips": false, "focusable": true, "undoScope": false, "props": [:], "text": "ab"]]]

    private static func event(_ v: Int64, user: String, tx: String, _ ops: [Op]) -> JSON {
        .obj([("id", .string("e\(v)")), ("version", .int(v)), ("user", .string(user)), ("client", "x"), ("kind", "edit"),
              ("group", "g"), ("action", nil), ("tx", .string(tx)), ("ops", Op.encodeList(ops))])
    }

    /// hello and open answered: the session is ready at version 3 with "ab" in t.
    private func ready() {
        session.connected()
        let hello = sent()
        XCTAssertEqual(hello.map { $0["type"]?.stringValue }, ["hello"])
        XCTAssertEqual(hello[0]["client"]?.stringValue, "c1")
        reply(hello[0], [("client", "c1"), ("user", "alice")])
        let open = sent()
        XCTAssertEqual(open.map { $0["type"]?.stringValue }, ["open"])
        XCTAssertNil(open[0]["since"])
        reply(open[0], [("version", 3), ("state", Self.textNode)])
        XCTAssertEqual(session.status, .ready)
    }

    func testRepliesGoToTheirRequestsByReInWhateverOrderTheyCome() {
        ready()
        var got: [String] = []
        session.send("history", [("doc", "d")]) { r in got.append("history \((try? r.get())?["n"]?.intValue ?? -1)") }
        session.send("validate", [("doc", "d")]) { r in got.append("validate \((try? r.get())?["n"]?.intValue ?? -1)") }
        let out = sent()
        reply(out[1], [("n", 2)])
        reply(out[0], [("n", 1)])
        XCTAssertEqual(got, ["validate 2", "history 1"])
    }

    func testEditsMadeWhileASubmitIsInFlightGoOutTogetherAfterItsCommit() throws {
        ready()
        try session.edit([.insert("t", pos: 2, text: ["c"])])
        let first = sent().filter { $0["type"]?.stringValue == "submit" }
        XCTAssertEqual(first.count, 1)
        XCTAssertEqual(first[0]["base"]?.intValue, 3)
        try session.edit([.insert("t", pos: 3, text: ["d"])])
        try session.edit([.insert("t", pos: 4, text: ["e"])])
        XCTAssertTrue(sent().filter { $0["type"]?.stringValue == "submit" }.isEmpty, "a second submit before the first commits")
        XCTAssertEqual(session.document.view["t"]?.textString, "abcde")
        // Someone types at the start meanwhile; then the first submit commits.
        push("events", [("doc", "d"), ("events", [Self.event(4, user: "bob", tx: "b1", [.insert("t", pos: 0, text: ["X"])])])])
        XCTAssertEqual(session.document.view["t"]?.textString, "Xabcde")
        push("events", [("doc", "d"), ("events", [Self.event(5, user: "alice", tx: first[0]["tx"]!.stringValue!, [.insert("t", pos: 3, text: ["c"])])])])
        reply(first[0], [("version", 5)])
        let second = sent().filter { $0["type"]?.stringValue == "submit" }
        XCTAssertEqual(second.count, 1)
        XCTAssertEqual(second[0]["base"]?.intValue, 5)
        XCTAssertEqual(try Op.parseList(second[0]["ops"], limits: Limits()),
                       [.insert("t", pos: 4, text: ["d"]), .insert("t", pos: 5, text: ["e"])], "moved past bob's X")
        XCTAssertNotEqual(second[0]["tx"], first[0]["tx"])
    }

    func testAfterAReconnectTheSubmitInFlightIsSentAgainUnchangedWithItsTx() throws {
        ready()
        try session.edit([.insert("t", pos: 0, text: ["z"])])
        let submit = sent().first { $0["type"]?.stringValue == "submit" }!
        session.disconnected("network")
        XCTAssertEqual(session.status, .disconnected("network"))
        try session.edit([.insert("t", pos: 1, text: ["y"])])   // typed while away: kept
        XCTAssertEqual(sent().count, 0)
        session.connected()
        reply(sent()[0])   // hello
        let open = sent()
        XCTAssertEqual(open[0]["since"]?.intValue, 3, "catch up from the version held, not the whole state")
        // Someone else's event came in meanwhile; ours is not in the log.
        reply(open[0], [("version", 4), ("events", [Self.event(4, user: "bob", tx: "b1", [.insert("t", pos: 2, text: ["Q"])])])])
        let again = sent()
        let resent = again.first { $0["type"]?.stringValue == "submit" }!
        XCTAssertEqual(resent["tx"], submit["tx"])
        XCTAssertEqual(resent["base"], submit["base"])
        XCTAssertEqual(resent["ops"], submit["ops"])
        XCTAssertEqual(session.document.view["t"]?.textString, "zyabQ")
    }

    func testAfterAReconnectASubmitFoundInTheLogIsNotSentAgain() throws {
        ready()
        try session.edit([.insert("t", pos: 0, text: ["z"])])
        let submit = sent().first { $0["type"]?.stringValue == "submit" }!
        session.disconnected("network")
        session.connected()
        reply(sent()[0])
        let open = sent()
        reply(open[0], [("version", 4), ("events", [Self.event(4, user: "alice", tx: submit["tx"]!.stringValue!, [.insert("t", pos: 0, text: ["z"])])])])
        XCTAssertTrue(sent().allSatisfy { $0["type"]?.stringValue != "submit" })
        XCTAssertTrue(session.document.isSettled)
        XCTAssertEqual(session.document.view["t"]?.textString, "zab")
    }

    func testUndoWaitsForTheSubmitBeforeItAndEditsAfterItWaitForTheUndo() throws {
        ready()
        try session.edit([.insert("t", pos: 2, text: ["c"])])
        session.undo()
        let first = sent()
        XCTAssertEqual(first.map { $0["type"]?.stringValue }, ["submit"])
        try session.edit([.insert("t", pos: 3, text: ["d"])])
        push("events", [("doc", "d"), ("events", [Self.event(4, user: "alice", tx: first[0]["tx"]!.stringValue!, [.insert("t", pos: 2, text: ["c"])])])])
        reply(first[0], [("version", 4)])
        let undo = sent()
        XCTAssertEqual(undo.map { $0["type"]?.stringValue }, ["undo"], "the undo, and not yet the edit after it")
        push("events", [("doc", "d"), ("events", [Self.event(5, user: "alice", tx: undo[0]["tx"]!.stringValue!, [.remove("t", pos: 2, len: 1)])])])
        XCTAssertEqual(session.document.view["t"]?.textString, "abd")
        reply(undo[0], [("version", 5), ("action", "Typing"), ("selection", ["node": "t", "start": 2, "end": 2])])
        let after = sent()
        XCTAssertEqual(after.first?["type"]?.stringValue, "submit")
        XCTAssertEqual(after.first?["base"]?.intValue, 5)
        XCTAssertEqual(try Op.parseList(after.first?["ops"], limits: Limits()), [.insert("t", pos: 2, text: ["d"])])
    }

    func testARefusedSubmitDropsWhatWasPendingAndSaysSo() throws {
        ready()
        try session.edit([.insert("t", pos: 2, text: ["c"])])
        let s = sent()[0]
        try session.edit([.insert("t", pos: 3, text: ["d"])])
        session.receive(Message.line(.obj([("re", s["id"]!), ("ok", false), ("error", ["code": "conflict", "message": "gone"])])))
        XCTAssertEqual(session.document.view["t"]?.textString, "ab")
        XCTAssertTrue(session.document.isSettled)
        XCTAssertEqual(failures, ["submit: conflict"])
        try session.edit([.insert("t", pos: 0, text: ["n"])])
        XCTAssertEqual(sent().first?["base"]?.intValue, 3, "the next edit goes out at once")
    }

    func testPushesKeepPresencePromptsAndTitles() {
        ready()
        push("presence", [("doc", "d"), ("user", "bob"), ("client", "b1"), ("node", "t"), ("selection", ["node": "t", "start": 1, "end": 1])])
        XCTAssertEqual(session.presence["b1"]?.start, 1)
        push("prompt", [("doc", "d"), ("prompt", ["id": "p1", "title": "Undo Typing", "message": "", "style": "alert", "level": "normal",
                                                  "reason": "shake", "actions": [["id": "cancel", "title": "Cancel", "style": "cancel"],
                                                                                 ["id": "undo", "title": "Undo", "style": "default"]]])])
        XCTAssertEqual(session.prompts.map(\.title), ["Undo Typing"])
        XCTAssertEqual(session.prompts.first?.actions.map(\.id), ["cancel", "undo"])
        push("prompt_state", [("doc", "d"), ("scope", nil), ("can_undo", true), ("can_redo", false),
                              ("undo_title", "Undo Typing"), ("redo_title", "Redo"), ("presented", ["p1"])])
        XCTAssertEqual(session.promptState.undoTitle, "Undo Typing")
        push("dismiss", [("prompt", "p1")])
        XCTAssertTrue(session.prompts.isEmpty)
        push("presence", [("doc", "d"), ("user", "bob"), ("client", "b1"), ("node", nil)])
        XCTAssertNil(session.presence["b1"])
        push("bye", [("reason", "replaced"), ("retry", false), ("message", "another connection took your client id")])
        XCTAssertEqual(session.status, .closed(ClientError(code: "replaced", message: "another connection took your client id")))
    }

    func testABadTokenClosesTheSessionAndAnUnavailableServerIsRetried() {
        session.connected()
        let hello = sent()[0]
        session.receive(Message.line(.obj([("re", hello["id"]!), ("ok", false), ("error", ["code": "unavailable", "message": "db down"])])))
        guard case .disconnected = session.status else { return XCTFail("\(session.status)") }
        session.connected()
        let again = sent()[0]
        session.receive(Message.line(.obj([("re", again["id"]!), ("ok", false), ("error", ["code": "unauthorized", "message": "bad token"])])))
        XCTAssertEqual(session.status, .closed(ClientError(code: "unauthorized", message: "bad token")))
    }
}
