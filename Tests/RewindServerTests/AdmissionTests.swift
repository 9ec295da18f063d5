@testable import RewindServer
import XCTest

/// Who may connect and how often (`Admission`), counted without a socket or
/// a database: each bound holds, and what is given back is counted again.
final class AdmissionTests: XCTestCase {
    func config(handshakes: Int = 2, perUser: Int = 2) -> ServerConfig {
        var c = ServerConfig()
        c.maxHandshakesPerAddress = handshakes
        c.maxConnectionsPerUser = perUser
        c.failedHellosPerSecond = 1
        c.failedHelloBurst = 3
        return c
    }

    func testHandshakesPerAddressAreBoundedAndGivenBack() {
        var a = Admission(config: config(handshakes: 2))
        XCTAssertTrue(a.startHandshake(address: "10.0.0.1"))
        XCTAssertTrue(a.startHandshake(address: "10.0.0.1"))
        XCTAssertFalse(a.startHandshake(address: "10.0.0.1"), "the third waiting connection from one address")
        XCTAssertTrue(a.startHandshake(address: "10.0.0.2"), "another address has its own count")
        a.endHandshake(address: "10.0.0.1")
        XCTAssertTrue(a.startHandshake(address: "10.0.0.1"), "a hello said (or a connection gone) makes room")
        a.endHandshake(address: "10.0.0.1"); a.endHandshake(address: "10.0.0.1"); a.endHandshake(address: "10.0.0.2")
        XCTAssertEqual(a.handshakesPerAddress, [:], "nothing kept for addresses with nobody waiting")
    }

    func testConnectionsPerUserAreBoundedAndGivenBack() {
        var a = Admission(config: config(perUser: 2))
        XCTAssertTrue(a.admitUser(7))
        XCTAssertTrue(a.admitUser(7))
        XCTAssertFalse(a.admitUser(7))
        XCTAssertTrue(a.admitUser(8))
        a.userLeft(7)
        XCTAssertTrue(a.admitUser(7))
        a.userLeft(7); a.userLeft(7); a.userLeft(8); a.userLeft(8)
        XCTAssertEqual(a.connectionsPerUser, [:], "no count below zero, nothing kept for users gone")
    }

    /// A burst of failed hellos is allowed, then the address waits; its bucket
    /// refills over time and is then forgotten (memory stays bounded).
    func testFailedHellosThrottleTheirAddressAndAreForgotten() {
        var a = Admission(config: config())
        var now: UInt64 = 1_000
        XCTAssertNil(a.helloRetryAfter(address: "x", now: now), "no failure yet: checked at once")
        XCTAssertFalse(a.helloFailed(address: "x", now: now))
        XCTAssertFalse(a.helloFailed(address: "x", now: now))
        XCTAssertFalse(a.helloFailed(address: "x", now: now))
        XCTAssertTrue(a.helloFailed(address: "x", now: now), "past the burst of 3")
        XCTAssertNotNil(a.helloRetryAfter(address: "x", now: now), "the next hello from there waits")
        XCTAssertNil(a.helloRetryAfter(address: "y", now: now), "other addresses do not")
        now += 10_000
        a.forgetFullBuckets(now: now)
        XCTAssertEqual(a.throttledAddresses, 0, "refilled after 10 s at 1/s: forgotten")
    }
}
