import RewindCore
@testable import RewindServer
import XCTest

/// A second connection with a user's client id takes it over (the first is
/// told `bye` `replaced`); the table that finds it is keyed by a hash of
/// (user, client id), and pairs whose hashes collide are still each their own.
final class ClientTableTests: XCTestCase {
    func testClientIdsWhoseHashesCollideAreStillEachTheirOwn() throws {
        let s = try SteppedServer()
        s.server.sessions.clientHash = { _, _ in 7 }  // every pair collides
        let aliceA = try s.terminal("alice", client: "A")
        let bobA = try s.terminal("bob", client: "A")
        let aliceB = try s.terminal("alice", client: "B")
        func held(_ user: String, _ client: String) -> String? {
            let id: Int64 = user == "alice" ? 1 : 2
            return s.server.sessions.client(user: id, client: client).map { "\($0.handle)/\($0.client)#\($0.id)" }
        }
        let alice1 = try XCTUnwrap(held("alice", "A"))
        XCTAssertEqual(held("bob", "A")?.hasPrefix("bob/A#"), true)
        XCTAssertEqual(held("alice", "B")?.hasPrefix("alice/B#"), true)
        XCTAssertNil(held("bob", "B"))

        // alice/A again: the first alice/A is replaced, no one else.
        let aliceA2 = try s.terminal("alice", client: "A")
        try s.turn(until: { aliceA.read(); return aliceA.closed }, "the first alice/A to be closed")
        XCTAssertEqual(aliceA.received.last { $0["push"] == "bye" }?["reason"], "replaced")
        XCTAssertNotEqual(held("alice", "A"), alice1)
        XCTAssertTrue(try bobA.request("ping").isOK)
        XCTAssertTrue(try aliceB.request("ping").isOK)

        // bob/A leaves (the pair holding the hash's slot, or not): the others are still found.
        bobA.leave()
        try s.turn(until: { held("bob", "A") == nil }, "bob/A to be forgotten")
        XCTAssertEqual(held("alice", "A")?.hasPrefix("alice/A#"), true)
        XCTAssertEqual(held("alice", "B")?.hasPrefix("alice/B#"), true)
        // …and bob/A again is a new session, replacing nothing.
        let bobA2 = try s.terminal("bob", client: "A")
        XCTAssertEqual(held("bob", "A")?.hasPrefix("bob/A#"), true)
        XCTAssertTrue(try aliceA2.request("ping").isOK)
        XCTAssertTrue(try aliceB.request("ping").isOK)
        _ = bobA2
    }
}
