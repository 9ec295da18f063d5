import RewindCore
import RewindStore
import XCTest

/// Prompts and shake to undo over TCP against real PostgreSQL (issue 4).
final class PromptIntegrationTests: XCTestCase {
    let seed: [JSON] = [
        ["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "text": "", "focusable": true, "frame": [0, 0, 100, 20]],
        ["op": "create", "node": "box", "parent": "root", "index": 1, "kind": "view", "frame": [0, 50, 10, 10], "focusable": true],
    ]

    func ok(_ r: JSONObject, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r["ok"], true, JSONWriter.string(.object(r)), file: file, line: line)
    }

    func kinds(_ pushes: [JSONObject]) -> [String] { pushes.compactMap { $0["push"]?.stringValue } }

    /// The newest `prompt_state` among `pushes`.
    func lastPromptState(_ pushes: [JSONObject]) -> JSONObject? { pushes.last { $0["push"] == "prompt_state" } }

    func move(_ t: Terminal, tx: String, base: Int64, x: Int64) throws {
        ok(try t.request("submit", [("doc", "d"), ("tx", .string(tx)), ("base", .int(base)), ("action", "Move"),
                                    ("ops", [["op": "set", "node": "box", "key": "frame", "value": [.int(x), 50, 10, 10]]])]))
    }

    /// Shake on A presents the undo prompt on A only; a second shake shows no
    /// second prompt; answering Undo reverts the group, dismisses the prompt on
    /// A and pushes the new prompt_state to both of alice's terminals.
    func testShakeToUndoOnOneTerminal() throws {
        let f = try Fixture()
        let a = f.alice
        let b = try f.terminal("alice", client: "B")
        let bob = try f.terminal("bob")
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, b, bob] { ok(try t.request("open", [("doc", "d")])) }
        try move(a, tx: "m1", base: 1, x: 40)
        for t in [a, b, bob] { _ = try t.drainPushes() }

        let shake = try a.request("motion", [("doc", "d"), ("motion", "shake")])
        let id = try XCTUnwrap(shake["prompt"]?.stringValue, JSONWriter.string(.object(shake)))
        let pushes = try a.drainPushes()
        let prompt = try XCTUnwrap(pushes.first { $0["push"] == "prompt" }?["prompt"]?.objectValue)
        XCTAssertEqual(prompt["id"], .string(id))
        XCTAssertEqual(prompt["title"], "Undo Move")
        XCTAssertEqual(prompt["feedback"], "success")
        XCTAssertEqual(prompt["level"], "normal")
        XCTAssertEqual(prompt["actions"], [["id": "cancel", "title": "Cancel", "style": "cancel"], ["id": "undo", "title": "Undo", "style": "default"]])
        XCTAssertEqual(lastPromptState(pushes)?["presented"], [.string(id)])
        XCTAssertFalse(kinds(try b.drainPushes()).contains("prompt"), "alice's other terminal is not shown A's prompt")
        XCTAssertFalse(kinds(try bob.drainPushes()).contains("prompt"))

        let again = try a.request("motion", [("doc", "d"), ("motion", "shake")])
        XCTAssertEqual(again["prompt"], .string(id), "a second shake names the prompt already shown")
        XCTAssertFalse(kinds(try a.drainPushes()).contains("prompt"), "and presents nothing new")

