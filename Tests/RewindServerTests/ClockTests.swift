import RewindCore
@testable import RewindServer
import RewindStore
import XCTest

/// Timeouts and rate limits with the server's clock moved on by the test
/// (`Server.advanceClock`, then a sweep), not waited for.
final class ClockTests: XCTestCase {
    func bye(_ t: SteppedTerminal, _ s: SteppedServer) throws -> JSONObject {
        try s.turn(until: { t.read(); return t.closed }, "the connection to close")
        return try XCTUnwrap(t.received.last { $0["push"] == "bye" })
    }

    /// Moves the server's clock on by `ms` and sweeps: whether `t` is still open.
    func stillOpen(_ t: SteppedTerminal, after ms: UInt64, _ s: SteppedServer) -> Bool {
        s.server.advanceClock(by: ms)
        s.server.sweep()
        s.turn()
        t.read()
        return !t.closed
    }

    func testNoHelloWithinTheHandshakeTimeoutIsClosed() throws {
        let s = try SteppedServer()
        let quiet = try s.connect()
        let greeted = try s.terminal("alice")
        s.turn()
        // (the loop's own clock moves on a little too)
        XCTAssertTrue(stillOpen(quiet, after: s.server.config.handshakeTimeoutMs - 1_000, s), "not yet")
        s.server.advanceClock(by: 2_000)
        s.server.sweep()
        XCTAssertEqual(try bye(quiet, s)["reason"], "handshake_timeout")
        XCTAssertTrue(try greeted.request("ping").isOK, "a terminal that said hello stays")
    }

    /// The handshake timer counts from the connection, whatever comes before
    /// a hello (a ping is answered, and does not buy time); the idle timer
    /// then counts from the hello's answer, not from the connection.
    func testOnlyAHelloEndsTheHandshakeAndTheIdleTimerStartsAtIt() throws {
        let s = try SteppedServer()
        let stalling = try s.connect()
        let late = try s.connect()
        s.turn()
        s.server.advanceClock(by: s.server.config.handshakeTimeoutMs - 2_000)
        _ = try stalling.request("ping")  // answered (or refused) before a hello: either way, not a hello
        try late.hello("alice")
        s.server.advanceClock(by: 3_000)
        s.server.sweep()
        XCTAssertEqual(try bye(stalling, s)["reason"], "handshake_timeout")
        // Past the idle timeout from the connection, not from the hello:
        XCTAssertTrue(stillOpen(late, after: s.server.config.idleTimeoutMs - 5_000, s), "idle counts from the hello")
        s.server.advanceClock(by: 3_000)
        s.server.sweep()
        XCTAssertEqual(try bye(late, s)["reason"], "idle")
    }

    /// A hello the server has not answered yet — waiting its turn behind a
    /// storm of others (`HelloGate`) — is not a missing hello: the handshake
    /// timer stops once it is read, and the terminal is answered, however
    /// long the server took.
    func testAHelloWaitingForItsTurnIsAnsweredPastTheHandshakeTimeout() throws {
        let s = try SteppedServer { $0.maxHellosInFlight = 1 }
        var storm: HelloGate.Slot?
        s.server.helloGate.enter { storm = $0 }  // the one place, taken by a hello that takes its time
        let waiting = try s.connect()
        let id = waiting.pipeline([("hello", [("user", "alice"), ("token", .string(s.tokens["alice"]!))])])[0]
        try s.turn(until: { s.server.helloGate.queued == 1 }, "the hello to wait for a place")
        XCTAssertTrue(stillOpen(waiting, after: s.server.config.handshakeTimeoutMs + 5_000, s), "a hello waiting its turn is not a missing hello")
        storm = nil
        XCTAssertEqual(try waiting.reply(to: id)["ok"], true)
        _ = storm
    }

    func testAConnectionSilentPastTheIdleTimeoutIsClosedAndPingKeepsItOpen() throws {
        let s = try SteppedServer()
        let silent = try s.terminal("alice")
        let pinging = try s.terminal("bob")
        for _ in 0..<3 {
            s.server.advanceClock(by: 20_000)
            XCTAssertTrue(try pinging.request("ping").isOK)
            s.server.sweep()
        }
        XCTAssertEqual(try bye(silent, s)["reason"], "idle")
        XCTAssertTrue(try pinging.request("ping").isOK, "60 s, pinging every 20: still open")
    }

    func testAnIncompleteLineHeldTooLongClosesTheConnection() throws {
        let s = try SteppedServer()
        let t = try s.terminal("alice")
        t.sendRaw(Array(#"{"id":9,"type":"pi"#.utf8))
        s.turn()
        s.server.advanceClock(by: s.server.config.handshakeTimeoutMs + 1)
        s.server.sweep()
        XCTAssertEqual(try bye(t, s)["reason"], "partial_line")
    }

    func testTheRequestRateLimitRefillsWithTime() throws {
        let s = try SteppedServer { $0.requestsPerSecond = 10; $0.requestBurst = 20 }
        let t = try s.terminal("alice")  // the hello took one
        let ids = t.pipeline(Array(repeating: ("ping", []), count: 20))
        let r = try replies(t, ids)
        XCTAssertEqual(r.filter(\.isOK).count, 19, "the burst, less the hello")
        XCTAssertEqual(r.last?.errorCode, "rate_limited")
        let wait = try XCTUnwrap(r.last?["error"]?.objectValue?["details"]?.objectValue?["retry_after_ms"]?.intValue)
        XCTAssertEqual(try t.request("ping").errorCode, "rate_limited", "no time has passed")
        s.server.advanceClock(by: UInt64(wait))
        XCTAssertTrue(try t.request("ping").isOK, "after retry_after_ms, one more")
    }
}

/// A stepped server's database goes with it (the second instance on it leaves it to the first).
final class SteppedServerHygieneTests: XCTestCase {
    func testTheDatabaseIsDroppedWithTheServer() throws {
        var s: SteppedServer? = try SteppedServer()
        let name = s!.databaseName
        var second: SteppedServer? = try SteppedServer(sharing: s!)
        second = nil
        let admin = try Database("dbname=postgres")
        XCTAssertEqual(try admin.query("SELECT count(*) FROM pg_database WHERE datname = $1", [name]).int(0, 0), 1, "the second instance left it")
        s = nil
        XCTAssertEqual(try admin.query("SELECT count(*) FROM pg_database WHERE datname = $1", [name]).int(0, 0), 0)
        _ = second
    }
}
