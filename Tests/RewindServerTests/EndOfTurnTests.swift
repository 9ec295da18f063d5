import XCTest
@testable import RewindCore
@testable import RewindServer

/// The end of a loop turn runs its phases in one order (`EndOfTurn.swift`),
/// and the order is not arbitrary: what a phase queues for terminals goes out
/// in the same turn only if `output` comes after it. Shown here by running
/// the same exchange with the phases reordered.
final class EndOfTurnTests: XCTestCase {
    /// Bob's first edit: the turn that answers it carries the reply and the
    /// `prompt_state` that says he can now undo it — or, with `output` before
    /// `promptStates`, the reply alone, the `prompt_state` left queued until
    /// something next wakes the loop.
    func promptStateWithTheReply(order: [EndOfTurnPhase]) throws -> (withReply: Bool, later: Bool) {
        let (s, _) = try seededServer(MailboxTests.note)
        s.server.endOfTurnOrder = order
        let bob = try s.terminal("bob", client: "B")
        XCTAssertTrue(try bob.request("open", [("doc", "d")]).isOK)
        _ = try bob.push("prompt_state") { $0["can_undo"] == false }
        let id = bob.pipeline([("submit", [("doc", "d"), ("tx", "b1"), ("base", 1), ("ops", .array(OrderingTests.insert("note", "x")))])])[0]
        let reply = try bob.reply(to: id)
        XCTAssertTrue(reply.isOK, "\(reply)")
        let canUndo = { bob.received.contains { $0["push"] == "prompt_state" && $0["can_undo"] == true } }
        let withReply = canUndo()
        // Anything that wakes the loop (a ping) writes what was left queued.
        XCTAssertTrue(try bob.request("ping").isOK)
        return (withReply, canUndo())
    }

    func testWhatAPhaseQueuesGoesOutInTheSameTurnBecauseOutputComesAfterIt() throws {
        XCTAssertEqual(EndOfTurnPhase.allCases, [.closeAfterTurn, .hellos, .presenceMoved, .promptStates, .output, .quickActions, .clusterNotices, .commits])
        let inOrder = try promptStateWithTheReply(order: EndOfTurnPhase.allCases)
        XCTAssertTrue(inOrder.withReply, "prompt_state written in the turn that answered the submit")

        var outputFirst = EndOfTurnPhase.allCases
        outputFirst.removeAll { $0 == .output }
        outputFirst.insert(.output, at: outputFirst.firstIndex(of: .promptStates)!)
        let reordered = try promptStateWithTheReply(order: outputFirst)
        XCTAssertFalse(reordered.withReply, "output before promptStates: the reply went out without its prompt_state")
        XCTAssertTrue(reordered.later, "…which waited for the next thing to wake the loop")
    }
}
