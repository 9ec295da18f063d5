import RewindCore
@testable import RewindServer
import XCTest

/// The connection's serial mailbox and the close after the loop turn.
final class MailboxTests: XCTestCase {
    static let note: [JSON] = [
        ["op": "create", "node": "note", "parent": "root", "index": 0, "kind": "text", "frame": [0, 0, 50, 50], "focusable": true],
    ]

    /// The next frame is taken once the request before it is processed —
    /// applied to the speculative ledger — not once it is answered: twenty
    /// pipelined submits are all applied before the first one commits, and
    /// their replies still come in order, each after its commit.
    func testPipelinedSubmitsAreAllAppliedBeforeTheFirstCommits() throws {
        let (s, alice) = try seededServer(Self.note)
        let ids = alice.pipeline((1...20).map { v in
            ("submit", [("doc", "d"), ("tx", .string("t\(v)")), ("base", .int(Int64(v))), ("ops", .array(OrderingTests.insert("note", "x")))])
        })
        try s.turn(until: { s.document("d")?.current.version == 21 }, "the 20 submits applied")
        XCTAssertEqual(s.document("d")?.committed.version, 1, "none of them committed yet")
        XCTAssertEqual(try replies(alice, ids).map { $0["version"] }, (2...21).map { .int(Int64($0)) })
        XCTAssertEqual(try s.eventCount("d"), 21)
    }

    /// A request waiting for the database holds the connection's next
    /// frames, not other connections': bob is served while alice's `open`
    /// waits for the log's head.
    func testAWaitingRequestHoldsOnlyItsOwnConnection() throws {
        let (s, alice) = try seededServer(Self.note)
        let bob = try s.terminal("bob")
        let aliceIDs = alice.pipeline([("open", [("doc", "d")]), ("focus", [("doc", "d"), ("node", "note")])])
        let bobPing = bob.pipeline([("ping", [])])[0]
        _ = try bob.reply(to: bobPing)
        let r = try replies(alice, aliceIDs)
        XCTAssertTrue(r[0].isOK && r[1].isOK, "\(r)")
    }

    /// A connection marked to close (a slow terminal found in the middle of
    /// a broadcast) takes no more pushes and is closed after the loop turn:
    /// then its presence goes, and the others are told.
    func testAConnectionMarkedToCloseIsClosedAfterTheLoopTurn() throws {
        let (s, alice) = try seededServer(Self.note)
        let bob = try s.terminal("bob", client: "B")
        for t in [alice, bob] { XCTAssertTrue(try t.request("open", [("doc", "d")]).isOK) }
        XCTAssertTrue(try bob.request("focus", [("doc", "d"), ("node", "note")]).isOK)
        _ = try alice.push("presence") { $0["user"] == "bob" && $0["node"] == "note" }

        let connection = try XCTUnwrap((1...3).lazy.flatMap { s.server.sessions.sessions(ofUser: $0) }.first { $0.user.name == "bob" }).connection
        connection.closeAfterTurn(reason: "slow", retry: true, message: "marked by the test")
        XCTAssertFalse(connection.isClosed, "not closed in the middle of what marked it")
        XCTAssertEqual(s.document("d")?.presence[connection.id].node, "note", "its presence stays until the turn ends")
        XCTAssertTrue(try alice.request("submit", [("doc", "d"), ("tx", "a"), ("base", 1), ("ops", .array(OrderingTests.insert("note", "x")))]).isOK)
        XCTAssertTrue(connection.isClosed, "closed once the turn was over")
        _ = try alice.push("presence") { $0["user"] == "bob" && $0["node"] == .null }
        try s.turn(until: { bob.read(); return bob.closed }, "bob's connection to close")
        let last = try XCTUnwrap(bob.received.last)
        XCTAssertEqual(last["push"], "bye", "\(last)")
        XCTAssertEqual(last["reason"], "slow")
        XCTAssertFalse(bob.received.contains { $0["push"] == "events" }, "no push after it was marked")
    }
}
