import RewindCore
import RewindStore
import XCTest

/// Scrub and Restore Version over TCP against real PostgreSQL (issue 12).
final class ScrubTests: XCTestCase {
    /// alice's document with five edits: a text node typed into and a prop set.
    private func fixture() throws -> Fixture {
        let f = try Fixture()
        XCTAssertEqual(try f.alice.request("open", [("doc", "d")])["ok"], true)
        try f.alice.submit("d", tx: "1", base: 0, [["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "text": "one"]])
        try f.alice.submit("d", tx: "2", base: 1, [["op": "insert", "node": "t", "pos": 3, "text": " two"]])
        try f.alice.submit("d", tx: "3", base: 2, [["op": "create", "node": "box", "parent": "root", "index": 1, "kind": "view", "frame": [0, 0, 5, 5]]])
        try f.alice.submit("d", tx: "4", base: 3, [["op": "set", "node": "box", "key": "color", "value": "red"]])
        try f.alice.submit("d", tx: "5", base: 4, [["op": "move", "node": "t", "parent": "box", "index": 0]])
        return f
    }

    func testScrubShowsEveryVersionAsTheLogHasItAndChangesNothing() throws {
        let f = try fixture()
        for (progress, version) in [(0.0, 0), (0.4, 2), (1.0, 5), (0.59, 3), (0.2, 1), (0.8, 4)] as [(Double, Int64)] {
            let r = try f.alice.request("scrub", [("doc", "d"), ("progress", .double(progress))])
            XCTAssertEqual(r["version"], .int(version), "progress \(progress): \(JSONWriter.string(.object(r)))")
            XCTAssertEqual(r["state"], try Replay.document("d", to: version, db: f.db.db).document.json, "state at \(version)")
        }
        XCTAssertEqual(try f.db.eventCount("d"), 5, "scrubbing changes nothing")
        XCTAssertEqual(try f.alice.request("scrub", [("doc", "d"), ("progress", 1.5)]).errorCode, "bad_request")
        XCTAssertEqual(try f.alice.request("scrub_cancel", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try f.alice.request("scrub_commit", [("doc", "d")]).errorCode, "bad_request", "nothing to commit after a cancel")
    }

    func testScrubCommitRestoresTheVersionAsOneUndoableRestoreVersionGroup() throws {
        let f = try fixture()
        let bob = try f.terminal("bob")
        XCTAssertEqual(try bob.request("open", [("doc", "d")])["ok"], true)
        let headState = try Replay.document("d", db: f.db.db).document.json
        XCTAssertEqual(try f.alice.request("scrub", [("doc", "d"), ("progress", 0.4)])["version"], 2)
        let commit = try f.alice.request("scrub_commit", [("doc", "d"), ("tx", "restore-1")])
        XCTAssertEqual(commit["ok"], true, "\(commit)")
        XCTAssertEqual(commit["version"], 6)
        let restored = try Replay.document("d", db: f.db.db)
        XCTAssertEqual(restored.document.json, try Replay.document("d", to: 2, db: f.db.db).document.json, "the head is now version 2's state")
        // bob sees it as one event of kind restore
        var pushed: JSONObject?
        while pushed == nil {
            let p = try bob.push("events")
            if let e = p["events"]?.arrayValue?.first?.objectValue, e["version"] == 6 { pushed = e }
        }
        XCTAssertEqual(pushed?["kind"], "restore")
        XCTAssertEqual(pushed?["action"], "Restore Version")
        // one undo group, titled in the terminal's locale
        let h = try f.alice.request("history", [("doc", "d")])
        XCTAssertEqual(h["undo"]?.arrayValue?.first?.objectValue?["action"], "Restore Version")
        XCTAssertEqual(try f.alice.request("undo", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try Replay.document("d", db: f.db.db).document.json, headState, "undo brings back the head state exactly")
        // a retry of the commit's tx appends nothing more
        XCTAssertEqual(try f.alice.request("scrub", [("doc", "d"), ("progress", 0.0)])["version"], 0)
        XCTAssertEqual(try f.alice.request("scrub_commit", [("doc", "d"), ("tx", "restore-1")])["ok"], false, "same tx, other content: conflict")
    }

    func testOthersEditsSinceTheScrubBeganAreKeptAndViewersMayOnlyLook() throws {
        let f = try fixture()
        let bob = try f.terminal("bob")
        XCTAssertEqual(try f.alice.request("scrub", [("doc", "d"), ("progress", 0.8)])["version"], 4)  // undoes the move
        try bob.submit("d", tx: "b1", base: 5, [["op": "insert", "node": "t", "pos": 0, "text": "bob: "]])
        XCTAssertEqual(try f.alice.request("scrub_commit", [("doc", "d")])["ok"], true)
        let state = try Replay.document("d", db: f.db.db).document
        XCTAssertEqual(state["t"]?.parent, "root", "the move is undone")
        XCTAssertEqual(state["t"]?.textString, "bob: one two", "bob's typing since the scrub began is kept")

        // A viewer may scrub (look), not commit.
        try f.alice.share("d", "bob", "viewer")
        let viewer = try f.terminal("bob", client: "viewer")
        XCTAssertEqual(try viewer.request("open", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try viewer.request("scrub", [("doc", "d"), ("progress", 0.5)])["ok"], true)
        XCTAssertEqual(try viewer.request("scrub_commit", [("doc", "d")]).errorCode, "forbidden")
    }

    /// A session pasted in one write: the peek and the scrub see the submits
    /// sent before them, and the commit takes the scrub sent before it.
    func testPeekAndScrubPastedBehindSubmitsSeeThemAndKeepTheirOrder() throws {
        let f = try Fixture()
        func submit(_ id: Int64, _ base: Int64, _ op: JSON) -> JSON {
            .obj([("id", .int(id)), ("type", "submit"), ("doc", "d"), ("tx", .string("p\(id)")), ("base", .int(base)), ("ops", .array([op]))])
        }
        let replies = try f.alice.pipeline([
            .obj([("id", 1), ("type", "open"), ("doc", "d")]),
            submit(2, 0, ["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "text": "a"]),
            submit(3, 1, ["op": "insert", "node": "t", "pos": 1, "text": "b"]),
            submit(4, 2, ["op": "insert", "node": "t", "pos": 2, "text": "c"]),
            .obj([("id", 5), ("type", "undo"), ("doc", "d")]),
            .obj([("id", 6), ("type", "peek"), ("doc", "d"), ("version", 3), ("node", "t")]),
            .obj([("id", 7), ("type", "scrub"), ("doc", "d"), ("progress", 0.5)]),
            .obj([("id", 8), ("type", "scrub_commit"), ("doc", "d")]),
            .obj([("id", 9), ("type", "undo"), ("doc", "d")]),
        ])
        XCTAssertEqual(replies[6]?["head"], 4, "the peek came after the submits and the undo: \(replies[6]!)")
        XCTAssertEqual(replies[6]?["state"]?.objectValue?["nodes"]?.objectValue?["t"]?.objectValue?["text"], "abc")
        XCTAssertEqual(replies[7]?["version"], 2, "half of head 4")
        XCTAssertEqual(replies[8]?["restored"], true, "\(replies[8]!)")
        XCTAssertEqual(replies[8]?["version"], 5)
        XCTAssertEqual(replies[9]?["action"], "Restore Version", "the undo after the commit undoes the restore")
        XCTAssertEqual(try Replay.document("d", db: f.db.db).document["t"]?.textString, "a", "typing undone, restored to \"ab\", that undone")
    }
}
