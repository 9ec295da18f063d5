import RewindCore
import RewindStore
import XCTest

/// Peek, pop and preview actions over TCP against real PostgreSQL (issue 12).
final class PreviewTests: XCTestCase {
    /// alice's document `d` at version 5 (snapshots every 2 events, so older
    /// versions come from a snapshot plus the log), shared with bob (editor)
    /// and carol (viewer).
    private func fixture() throws -> Fixture {
        let f = try Fixture(sharedWith: ["bob": "editor", "carol": "viewer"], users: ["alice", "bob", "carol", "dave"],
                            serverArguments: ["--snapshot-every", "2", "--snapshot-bytes-per-event", "0"])
        try f.alice.submit("d", tx: "1", base: 0, [["op": "create", "node": "t", "parent": "root", "index": 0, "kind": "text", "text": "one", "focusable": true]])
        try f.alice.submit("d", tx: "2", base: 1, [["op": "insert", "node": "t", "pos": 3, "text": " two"]])
        try f.alice.submit("d", tx: "3", base: 2, [["op": "create", "node": "box", "parent": "root", "index": 1, "kind": "view", "frame": [0, 0, 5, 5]]])
        try f.alice.submit("d", tx: "4", base: 3, [["op": "set", "node": "box", "key": "color", "value": "red"]])
        try f.alice.submit("d", tx: "5", base: 4, [["op": "move", "node": "t", "parent": "box", "index": 0]])
        return f
    }

    private func ids(_ actions: JSON?) -> [String] {
        (actions?.arrayValue ?? []).compactMap(\.objectValue).map { a in
            let sub = (a["actions"]?.arrayValue ?? []).compactMap { $0.objectValue?["id"]?.stringValue }
            return a["id"]!.stringValue! + (sub.isEmpty ? "" : "(" + sub.joined(separator: ",") + ")")
        }
    }

    func testPeekShowsAnyVersionReadOnlyWithTheActionsTheRoleAllows() throws {
        let f = try fixture()
        usleep(200_000)  // snapshots are stored in the background
        XCTAssertGreaterThan(Int(try f.db.db.query("SELECT count(*) FROM snapshots WHERE doc = 'd'").int(0, 0)!), 0)
        let peeker = try f.terminal("alice", client: "peeker")
        for v in Int64(0)...5 {
            let p = try peeker.request("peek", [("doc", "d"), ("version", .int(v))])
            XCTAssertEqual(p["version"], .int(v))
            XCTAssertEqual(p["state"], try Replay.document("d", to: v, db: f.db.db).document.json, "state at \(v)")
        }
        // Another instance, which has not loaded d: each version from the newest snapshot at or below it plus the log.
        let other = try ServerProcess(database: f.db)
        let far = try Terminal(port: other.port)
        try far.hello("bob", f.db)
        for v in Int64(0)...5 {
            XCTAssertEqual(try far.request("peek", [("doc", "d"), ("version", .int(v))])["state"],
                           try Replay.document("d", to: v, db: f.db.db).document.json, "state at \(v), from a snapshot and the log")
        }
        let head = try peeker.request("peek", [("doc", "d")])
        XCTAssertEqual(head["version"], 5, "the head by default")
        XCTAssertEqual(ids(head["actions"]), ["open", "share(share_editor,share_viewer)"], "the owner at the head: no restore")
        XCTAssertEqual(head["actions"]?.arrayValue?.first?.objectValue?["title"], "Open")
        XCTAssertTrue(try XCTUnwrap(head["preview"]?.stringValue).hasPrefix("pv"))

        let bob = try f.terminal("bob")
        let old = try bob.request("peek", [("doc", "d"), ("version", 2)])
        XCTAssertEqual(ids(old["actions"]), ["open", "restore"], "an editor, earlier version")
        XCTAssertEqual(old["actions"]?.arrayValue?[1].objectValue?["style"], "destructive")
        XCTAssertEqual(old["actions"]?.arrayValue?[1].objectValue?["title"], "Restore This Version")
        let carol = try f.terminal("carol")
        XCTAssertEqual(ids(try carol.request("peek", [("doc", "d"), ("version", 2)])["actions"]), ["open"], "a viewer may only look")

        // One subtree.
        let box = try peeker.request("peek", [("doc", "d"), ("node", "box")])
        XCTAssertEqual(box["state"]?.objectValue?["root"], "box")
        XCTAssertEqual(box["state"]?.objectValue?["nodes"]?.objectValue?.keys, ["box", "t"])

        // Nothing opened, subscribed or focused: an edit does not reach the peeker, nobody sees it present.
        try f.alice.submit("d", tx: "6", base: 5, [["op": "insert", "node": "t", "pos": 0, "text": ">"]])
        XCTAssertFalse(try peeker.drainPushes().contains { $0["push"] == "events" || $0["push"] == "presence" })
        XCTAssertEqual(try peeker.request("select", [("doc", "d"), ("node", "t"), ("start", 0)]).errorCode, "bad_request", "not open")

        XCTAssertEqual(try peeker.request("peek", [("doc", "d"), ("version", 99)]).errorCode, "version")
        XCTAssertEqual(try peeker.request("peek", [("doc", "d"), ("version", 1), ("node", "box")]).errorCode, "not_found", "no box yet at 1")
        XCTAssertEqual(try peeker.request("peek", [("doc", "d"), ("version", -1)]).errorCode, "bad_request")
        let dave = try f.terminal("dave")
        XCTAssertEqual(try dave.request("peek", [("doc", "d")]).errorCode, "not_found", "no role: as if there were no document")
    }