        XCTAssertEqual(try b.request("respond", [("prompt", .string(id)), ("action", "undo")]).errorCode, "not_found",
                       "only a terminal that shows the prompt answers it")
        let answer = try a.request("respond", [("prompt", .string(id)), ("action", "undo")])
        ok(answer)
        XCTAssertEqual(answer["action"], "Move")
        XCTAssertEqual(answer["version"], 3)
        let after = try a.drainPushes()
        XCTAssertEqual(after.first { $0["push"] == "dismiss" }?["prompt"], .string(id))
        let stateA = try XCTUnwrap(lastPromptState(after))
        XCTAssertEqual(stateA["undo_title"], "Undo", "the seed (unnamed) is next")
        XCTAssertEqual(stateA["redo_title"], "Redo Move")
        XCTAssertEqual(stateA["presented"], [])
        let stateB = try XCTUnwrap(lastPromptState(try b.drainPushes()), "alice's other terminal gets the new prompt_state")
        XCTAssertEqual(stateB["can_redo"], true)
        XCTAssertEqual(stateB["presented"], [], "it never showed A's prompt")
        XCTAssertNil(lastPromptState(try bob.drainPushes()), "bob's history did not change")
        let box = try a.request("open", [("doc", "d")])["state"]?.objectValue?["nodes"]?.objectValue?["box"]?.objectValue
        XCTAssertEqual(box?["frame"], [0, 50, 10, 10], "the move is undone")
        XCTAssertEqual(try a.request("respond", [("prompt", .string(id)), ("action", "undo")]).errorCode, "not_found", "answered once")

