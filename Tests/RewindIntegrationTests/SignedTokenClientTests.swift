import Foundation
import Glibc
import JWTKit
import RewindClient
import RewindLoop
import XCTest
@testable import RewindCore

/// `RewindClient`'s token getter against a real server: asked at start, on
/// `token_expiring` (sent as `refresh`), and on the reconnect after `bye`
/// `token_expired` — as Liveblocks' `authEndpoint` and Centrifugo's `getToken` are.
extension SignedTokenTests {
    /// How many times the app's getToken was asked, and what it answers the nth time.
    final class TokenEndpoint: @unchecked Sendable {
        private let lock = NSLock()
        private var asked = 0
        var count: Int { lock.withLock { asked } }
        func next() -> Int { lock.withLock { asked += 1; return asked } }
    }

    /// An HS256 token as an app's backend mints it, from an async getter.
    static func mintAsync(sub: String, lifetime: Double) async throws -> String {
        let keys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        let now = Date().timeIntervalSince1970
        return try await keys.sign(Claims(sub: sub, exp: now + lifetime, nbf: nil, iat: now, iss: issuer, aud: audience, name: nil))
    }

    func testRewindClientAsksItsGetTokenAtStartOnExpiringAndAfterTheTokenExpired() throws {
        let db = try TestDatabase(users: [])
        let s = try server(db, ["--jwt-expiry-warning", "2"])
        let (ann, _) = try hello(s.port, try mint(claims("ann")))
        XCTAssertEqual(try ann.request("create_doc", [("doc", "notes")])["ok"], true)
        _ = try ann.submit("notes", tx: "setup", base: 0, [textNode("t", "")])

        // Tokens of 3 s: the 1st for hello, the 2nd as a refresh (the session outlives the 1st),
        // the 3rd another user's (the refresh is refused, the token runs out: bye token_expired),
        // the 4th for the hello of the reconnect.
        let endpoint = TokenEndpoint()
        let getToken: @Sendable () async throws -> String = {
            let n = endpoint.next()
            return try await SignedTokenTests.mintAsync(sub: n == 3 ? "mallory" : "ann", lifetime: 3)
        }
        let client = RewindClient(host: "127.0.0.1", port: s.port,
                                  options: .init(user: "", token: "", doc: "notes", client: "lib", getToken: getToken))
        var readyAt: [Date] = [], droppedAt: [(Date, String)] = []
        client.onChange = { change in
            guard change == .status else { return }
            switch client.session.status {
            case .ready: readyAt.append(Date())
            case let .disconnected(why): droppedAt.append((Date(), why))
            default: break
            }
        }
        let deadline = Date().addingTimeInterval(25)
        while !(readyAt.count == 2 && endpoint.count >= 4) && Date() < deadline {
            let wait = client.tick()
            if var d = client.descriptor, poll(&d, 1, min(wait, 20)) > 0 { client.handle(d.revents) } else { usleep(5_000) }
            client.flush()
        }
        XCTAssertEqual(readyAt.count, 2, "ready, then ready again after the reconnect: \(client.session.status), asked \(endpoint.count)")
        XCTAssertEqual(endpoint.count, 4)
        XCTAssertEqual(droppedAt.count, 1, "one reconnect: \(droppedAt.map(\.1))")
        if let first = readyAt.first, let (at, why) = droppedAt.first {
            XCTAssertTrue(why.contains("expired"), why)
            XCTAssertGreaterThan(at.timeIntervalSince(first), 3.5, "the refreshed session outlived its first token's 3 s")
        }
        // The session works as before on its new token.
        try client.session.edit([.insert("t", pos: 0, text: Array("hi".unicodeScalars))])
        let committed = Date().addingTimeInterval(10)
        while !client.session.document.isSettled, Date() < committed {
            client.tick()
            if var d = client.descriptor, poll(&d, 1, 20) > 0 { client.handle(d.revents) }
            client.flush()
        }
        XCTAssertEqual(try ann.request("open", [("doc", "notes")])["state"]?.objectValue?["nodes"]?.objectValue?["t"]?.objectValue?["text"], "hi")
    }
}