    func testPopOpensTheHeadFocusesThePeekedNodeAndEndsThePreview() throws {
        let f = try fixture()
        XCTAssertEqual(try f.alice.request("open", [("doc", "d")])["ok"], true)
        let bob = try f.terminal("bob")
        let p = try bob.request("peek", [("doc", "d"), ("version", 1), ("node", "t")])
        let id = try XCTUnwrap(p["preview"])
        let popped = try bob.request("pop", [("preview", id)])
        XCTAssertEqual(popped["version"], 5, "pop opens the head, not the previewed version: \(popped)")
        XCTAssertEqual(popped["state"], try Replay.document("d", db: f.db.db).document.json)
        var presence = try f.alice.push("presence")
        while presence["user"] != "bob" { presence = try f.alice.push("presence") }
        XCTAssertEqual(presence["node"], "t", "the peeked node is bob's first responder")
        try f.alice.submit("d", tx: "6", base: 5, [["op": "insert", "node": "t", "pos": 0, "text": ">"]])
        XCTAssertEqual(try bob.push("events")["doc"], "d", "subscribed like open")
        XCTAssertEqual(try bob.request("pop", [("preview", id)]).errorCode, "not_found", "a preview ends when popped")

        // A connection holds the newest 8 previews.
        var made: [JSON] = []
        for _ in 0..<9 { made.append(try XCTUnwrap(try bob.request("peek", [("doc", "d")])["preview"])) }
        XCTAssertEqual(try bob.request("pop", [("preview", made[0])]).errorCode, "not_found", "the oldest expired")
        XCTAssertEqual(try bob.request("pop", [("preview", made[1])])["ok"], true)
    }

    func testPreviewActionsRestoreAVersionUndoablyAndShareAsTheOwner() throws {
        let f = try fixture()
        let bob = try f.terminal("bob")
        let before = try Replay.document("d", db: f.db.db).document.json
        let p = try bob.request("peek", [("doc", "d"), ("version", 2)])
        XCTAssertEqual(try bob.request("preview_action", [("preview", p["preview"]!), ("action", "share_editor"), ("args", ["user": "dave"])]).errorCode,
                       "bad_request", "bob is no owner: share is not offered to him")
        let restored = try bob.request("preview_action", [("preview", p["preview"]!), ("action", "restore")])
        XCTAssertEqual(restored["ok"], true, "\(restored)")
        XCTAssertEqual(restored["version"], 6)
        XCTAssertEqual(restored["from"], 2)
        XCTAssertEqual(try Replay.document("d", db: f.db.db).document.json, try Replay.document("d", to: 2, db: f.db.db).document.json)
        XCTAssertEqual(try f.db.db.query("SELECT kind, action FROM log WHERE doc = 'd' AND version = 6 AND entry = 'event'")[0, 0], "restore")
        XCTAssertEqual(try bob.request("open", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try bob.request("history", [("doc", "d")])["undo"]?.arrayValue?.first?.objectValue?["action"], "Restore Version")
        XCTAssertEqual(try bob.request("undo", [("doc", "d")])["ok"], true)
        XCTAssertEqual(try Replay.document("d", db: f.db.db).document.json, before, "undo brings the head back exactly")
        XCTAssertEqual(try bob.request("preview_action", [("preview", p["preview"]!), ("action", "open")]).errorCode, "not_found", "it ended")

        // The owner shares from a preview; the new viewer can open at once.
        let q = try f.alice.request("peek", [("doc", "d")])
        XCTAssertEqual(try f.alice.request("preview_action", [("preview", q["preview"]!), ("action", "share")]).errorCode, "bad_request",
                       "a group is not an action")
        XCTAssertEqual(try f.alice.request("preview_action", [("preview", q["preview"]!), ("action", "share_viewer")]).errorCode, "bad_request",
                       "args.user is needed")
        let shared = try f.alice.request("preview_action", [("preview", q["preview"]!), ("action", "share_viewer"), ("args", ["user": "dave"])])
        XCTAssertEqual(shared["role"], "viewer", "\(shared)")
        let dave = try f.terminal("dave")
        XCTAssertEqual(try dave.request("open", [("doc", "d")])["ok"], true)

        // A viewer's preview offers no restore, and a viewer cannot run one.
        let carol = try f.terminal("carol")
        let c = try carol.request("peek", [("doc", "d"), ("version", 1)])
        XCTAssertEqual(try carol.request("preview_action", [("preview", c["preview"]!), ("action", "restore")]).errorCode, "bad_request")
        let opened = try carol.request("preview_action", [("preview", c["preview"]!), ("action", "open")])
        XCTAssertEqual(opened["version"], 7, "open: as open of the head")
    }
}
