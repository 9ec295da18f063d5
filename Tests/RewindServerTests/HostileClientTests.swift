import Glibc
import RewindCore
@testable import RewindServer
import XCTest

/// What a hostile client found (issue 28), each as a user of the service
/// would notice it: the server stays up, answers, and stops working for
/// clients that left.
final class HostileClientTests: XCTestCase {
    func textNode(_ id: String, _ text: String) -> JSON {
        .obj([("op", "create"), ("node", .string(id)), ("parent", "root"), ("kind", "text"),
              ("frame", [0, 0, 9, 9]), ("text", .string(text))])
    }

    /// The exact lines: a remove with huge numbers, one version
    /// behind the head, killed the process while rebasing. Now it is
    /// `bad_request`, nothing is appended, and the server goes on serving.
    func testHugePositionsInALateSubmitAreRefusedAndTheServerGoesOn() throws {
        let (s, alice) = try seededServer([textNode("t", "hello")])
        XCTAssertTrue(try alice.request("submit", [("doc", "d"), ("tx", "b"), ("base", 1),
                                                   ("ops", [.obj([("op", "remove"), ("node", "t"), ("pos", 0), ("len", 1)])])]).isOK)
        let huge = JSON.int(4_611_686_018_427_387_904)
        let lines: [(String, [(String, JSON)])] = [
            ("submit", [("doc", "d"), ("tx", "c"), ("base", 1), ("ops", [.obj([("op", "remove"), ("node", "t"), ("pos", huge), ("len", huge)])])]),
            ("submit", [("doc", "d"), ("tx", "e"), ("base", 1), ("ops", [.obj([("op", "insert"), ("node", "t"), ("pos", .int(Int64.max)), ("text", "x")])])]),
            // In range of the field's bound, out of range of the text at base.
            ("submit", [("doc", "d"), ("tx", "f"), ("base", 1), ("ops", [.obj([("op", "remove"), ("node", "t"), ("pos", 3), ("len", 3)])])]),
            ("submit", [("doc", "d"), ("tx", "g"), ("base", 1), ("ops", [.obj([("op", "insert"), ("node", "t"), ("pos", 6), ("text", "x")])])]),
        ]
        let ids = alice.pipeline(lines.map { (type: $0.0, fields: $0.1) })
        for r in try replies(alice, ids) {
            XCTAssertEqual(r.errorCode, "bad_request", JSONWriter.string(.object(r)))
        }
        XCTAssertTrue(try alice.request("ping").isOK)
        XCTAssertEqual(try s.eventCount("d"), 2, "nothing was appended")
        let opened = try alice.request("open", [("doc", "d")])
        XCTAssertEqual(opened["state"]?.objectValue?["nodes"]?.objectValue?["t"]?.objectValue?["text"], "ello")
    }

    /// A client pipelines many `open`s of a large document, never reads, and
    /// closes. The server used to go on encoding those replies for minutes
    /// (its writes failing unseen, since it had stopped reading that
    /// client). Now the first failed write ends the connection: the rest of
    /// what it pipelined is never taken.
    func testWorkQueuedForAClientEndsWhenTheClientGoes() throws {
        let s = try SteppedServer { $0.metricsAddress = ("127.0.0.1", 0) }
        let alice = try s.terminal("alice", client: "A")
        XCTAssertTrue(try alice.request("create_doc", [("doc", "big")]).isOK)
        let chunk = String(repeating: "x", count: 250_000)
        for i in 0..<8 {
            XCTAssertTrue(try alice.request("submit", [("doc", "big"), ("tx", .string("n\(i)")), ("base", .int(Int64(i))),
                                                       ("ops", [textNode("n\(i)", chunk)])]).isOK)
        }
        let hostile = try s.terminal("alice", client: "H")
        hostile.shrinkReceiveBuffer(to: 4096)
        let opensBefore = s.server.metrics!.counts.requests[RequestLabels.index(of: "open")]
        let pipelined = 400
        hostile.pipeline(Array(repeating: (type: "open", fields: [("doc", JSON.string("big"))]), count: pipelined))
        for _ in 0..<200 { s.turn() }  // the server fills what the client's socket holds, then waits
        let connected = s.server.connectionCount
        XCTAssertEqual(connected, 2)

        hostile.leave()  // with the replies unread: the kernel resets the connection
        try s.turn(until: { s.server.connectionCount == 1 }, within: 10, "the server to see the client gone")
        for _ in 0..<200 { s.turn() }
        let opens = s.server.metrics!.counts.requests[RequestLabels.index(of: "open")] - opensBefore
        XCTAssertLessThan(opens, 20, "opens taken from a client that never read and then left: \(opens) of \(pipelined)")
        XCTAssertTrue(try alice.request("ping").isOK)
    }
}
