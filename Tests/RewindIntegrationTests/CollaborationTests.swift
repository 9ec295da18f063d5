import RewindCore
import RewindStore
import XCTest

/// Terminals sharing documents over real TCP, against real PostgreSQL.
final class CollaborationTests: XCTestCase {
    func textNode(_ id: String, _ text: String) -> JSON {
        ["op": "create", "node": .string(id), "parent": "root", "index": 0, "kind": "text", "frame": [0, 0, 100, 20], "text": .string(text)]
    }

    func testHelloIsRequiredAndIdentityComesFromTheToken() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let t = try Terminal(port: server.port)
        XCTAssertEqual(try t.request("open", [("doc", "x")]).errorCode, "unauthorized")
        XCTAssertEqual(try t.request("hello", [("user", "alice"), ("token", "not-a-token")]).errorCode, "unauthorized")
        // Bob's token with Alice's name is refused: the token decides who you are.
        XCTAssertEqual(try t.request("hello", [("user", "alice"), ("token", .string(db.tokens["bob"]!))]).errorCode, "unauthorized")
        let ok = try t.hello("alice", db, client: "laptop")
        XCTAssertEqual(ok["user"], "alice")
        XCTAssertEqual(ok["client"], "laptop")
        XCTAssertEqual(ok["protocol"], 1)
    }

    func testRequestsPipelinedBehindHelloAreAnsweredInOrder() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let t = try Terminal(port: server.port)
        // Everything in one write, as when a session is pasted into nc.
        let lines: [JSON] = [
            ["id": 1, "type": "hello", "user": "alice", "token": .string(db.tokens["alice"]!)],
            ["id": 2, "type": "create_doc", "doc": "p"],
            ["id": 3, "type": "open", "doc": "p"],
            ["id": 4, "type": "submit", "doc": "p", "tx": "1", "base": 0, "ops": [["op": "set", "node": "root", "key": "k", "value": 1]]],
        ]
        t.sendRaw(lines.flatMap { Message.line($0) })
        for id in 1...4 as ClosedRange<Int64> {
            let r = try t.reply(to: id)
            XCTAssertEqual(r["ok"], true, "\(id): \(JSONWriter.string(.object(r)))")
        }
    }

    func testTwoTerminalsSeeEachOthersEditsInVersionOrder() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let a = try Terminal(port: server.port), b = try Terminal(port: server.port)
        try a.hello("alice", db)
        try b.hello("bob", db)
        XCTAssertEqual(try a.request("create_doc", [("doc", "plan")])["version"], 0)
        XCTAssertEqual(try b.request("create_doc", [("doc", "plan")]).errorCode, "conflict")
        try a.share("plan", "bob")
        XCTAssertEqual(try a.request("open", [("doc", "plan")])["version"], 0)
        XCTAssertEqual(try b.request("open", [("doc", "plan")])["version"], 0)

        XCTAssertEqual(try a.submit("plan", tx: "a1", base: 0, [textNode("t", "hello")]), 1)
        // The author gets its own event before the reply.
        XCTAssertEqual(try a.push("events")["events"]?.arrayValue?.first?.objectValue?["version"], 1)
        XCTAssertEqual(try b.submit("plan", tx: "b1", base: 1, [["op": "insert", "node": "t", "pos": 5, "text": " world"]]), 2)
        for i in 0..<5 { try a.submit("plan", tx: "a-set-\(i)", base: 2 + Int64(i), [["op": "set", "node": "t", "key": "n", "value": .int(Int64(i))]]) }

        var seenByB: [Int64] = []
        while seenByB.count < 7 {
            let p = try b.push("events")
            XCTAssertEqual(p["doc"], "plan")
            for e in p["events"]!.arrayValue! { seenByB.append(e.objectValue!["version"]!.intValue!) }
        }
        XCTAssertEqual(seenByB, Array(1...7))
    }

    func testConcurrentTypingFromAnOlderBaseKeepsBothUsersText() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let a = try Terminal(port: server.port), b = try Terminal(port: server.port)
        try a.hello("alice", db)
        try b.hello("bob", db)
        try a.request("create_doc", [("doc", "d")])
        try a.share("d", "bob")
        try a.submit("d", tx: "1", base: 0, [textNode("t", "hello")])
        // Both type against version 1; Bob's arrives second and is rebased.
        try a.submit("d", tx: "2", base: 1, [["op": "insert", "node": "t", "pos": 5, "text": " world"]])
        try b.submit("d", tx: "3", base: 1, [["op": "insert", "node": "t", "pos": 0, "text": "oh, "]])
        let state = try a.request("open", [("doc", "d")])
        XCTAssertEqual(state["version"], 3)
        XCTAssertEqual(state["state"]?.objectValue?["nodes"]?.objectValue?["t"]?.objectValue?["text"], "oh, hello world")
    }

    func testOpeningWithSinceGivesExactlyTheMissedEventsThenLivePushes() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let a = try Terminal(port: server.port)
        try a.hello("alice", db)
        try a.request("create_doc", [("doc", "d")])
        try a.share("d", "bob")
        for i in 1...5 { try a.submit("d", tx: "t\(i)", base: Int64(i - 1), [["op": "set", "node": "root", "key": "k", "value": .int(Int64(i))]]) }
        let b = try Terminal(port: server.port)
        try b.hello("bob", db)
        let r = try b.request("open", [("doc", "d"), ("since", 2)])
        XCTAssertEqual(r["version"], 5)
        XCTAssertEqual(r["events"]?.arrayValue?.map { $0.objectValue!["version"]!.intValue! }, [3, 4, 5])
        XCTAssertEqual(try b.request("open", [("doc", "d"), ("since", 9)]).errorCode, "version")
        try a.submit("d", tx: "t6", base: 5, [["op": "set", "node": "root", "key": "k", "value": 6]])
        XCTAssertEqual(try b.push("events")["events"]?.arrayValue?.first?.objectValue?["version"], 6)
    }

    func testResubmittingATransactionAppendsNothingEvenAfterReconnecting() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let a = try Terminal(port: server.port)
        try a.hello("alice", db, client: "desk")
        try a.request("create_doc", [("doc", "d")])
        try a.share("d", "bob")
        let op: JSON = ["op": "set", "node": "root", "key": "color", "value": "red"]
        XCTAssertEqual(try a.submit("d", tx: "once", base: 0, [op]), 1)
        XCTAssertEqual(try a.submit("d", tx: "once", base: 0, [op]), 1)
        let again = try Terminal(port: server.port)
        try again.hello("alice", db, client: "desk")
        XCTAssertEqual(try a.push("bye")["reason"], "replaced")
        XCTAssertEqual(try again.submit("d", tx: "once", base: 0, [op]), 1)
        XCTAssertEqual(try again.request("submit", [("doc", "d"), ("tx", "once"), ("base", 0),
                                                   ("ops", [["op": "set", "node": "root", "key": "color", "value": "blue"]])]).errorCode, "conflict")
        XCTAssertEqual(try db.eventCount("d"), 1)
    }

    func testReplayEqualsTheLiveStateAtEveryVersion() throws {
        let db = try TestDatabase()
        let server = try ServerProcess(database: db)
        let a = try Terminal(port: server.port)
        try a.hello("alice", db)
        try a.request("create_doc", [("doc", "d")])
        try a.share("d", "bob")
        var live: [Int64: JSON] = [0: try a.request("open", [("doc", "d")])["state"]!]
        let steps: [[JSON]] = [
            [textNode("t", "héllo 😀"), ["op": "create", "node": "box", "parent": "root", "index": 1, "kind": "view", "frame": [1, 2.5, 3, 4]]],
            [["op": "move", "node": "t", "parent": "box", "index": 0], ["op": "set", "node": "box", "key": "clips", "value": true]],
            [["op": "remove", "node": "t", "pos": 1, "len": 2], ["op": "set", "node": "t", "key": "big", "value": 9007199254740993]],
            [["op": "delete", "node": "box"]],
            [textNode("t", "again")],
        ]
        for (i, ops) in steps.enumerated() {
            let v = try a.submit("d", tx: "s\(i)", base: Int64(i), ops)
            let other = try Terminal(port: server.port)
            try other.hello("bob", db)
            live[v] = try other.request("open", [("doc", "d")])["state"]!
        }
        for (version, state) in live {
            let replayed = try Replay.document("d", to: version, db: db.db)
            XCTAssertEqual(JSONWriter.string(replayed.document.json), JSONWriter.string(state), "version \(version)")
        }
        // The CLI prints the same thing.
        let cli = try runRewind(["admin", "replay", "d", "--to", "3", "--database", db.conninfo])
        let printed = try JSONParser.parse(cli.out.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertEqual(printed.objectValue?["state"], live[3])
        XCTAssertEqual(cli.status, 0, cli.err)
    }
}
