import Foundation
import JWTKit
import RewindCore
import RewindLoop
@testable import RewindServer
import XCTest

/// A signed token's end by the server's clock, moved on by the test
/// (`Server.advanceClock`, then a sweep), not waited for: `token_expiring`
/// ahead of `exp`, `bye` `token_expired` at it, and a `refresh` that moves it on.
final class TokenExpiryClockTests: XCTestCase {
    struct Claims: JWTPayload {
        var sub: String
        var exp: Double
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static let secret = "a secret the app and the server share, 32+ bytes"

    /// An HS256 token for `sub` expiring `lifetime` s after `now` (the server's clock).
    func token(_ sub: String, expires lifetime: Double, now: Double) -> String {
        let claims = Claims(sub: sub, exp: now + lifetime)
        let signed: Result<String, JWTError> = BackgroundWork.waitFor {
            do {
                let keys = await JWTKeyCollection().add(hmac: HMACKey(from: TokenExpiryClockTests.secret), digestAlgorithm: .sha256)
                return .success(try await keys.sign(claims))
            } catch { return .failure(error as! JWTError) }
        }
        return try! signed.get()
    }

    struct NamedClaims: JWTPayload {
        var sub: String
        var exp: Double
        var name: String
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// A signed session shows the token's display name (`name`) as its user's
    /// name, and the server's logs name it by the user's handle (its label):
    /// the handle is kept in the signed sessions' table, not in every session.
    func testASignedSessionShowsItsDisplayNameAndIsLoggedByItsHandle() throws {
        let s = try SteppedServer { $0.tokenSecret = Self.secret }
        let claims = NamedClaims(sub: "ann", exp: s.server.wallClockSeconds + 600, name: "Ann Lee")
        let signed: Result<String, JWTError> = BackgroundWork.waitFor {
            do {
                let keys = await JWTKeyCollection().add(hmac: HMACKey(from: TokenExpiryClockTests.secret), digestAlgorithm: .sha256)
                return .success(try await keys.sign(claims))
            } catch { return .failure(error as! JWTError) }
        }
        let t = try signedTerminal(s, try signed.get())
        let session = try XCTUnwrap(s.server.sessions.all.compactMap(\.session).first)
        XCTAssertEqual(session.user.name, "Ann Lee", "others see the display name")
        XCTAssertFalse(session.handle.isEmpty)
        XCTAssertNotEqual(session.handle, "Ann Lee", "the logs name the handle")
        XCTAssertTrue(session.label.hasPrefix(session.handle + "/"), session.label)
        t.leave()
        try s.turn(until: { s.server.sessions.count == 0 }, "the session to end")
    }

    func signedTerminal(_ s: SteppedServer, _ token: String) throws -> SteppedTerminal {
        let t = try s.connect()
        let r = try t.request("hello", [("token", .string(token))])
        XCTAssertTrue(r.isOK, JSONWriter.string(.object(r)))
        return t
    }

    /// The server's clock moved on by `seconds`, 20 s at a time with a sweep after each, the
    /// terminals pinging meanwhile (as clients do: else they end idle).
    func advance(_ s: SteppedServer, by seconds: Int, pinging terminals: [SteppedTerminal]) throws {
        var left = seconds
        while left > 0 {
            let step = min(left, 20)
            s.server.advanceClock(by: UInt64(step) * 1_000)
            for t in terminals where !t.closed { _ = try t.request("ping") }
            s.server.sweep()
            left -= step
        }
    }

    func testWarnedAheadEndedAtExpAndARefreshMovesTheEndOn() throws {
        let s = try SteppedServer { $0.tokenSecret = Self.secret; $0.tokenExpiryWarning = 60 }
        let now = s.server.wallClockSeconds
        let lapsing = try signedTerminal(s, token("ann", expires: 600, now: now))
        let refreshing = try signedTerminal(s, token("ann", expires: 600, now: now))

        // 539 s on: nothing yet. 541 s: both are 59 s from the end — warned, once.
        try advance(s, by: 539, pinging: [lapsing, refreshing])
        s.turn()
        XCTAssertFalse(lapsing.received.contains { $0["push"] == "token_expiring" })
        try advance(s, by: 2, pinging: [lapsing, refreshing])
        let warned = try lapsing.push("token_expiring")
        XCTAssertEqual(Double(warned["in_ms"]?.intValue ?? 0), 59_000, accuracy: 1_000)
        _ = try refreshing.push("token_expiring")
        s.server.sweep()
        s.turn()
        XCTAssertEqual(lapsing.received.filter { $0["push"] == "token_expiring" }.count, 1, "once per token")

        // One refreshes, for another 600 s from now (the server's clock).
        let r = try refreshing.request("refresh", [("token", .string(token("ann", expires: 600, now: s.server.wallClockSeconds)))])
        XCTAssertTrue(r.isOK, JSONWriter.string(.object(r)))

        // At the first token's `exp`: the other ends, token_expired, retry; the refreshed one stays.
        try advance(s, by: 59, pinging: [lapsing, refreshing])  // 600 s: the first token's exp
        try s.turn(until: { lapsing.read(); return lapsing.closed }, "the lapsed session to end")
        let bye = try XCTUnwrap(lapsing.received.last { $0["push"] == "bye" })
        XCTAssertEqual(bye["reason"], "token_expired")
        XCTAssertEqual(bye["retry"], true)
        XCTAssertTrue(try refreshing.request("ping").isOK, "its new token runs until 600 s after the refresh")

        // The new token is warned for in its turn, and ends at its own `exp`.
        try advance(s, by: 482, pinging: [refreshing])  // 1,082 s: 59 s before the new token's exp (541 + 600)
        try s.turn(until: { refreshing.read(); return refreshing.received.filter { $0["push"] == "token_expiring" }.count == 2 },
                   "the new token's token_expiring")
        try advance(s, by: 59, pinging: [refreshing])
        try s.turn(until: { refreshing.read(); return refreshing.closed }, "the refreshed session to end at its new exp")
        XCTAssertEqual(refreshing.received.last { $0["push"] == "bye" }?["reason"], "token_expired")
    }
}
