import RewindCore
@testable import RewindServer
import XCTest

/// At most `limit` hellos are checked at once; the rest wait their turn, in
/// order, and a storm leaves no queue behind.
final class HelloGateTests: XCTestCase {
    func testHellosPastTheLimitWaitTheirTurnInOrder() {
        let gate = HelloGate(limit: 2)
        var started: [Int] = []
        var slots: [Int: HelloGate.Slot] = [:]
        for i in 0..<5 { gate.enter { slot in started.append(i); slots[i] = slot } }
        XCTAssertEqual(started, [0, 1])
        XCTAssertEqual(gate.queued, 3)
        slots[1] = nil  // hello 1 answered
        XCTAssertEqual(started, [0, 1], "a place is given at the end of the loop turn, not from inside what freed it")
        XCTAssertTrue(gate.mayAdmit)
        gate.admitWaiting()
        XCTAssertEqual(started, [0, 1, 2])
        slots[0] = nil
        slots[2] = nil
        gate.admitWaiting()
        XCTAssertEqual(started, [0, 1, 2, 3, 4])
        XCTAssertFalse(gate.mayAdmit)
        XCTAssertEqual(gate.queued, 0)
        XCTAssertEqual(gate.inFlight, 2)
        slots = [:]
        XCTAssertEqual(gate.inFlight, 0)
    }

    /// A storm whose terminals all left while waiting: each gives its place
    /// back at once, and the queue drains in a loop, not a recursion as deep
    /// as the storm (which would overflow the stack).
    func testAQueueOfHellosThatEndAtOnceDrainsWithoutRecursion() {
        let gate = HelloGate(limit: 1)
        var first: HelloGate.Slot?
        gate.enter { first = $0 }
        var ran = 0
        for _ in 0..<200_000 { gate.enter { _ in ran += 1 } }
        XCTAssertEqual(ran, 0)
        first = nil
        gate.admitWaiting()
        XCTAssertEqual(ran, 200_000)
        XCTAssertEqual(gate.inFlight, 0)
        XCTAssertEqual(gate.queued, 0)
        _ = first
    }

    /// A hello taken from the queue is let go at once: what its closure
    /// holds is freed when the hello is done, not when the queue empties
    /// (a backlog that never drains would otherwise keep every hello it took).
    func testATakenHelloIsNotKeptByTheQueue() {
        final class Held {}
        let gate = HelloGate(limit: 1)
        var first: HelloGate.Slot?
        gate.enter { first = $0 }
        weak var taken: Held?
        do {
            let held = Held()
            taken = held
            gate.enter { _ in withExtendedLifetime(held) {} }
        }
        var second: HelloGate.Slot?
        gate.enter { second = $0 }  // takes the place after it, and keeps it
        gate.enter { _ in }  // so this one stays waiting: the queue does not empty
        first = nil
        gate.admitWaiting()
        XCTAssertNotNil(second)
        XCTAssertEqual(gate.queued, 1)
        XCTAssertNil(taken, "the taken hello's closure was released while others still wait")
        _ = first
        withExtendedLifetime(gate) { second = nil }  // a slot gives its place back to a gate still there
    }

    /// Through a real server allowing one hello at a time: three terminals
    /// saying hello at once are all answered, and one that leaves while it
    /// waits does not hold up the one behind it.
    func testOneHelloAtATimeStillAnswersEveryTerminal() throws {
        let s = try SteppedServer(users: ["alice", "bob", "carol"]) { $0.maxHellosInFlight = 1 }
        let terminals = try ["alice", "bob", "carol"].map { _ in try s.connect() }
        let gone = try s.connect()
        let ids = zip(["alice", "bob", "carol"], terminals).map { user, t in
            t.pipeline([("hello", [("token", .string(s.tokens[user]!)), ("client", .string("c-\(user)"))])])[0]
        }
        _ = gone.pipeline([("hello", [("token", .string(s.tokens["alice"]!)), ("client", "gone")])])
        gone.leave()
        for (t, id) in zip(terminals, ids) {
            let reply = try t.reply(to: id)
            XCTAssertTrue(reply.isOK, "\(reply)")
        }
        try s.turn(until: { s.server.helloGate.inFlight == 0 && s.server.helloGate.queued == 0 }, "the gate to empty")
    }
}

/// The gate's two gauges, as a scrape shows them (the server passes the gate's counts in each scrape).
final class HelloGateMetricsTests: XCTestCase {
    func testAStormShowsInTheHelloGauges() {
        let metrics = ServerMetrics(version: "test")
        let text = String(decoding: metrics.render(.init(connections: 3, hellosChecking: 1, hellosWaiting: 2, documentsLoaded: 0, documentTerminals: 0,
                                                         reconnects: 0, outages: 0, unavailableSeconds: 0, leftReadOnly: 0)), as: UTF8.self)
        func value(_ name: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.dropFirst(name.count + 1)) }
        }
        XCTAssertEqual(value("rewind_hellos_checking"), 1, text)
        XCTAssertEqual(value("rewind_hellos_waiting"), 2, text)
    }
}