        // Both possible now: "Undo" with Undo, "Redo Move", Cancel.
        let both = try a.request("motion", [("doc", "d"), ("motion", "shake")])
        let bothPrompt = try a.push("prompt")["prompt"]?.objectValue
        XCTAssertEqual(bothPrompt?["id"], both["prompt"])
        XCTAssertEqual(bothPrompt?["title"], "Undo")
        XCTAssertEqual(bothPrompt?["actions"]?.arrayValue?.compactMap { $0.objectValue?["title"]?.stringValue }, ["Undo", "Redo Move", "Cancel"])
    }

    /// Answering Undo after another group went on top is `conflict`, and the prompt goes away.
    func testAnsweringUndoWhenTheGroupIsNoLongerOnTopIsAConflict() throws {
        let f = try Fixture()
        let a = f.alice
        try a.submit("d", tx: "seed", base: 0, seed)
        ok(try a.request("open", [("doc", "d")]))
        try move(a, tx: "m1", base: 1, x: 40)
        let id = try XCTUnwrap(try a.request("motion", [("doc", "d"), ("motion", "shake")])["prompt"]?.stringValue)
        try move(a, tx: "m2", base: 2, x: 80)
        let answer = try a.request("respond", [("prompt", .string(id)), ("action", "undo")])
        XCTAssertEqual(answer.errorCode, "conflict", JSONWriter.string(.object(answer)))
        XCTAssertTrue(try a.drainPushes().contains { $0["push"] == "dismiss" && $0["prompt"] == .string(id) })
        XCTAssertEqual(try f.db.eventCount("d"), 3, "nothing was undone")
    }

    /// One prompt per level: later ones wait in order and are shown after a
    /// dismiss; an `alert`-level error prompt shows above at once; Undo Anyway
    /// runs the conflicting undo with force.
    func testQueuedPromptsArriveInOrderAndAlertsShowAbove() throws {
        let f = try Fixture()
        let a = try Terminal(port: f.server.port)
        ok(try a.request("hello", [("user", "alice"), ("token", .string(f.db.tokens["alice"]!)), ("client", "A"), ("error_prompts", true)]))
        let bob = try f.terminal("bob")
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, bob] { ok(try t.request("open", [("doc", "d")])) }
        try a.submit("d", tx: "red", base: 1, [["op": "set", "node": "box", "key": "color", "value": "red"]])
        try bob.submit("d", tx: "blue", base: 2, [["op": "set", "node": "box", "key": "color", "value": "blue"]])
        _ = try a.drainPushes()

        let shake = try XCTUnwrap(try a.request("motion", [("doc", "d"), ("motion", "shake")])["prompt"]?.stringValue)
        let conflict = try a.request("undo", [("doc", "d")])
        let conflictID = try XCTUnwrap(conflict["prompt"]?.stringValue, JSONWriter.string(.object(conflict)))
        var pushes = try a.drainPushes()
        XCTAssertEqual(pushes.filter { $0["push"] == "prompt" }.compactMap { $0["prompt"]?.objectValue?["id"] }, [.string(shake)],
                       "the conflict prompt waits behind the shake prompt")

        XCTAssertEqual(try a.request("focus", [("doc", "d"), ("node", "nowhere")]).errorCode, "not_found")
        pushes = try a.drainPushes()
        let error = try XCTUnwrap(pushes.first { $0["push"] == "prompt" }?["prompt"]?.objectValue, "an error prompt, at alert level, shows at once")
        XCTAssertEqual(error["level"], "alert")
        XCTAssertEqual(error["feedback"], "error")
        XCTAssertEqual(error["error"]?.objectValue?["code"], "not_found")
        XCTAssertEqual(lastPromptState(pushes)?["presented"], [error["id"]!, .string(shake)], "alert level first: it is on top")

        ok(try a.request("respond", [("prompt", .string(shake)), ("action", "cancel")]))
        pushes = try a.drainPushes()
        XCTAssertEqual(kinds(pushes).filter { $0 == "dismiss" || $0 == "prompt" }, ["dismiss", "prompt"])
        let next = try XCTUnwrap(pushes.first { $0["push"] == "prompt" }?["prompt"]?.objectValue)
        XCTAssertEqual(next["id"], .string(conflictID))
        XCTAssertEqual(next["title"], "Undo changes what bob did since")
        XCTAssertEqual(next["actions"]?.arrayValue?.first?.objectValue?["style"], "destructive")

        let anyway = try a.request("respond", [("prompt", .string(conflictID)), ("action", "undo_anyway")])
        ok(anyway)
        XCTAssertEqual(anyway["version"], 4)
        let box = try a.request("open", [("doc", "d")])["state"]?.objectValue?["nodes"]?.objectValue?["box"]?.objectValue
        XCTAssertNil(box?["props"]?.objectValue?["color"], "forced: the colour from before alice's edit (none)")
    }

    /// What a terminal showed is cancelled when it goes: reconnecting as the
    /// same client and shaking presents a fresh prompt, not the old one.
    /// A terminal whose connection is lost keeps its undo prompt (stored in
    /// PostgreSQL): opening the document again shows it again, answered once.
    /// One that closes the document cancels it.
    func testAPromptWaitsForItsTerminalToComeBackButClosingTheDocumentCancelsIt() throws {
        let f = try Fixture()
        let a = try f.terminal("alice", client: "A")
        try a.submit("d", tx: "seed", base: 0, seed)
        ok(try a.request("open", [("doc", "d")]))
        try move(a, tx: "m1", base: 1, x: 40)
        let id = try XCTUnwrap(try a.request("motion", [("doc", "d"), ("motion", "shake")])["prompt"]?.stringValue)
        a.disconnect()
        let again = try f.terminal("alice", client: "A")
        ok(try again.request("open", [("doc", "d")]))
        let shown = try again.push("prompt")
        XCTAssertEqual(shown["prompt"]?.objectValue?["id"], .string(id), "the same prompt, shown again")
        XCTAssertEqual(shown["prompt"]?.objectValue?["title"], "Undo Move")
        ok(try again.request("respond", [("prompt", .string(id)), ("action", "undo")]))
        XCTAssertEqual(try again.request("respond", [("prompt", .string(id)), ("action", "undo")]).errorCode, "not_found", "answered once")
        XCTAssertEqual(try f.db.eventCount("d"), 3)

        // Another terminal of alice's (another client) is not shown it; closing the document cancels it.
        try move(again, tx: "m2", base: 3, x: 60)
        let second = try XCTUnwrap(try again.request("motion", [("doc", "d"), ("motion", "shake")])["prompt"]?.stringValue)
        XCTAssertNotEqual(second, id)
        let other = try f.terminal("alice", client: "B")
        ok(try other.request("open", [("doc", "d")]))
        usleep(300_000)  // stored prompts are read after the open's answer
        XCTAssertFalse(try other.drainPushes().contains { $0["push"] == "prompt" }, "prompts are for the terminal that was shown them")
        ok(try again.request("close", [("doc", "d")]))
        ok(try again.request("open", [("doc", "d")]))
        usleep(300_000)
        XCTAssertEqual(lastPromptState(try again.drainPushes())?["presented"], [])
        XCTAssertEqual(try again.request("respond", [("prompt", .string(second)), ("action", "undo")]).errorCode, "not_found")
        XCTAssertEqual(try f.db.eventCount("d"), 4, "the cancelled prompt undid nothing")
    }

    /// `shake_to_edit: false` turns shaking off; `gestures` bind gestures to actions.
    func testShakeOffAndGestures() throws {
        let f = try Fixture()
        let a = try Terminal(port: f.server.port)
        ok(try a.request("hello", [("user", "alice"), ("token", .string(f.db.tokens["alice"]!)), ("shake_to_edit", false),
                                   ("gestures", ["two_finger_tap": "redo", "three_finger_tap": nil, "swipe_left": "undo"])]))
        try a.submit("d", tx: "seed", base: 0, seed)
        ok(try a.request("open", [("doc", "d")]))
        try move(a, tx: "m1", base: 1, x: 40)
        let shake = try a.request("motion", [("doc", "d"), ("motion", "shake")])
        ok(shake)
        XCTAssertEqual(shake["prompt"], .null)
        XCTAssertEqual(try a.request("motion", [("doc", "d"), ("motion", "wobble")]).errorCode, "bad_request")

        let undo = try a.request("gesture", [("doc", "d"), ("gesture", "swipe_left")])
        ok(undo)
        XCTAssertEqual(undo["handled_by"], "document")
        XCTAssertEqual(undo["action"], "Move")
        XCTAssertEqual(try a.request("gesture", [("doc", "d"), ("gesture", "three_finger_tap")]).errorCode, "not_found", "unbound")
        let redo = try a.request("gesture", [("doc", "d"), ("gesture", "two_finger_tap")])
        ok(redo)
        XCTAssertEqual(redo["version"], 4)

        // Defaults: two-finger tap undoes.
        let b = try f.terminal("alice", client: "B")
        ok(try b.request("open", [("doc", "d")]))
        let tap = try b.request("gesture", [("doc", "d"), ("gesture", "two_finger_tap")])
        ok(tap)
        XCTAssertEqual(tap["version"], 5)
        XCTAssertEqual(try b.request("hello", [("user", "alice"), ("token", .string(f.db.tokens["alice"]!)), ("gestures", [1])]).errorCode,
                       "bad_request")
    }

    /// A session pasted in one go (as the README's `nc` session is): focus on
    /// a node created by the line before, shake, and answer the prompt by the
    /// id it will get — each request sees what the lines before it did.
    func testPipelinedCreateFocusShakeAndRespond() throws {
        let f = try Fixture()
        let a = f.alice
        let lines: [JSON] = [
            ["id": 99, "type": "open", "doc": "d"],
            ["id": 100, "type": "submit", "doc": "d", "tx": "t1", "base": 0, "ops": .array(seed)],
            ["id": 101, "type": "submit", "doc": "d", "tx": "t2", "base": 1, "ops": [["op": "insert", "node": "t", "pos": 0, "text": "hi"]]],
            ["id": 102, "type": "focus", "doc": "d", "node": "t"],
            ["id": 103, "type": "select", "doc": "d", "node": "t", "start": 2],
            ["id": 104, "type": "motion", "doc": "d", "motion": "shake"],
            ["id": 105, "type": "respond", "prompt": "d:p1", "action": "undo"],
        ]
        let replies = try a.pipeline(lines)
        for id in 99...104 as ClosedRange<Int64> { ok(replies[id]!) }
        let answer = replies[105]!
        ok(answer)
        XCTAssertEqual(answer["action"], "Typing")
        XCTAssertEqual(try a.request("open", [("doc", "d")])["state"]?.objectValue?["nodes"]?.objectValue?["t"]?.objectValue?["text"], "")
    }

    /// A terminal's own typing does not move its selection (its `select` says
    /// where it is); someone else's typing before it does.
    func testOwnEditsDoNotMoveTheSelection() throws {
        let f = try Fixture()
        let a = f.alice
        let bob = try f.terminal("bob")
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, bob] { ok(try t.request("open", [("doc", "d")])) }
        ok(try a.request("select", [("doc", "d"), ("node", "t"), ("start", 0)]))
        try a.submit("d", tx: "k1", base: 1, [["op": "insert", "node": "t", "pos": 0, "text": "ab"]])
        ok(try a.request("select", [("doc", "d"), ("node", "t"), ("start", 2)]))
        var seen = try bob.drainPushes().filter { $0["push"] == "presence" }.compactMap { $0["selection"]?.objectValue?["start"] }
        XCTAssertEqual(seen, [0, 2], "only alice's own selects: her typing did not shift her caret to 4")
        try bob.submit("d", tx: "b1", base: 2, [["op": "insert", "node": "t", "pos": 0, "text": "xyz"]])
        seen = try bob.drainPushes().filter { $0["push"] == "presence" }.compactMap { $0["selection"]?.objectValue?["start"] }
        XCTAssertEqual(seen, [5], "bob's typing before alice's caret moves it")
    }

    /// Each level holds one shown prompt and 16 waiting; the 17th waiting is
    /// refused with `rate_limited` and nothing is lost. Titles follow the locale.
    func testAFullPromptQueueIsRateLimited() throws {
        let f = try Fixture()
        let a = try Terminal(port: f.server.port)
        ok(try a.request("hello", [("user", "alice"), ("token", .string(f.db.tokens["alice"]!)), ("locale", "zh-TW")]))
        let bob = try f.terminal("bob")
        try a.submit("d", tx: "seed", base: 0, seed)
        for t in [a, bob] { ok(try t.request("open", [("doc", "d")])) }
        try move(a, tx: "m1", base: 1, x: 40)
        try bob.submit("d", tx: "b", base: 2, [["op": "set", "node": "box", "key": "frame", "value": [7, 50, 10, 10]]])
        var ids: [String] = []
        for _ in 0..<17 {
            let r = try a.request("undo", [("doc", "d")])
            ok(r)
            ids.append(try XCTUnwrap(r["prompt"]?.stringValue))
        }
        XCTAssertEqual(try a.request("undo", [("doc", "d")]).errorCode, "rate_limited")
        let shown = try a.drainPushes().filter { $0["push"] == "prompt" }.compactMap { $0["prompt"]?.objectValue }
        XCTAssertEqual(shown.count, 1, "one shown, 16 waiting")
        XCTAssertEqual(shown.first?["title"], "還原「移動」會更改 bob 之後所做的變更")
        XCTAssertEqual(shown.first?["actions"]?.arrayValue?.compactMap { $0.objectValue?["title"]?.stringValue }, ["仍要還原", "取消"])
        // Dismissing each shows the next, in the order presented.
        var order: [String] = [ids[0]]
        for id in ids.dropLast() {
            ok(try a.request("respond", [("prompt", .string(id)), ("action", "cancel")]))
            if let next = try a.drainPushes().first(where: { $0["push"] == "prompt" })?["prompt"]?.objectValue?["id"]?.stringValue {
                order.append(next)
            }
        }
        XCTAssertEqual(order, ids)
        XCTAssertEqual(try f.db.eventCount("d"), 3, "cancelled: nothing undone")
    }

    /// The redo-only and "neither" cases over the wire, Redo Anyway, the
    /// default three-finger tap, and error prompts only for terminals that asked.
    func testRedoOnlyNeitherRedoAnywayAndErrorPrompts() throws {
        let f = try Fixture(doc: nil)
        let a = f.alice
        ok(try a.request("create_doc", [("doc", "d")]))
        try a.share("d", "bob")
        ok(try a.request("open", [("doc", "d")]))
        XCTAssertEqual(try a.request("motion", [("doc", "d"), ("motion", "shake")])["prompt"], .null, "neither: no prompt")
        try a.submit("d", tx: "seed", base: 0, seed)
        ok(try a.request("undo", [("doc", "d")]))
        let redoOnly = try a.request("motion", [("doc", "d"), ("motion", "shake")])
        let p = try a.push("prompt")["prompt"]?.objectValue
        XCTAssertEqual(p?["id"], redoOnly["prompt"])
        XCTAssertEqual(p?["title"], "Redo")
        XCTAssertEqual(p?["actions"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue }, ["cancel", "redo"])
        let redone = try a.request("respond", [("prompt", redoOnly["prompt"]!), ("action", "redo")])
        ok(redone)
        XCTAssertEqual(redone["version"], 3)

        // Redo Anyway: bob changes the box after alice's undo; alice's redo conflicts.
        let bob = try f.terminal("bob")
        ok(try bob.request("open", [("doc", "d")]))
        try a.submit("d", tx: "red", base: 3, [["op": "set", "node": "box", "key": "color", "value": "red"]])
        ok(try a.request("undo", [("doc", "d")]))
        try bob.submit("d", tx: "blue", base: 5, [["op": "set", "node": "box", "key": "color", "value": "blue"]])
        let tap = try a.request("gesture", [("doc", "d"), ("gesture", "three_finger_tap")])
        XCTAssertEqual(tap["handled_by"], "document")
        let conflictID = try XCTUnwrap(tap["prompt"]?.stringValue, JSONWriter.string(.object(tap)))
        let conflict = try a.drainPushes().first { $0["push"] == "prompt" }?["prompt"]?.objectValue
        XCTAssertEqual(conflict?["title"], "Redo changes what bob did since")
        XCTAssertEqual(conflict?["actions"]?.arrayValue?.first?.objectValue?["id"], "redo_anyway")
        ok(try a.request("respond", [("prompt", .string(conflictID)), ("action", "redo_anyway")]))
        let box = try a.request("open", [("doc", "d")])["state"]?.objectValue?["nodes"]?.objectValue?["box"]?.objectValue
        XCTAssertEqual(box?["props"]?.objectValue?["color"], "red")

        // Error prompts: not for bob (he did not ask), yes for a terminal that did.
        XCTAssertEqual(try bob.request("submit", [("doc", "d"), ("tx", "x"), ("base", 7), ("ops", [["op": "delete", "node": "ghost"]])]).errorCode, "not_found")
        XCTAssertFalse(try bob.drainPushes().contains { $0["push"] == "prompt" })
        let asked = try Terminal(port: f.server.port)
        ok(try asked.request("hello", [("user", "bob"), ("token", .string(f.db.tokens["bob"]!)), ("error_prompts", true)]))
        ok(try asked.request("open", [("doc", "d")]))
        let bad = try asked.request("submit", [("doc", "d"), ("tx", "y"), ("base", 7), ("ops", [["op": "delete", "node": "ghost"]])])
        XCTAssertEqual(bad.errorCode, "not_found")
        let errorPrompt = try XCTUnwrap(try asked.drainPushes().first { $0["push"] == "prompt" }?["prompt"]?.objectValue)
        XCTAssertEqual(errorPrompt["level"], "alert")
        XCTAssertEqual(errorPrompt["request"], "submit")
        XCTAssertEqual(errorPrompt["re"], bad["re"])
        XCTAssertEqual(errorPrompt["message"], bad["error"]?.objectValue?["message"])
        XCTAssertEqual(try f.db.eventCount("d"), 7, "nothing committed was lost")
    }
}
