import Crypto
import Foundation
import JWTKit
import RewindLoop
import XCTest
@testable import RewindCore
@testable import RewindStore

/// Identity from the app (PROTOCOL.md, "Identity from the app"): tokens
/// signed by an application's backend — HS256 with a shared secret, ES256
/// and EdDSA with keys from a JWKS file — let its users in, each made on
/// first sight; every refusal says why in `details.reason`.
final class SignedTokenTests: XCTestCase {
    /// The claims an app's backend puts in a token (any may be left out, to test refusals).
    struct Claims: JWTPayload {
        var sub: String?
        var exp: Double?
        var nbf: Double?
        var iat: Double?
        var iss: String?
        var aud: String?
        var name: String?
        var jti: String? = nil
        /// `rewind: {docs: {pattern: role}}`: grants for the connection only.
        var rewind: Grants? = nil
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    struct Grants: Codable, Sendable {
        var docs: [String: String]
    }

    static let issuer = "https://app.example.com", audience = "rewind"
    static let secret = "an app's shared secret, 32 bytes or more"
    let es256 = P256.Signing.PrivateKey()
    let ed25519 = Curve25519.Signing.PrivateKey()
    let stranger = P256.Signing.PrivateKey()  // a key the server does not know

    var now: Double { Date().timeIntervalSince1970 }

    func claims(_ sub: String = "u-1", name: String? = nil, lifetime: Double = 600) -> Claims {
        Claims(sub: sub, exp: now + lifetime, nbf: nil, iat: now, iss: Self.issuer, aud: Self.audience, name: name)
    }

    enum Key: Sendable { case hs256, es256, eddsa, stranger(kid: String) }

    /// A token as an app's backend mints it (jwt-kit's signing is async: waited for here).
    func mint(_ c: Claims, _ key: Key = .hs256, hmacSecret: String = SignedTokenTests.secret) throws -> String {
        let es = es256
        let ed = ed25519
        let other = stranger
        let result = BackgroundWork.waitFor { await SignedTokenTests.signed(c, key, hmacSecret, es, ed, other) }
        return try result.get()
    }

    static func signed(_ c: Claims, _ key: Key, _ hmacSecret: String, _ es256: P256.Signing.PrivateKey,
                       _ ed25519: Curve25519.Signing.PrivateKey, _ stranger: P256.Signing.PrivateKey) async -> Result<String, Error> {
        do { return .success(try await sign(c, key, hmacSecret, es256, ed25519, stranger)) } catch { return .failure(error) }
    }

    static func sign(_ c: Claims, _ key: Key, _ hmacSecret: String, _ es256: P256.Signing.PrivateKey,
                     _ ed25519: Curve25519.Signing.PrivateKey, _ stranger: P256.Signing.PrivateKey) async throws -> String {
        let keys = JWTKeyCollection()
        switch key {
        case .hs256:
            await keys.add(hmac: HMACKey(from: hmacSecret), digestAlgorithm: .sha256)
            return try await keys.sign(c)
        case .es256:
            await keys.add(ecdsa: try ES256PrivateKey(backing: es256), kid: "app-es")
            return try await keys.sign(c, kid: "app-es")
        case .eddsa:
            await keys.add(eddsa: EdDSA.PrivateKey(backing: ed25519), kid: "app-ed")
            return try await keys.sign(c, kid: "app-ed")
        case let .stranger(kid):
            await keys.add(ecdsa: try ES256PrivateKey(backing: stranger), kid: JWKIdentifier(string: kid))
            return try await keys.sign(c, kid: JWKIdentifier(string: kid))
        }
    }

    /// An HS256 token for `sub` (any test may mint one: DeployRoleTests).
    static func hs256(sub: String, secret: String = SignedTokenTests.secret, lifetime: Double = 600) throws -> String {
        let claims = Claims(sub: sub, exp: Date().timeIntervalSince1970 + lifetime, nbf: nil, iat: nil, iss: nil, aud: nil, name: nil)
        let result: Result<String, Error> = BackgroundWork.waitFor {
            do {
                let keys = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
                return .success(try await keys.sign(claims))
            } catch { return .failure(error) }
        }
        return try result.get()
    }

    static func b64url(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A server taking both kinds of key, with an issuer, an audience and a one-hour maximum lifetime.
    func server(_ db: TestDatabase, _ extra: [String] = []) throws -> ServerProcess {
        let dir = NSTemporaryDirectory() + "rewind-jwt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try (Self.secret + "\n").write(toFile: dir + "/secret", atomically: true, encoding: .utf8)
        secretPath = dir + "/secret"
        jwksPath = dir + "/jwks.json"
        try writeJWKS()
        return try ServerProcess(database: db, arguments: [
            "--jwt-secret-file", dir + "/secret", "--jwks-file", dir + "/jwks.json",
            "--jwt-issuer", Self.issuer, "--jwt-audience", Self.audience, "--jwt-max-lifetime", "3600",
        ] + extra)
    }

    var jwksPath = ""
    var secretPath = ""

    /// The JWKS file: the app's ES256 and EdDSA keys, and `stranger`'s as `extraKid` if given.
    func writeJWKS(extraKid: String? = nil) throws {
        func ec(_ kid: String, _ key: P256.Signing.PublicKey) -> String {
            let xy = key.rawRepresentation
            return #"{"kty": "EC", "crv": "P-256", "kid": "\#(kid)", "alg": "ES256", "use": "sig", "x": "\#(Self.b64url(xy.prefix(32)))", "y": "\#(Self.b64url(xy.suffix(32)))"}"#
        }
        var keys = [ec("app-es", es256.publicKey),
                    #"{"kty": "OKP", "crv": "Ed25519", "kid": "app-ed", "alg": "EdDSA", "use": "sig", "x": "\#(Self.b64url(ed25519.publicKey.rawRepresentation))"}"#]
        if let extraKid { keys.append(ec(extraKid, stranger.publicKey)) }
        try #"{"keys": ["# .appending(keys.joined(separator: ", ")).appending("]}").write(toFile: jwksPath, atomically: true, encoding: .utf8)
    }

    func hello(_ port: Int, _ token: String, user: String? = nil, client: String? = nil) throws -> (Terminal, JSONObject) {
        let t = try Terminal(port: port)
        var f: [(String, JSON)] = [("token", .string(token))]
        if let user { f.append(("user", .string(user))) }
        if let client { f.append(("client", .string(client))) }
        return (t, try t.request("hello", f))
    }

    func testEachAlgorithmLetsTheAppsUserInAndTheUserIsMadeOnFirstSight() throws {
        let db = try TestDatabase(users: ["bob"])
        let s = try server(db)
        for (sub, key) in [("u-hs", Key.hs256), ("u-es", .es256), ("u-ed", .eddsa)] {
            let (_, r) = try hello(s.port, try mint(claims(sub, name: "Name of \(sub)"), key))
            XCTAssertEqual(r["ok"], true, "\(sub): \(JSONWriter.string(.object(r)))")
            XCTAssertEqual(r["user"]?.stringValue, sub, "the handle is the token's sub")
        }
        let made = try db.db.query("SELECT i.subject, u.name, u.display_name FROM identities i JOIN users u ON u.id = i.user_id ORDER BY 1")
        XCTAssertEqual((0..<made.count).map { made[$0, 0]! + "=" + made[$0, 1]! + "/" + made[$0, 2]! },
                       ["u-ed=u-ed/Name of u-ed", "u-es=u-es/Name of u-es", "u-hs=u-hs/Name of u-hs"])
        // Later tokens find the same user; a new `name` is shown from then on; `user`, when sent, must be the sub.
        let (again, r) = try hello(s.port, try mint(claims("u-hs", name: "Ann Lee")), user: "u-hs")
        XCTAssertEqual(r["ok"], true)
        XCTAssertEqual(Int(try db.db.query("SELECT count(*) FROM identities").int(0, 0)!), 3, "no second user for the same (iss, sub)")
        XCTAssertEqual(try db.db.query("SELECT display_name FROM users WHERE name = 'u-hs'")[0, 0], "Ann Lee")
        XCTAssertEqual(try again.request("create_doc", [("doc", "notes")])["ok"], true)
        XCTAssertEqual(try again.request("open", [("doc", "notes")])["ok"], true)
        _ = try again.submit("notes", tx: "n", base: 0, [textNode("t", "hello")])
        let (other, _) = try hello(s.port, try mint(claims("u-hs", name: "Ann Lee")), client: "second")
        XCTAssertEqual(try other.request("open", [("doc", "notes")])["ok"], true)
        XCTAssertEqual(try other.request("focus", [("doc", "notes"), ("node", "t")])["ok"], true)
        let presence = try again.push("presence")
        XCTAssertEqual(presence["user"]?.stringValue, "Ann Lee", "presence shows the token's name")
    }

    func testEveryRefusalSaysWhy() throws {
        let db = try TestDatabase(users: ["bob"])
        let s = try server(db)
        var c = claims()
        func refusal(_ token: String, user: String? = nil) throws -> String? {
            let (_, r) = try hello(s.port, token, user: user)
            XCTAssertEqual(r.errorCode, "unauthorized", JSONWriter.string(.object(r)))
            return r["error"]?.objectValue?["details"]?.objectValue?["reason"]?.stringValue
        }
        c.exp = now - 120
        XCTAssertEqual(try refusal(try mint(c)), "expired")
        c = claims(); c.exp = now - 10  // within the 30 s of skew allowed
        XCTAssertEqual(try hello(s.port, try mint(c)).1["ok"], true, "a token expired 10 s ago is within the skew")
        c = claims(); c.nbf = now + 120
        XCTAssertEqual(try refusal(try mint(c)), "not_yet_valid")
        XCTAssertEqual(try refusal(try mint(claims(), hmacSecret: "another secret of 32 bytes or more")), "bad_signature")
        XCTAssertEqual(try refusal(try mint(claims(), .stranger(kid: "app-es"))), "bad_signature", "a known kid, another key")
        XCTAssertEqual(try refusal(try mint(claims(), .stranger(kid: "gone"))), "unknown_kid")
        c = claims(); c.iss = "https://evil.example"
        XCTAssertEqual(try refusal(try mint(c)), "wrong_issuer")
        c = claims(); c.aud = "another-service"
        XCTAssertEqual(try refusal(try mint(c)), "wrong_audience")
        XCTAssertEqual(try refusal(try mint(claims(lifetime: 7_200))), "lifetime_too_long")
        let body = Self.b64url(Array(#"{"sub":"u-1","exp":\#(Int(now) + 600),"iss":"\#(Self.issuer)","aud":"rewind"}"#.utf8))
        XCTAssertEqual(try refusal(Self.b64url(Array(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "." + body + "."), "algorithm_not_allowed")
        XCTAssertEqual(try refusal(Self.b64url(Array(#"{"alg":"HS512","typ":"JWT"}"#.utf8)) + "." + body + ".c2ln"), "algorithm_not_allowed")
        XCTAssertEqual(try refusal("not.a.token"), "malformed")
        c = claims(); c.sub = nil
        XCTAssertEqual(try refusal(try mint(c)), "malformed", "no sub")
        c = claims(); c.exp = nil
        XCTAssertEqual(try refusal(try mint(c)), "malformed", "no exp")
        // `user`, when sent, must be the token's sub.
        let (_, wrongUser) = try hello(s.port, try mint(claims("u-1")), user: "bob")
        XCTAssertEqual(wrongUser.errorCode, "unauthorized")
        // Over 8 KiB: too large, before anything is decoded.
        let (_, big) = try hello(s.port, "a." + String(repeating: "b", count: 8_300) + ".c")
        XCTAssertEqual(big.errorCode, "too_large")
        XCTAssertEqual(Int(try db.db.query("SELECT count(*) FROM identities").int(0, 0)!), 1, "only the token within the skew made a user")
    }

    func testAUserMadeOnFirstSightSharesEditsAndUndoesLikeAnyOther() throws {
        let db = try TestDatabase(users: ["bob"])
        let s = try server(db)
        let (ann, r) = try hello(s.port, try mint(claims("ann", name: "Ann")))
        XCTAssertEqual(r["ok"], true)
        XCTAssertEqual(try ann.request("create_doc", [("doc", "plan")])["ok"], true)
        XCTAssertEqual(try ann.request("share", [("doc", "plan"), ("user", "bob"), ("role", "editor")])["ok"], true)
        let bob = try Terminal(port: s.port)
        try bob.hello("bob", db)
        for t in [ann, bob] { XCTAssertEqual(try t.request("open", [("doc", "plan")])["ok"], true) }
        let v1 = try ann.submit("plan", tx: "a1", base: 0, [["op": "set", "node": "root", "key": "title", "value": "Q3"]])
        let v2 = try bob.submit("plan", tx: "b1", base: v1, [["op": "set", "node": "root", "key": "owner", "value": "bob"]])
        let undo = try ann.request("undo", [("doc", "plan")])
        XCTAssertEqual(undo["ok"], true, JSONWriter.string(.object(undo)))
        let state = try bob.request("open", [("doc", "plan")])["state"]
        let root = state?.objectValue?["nodes"]?.objectValue?["root"]?.objectValue?["props"]?.objectValue
        XCTAssertNil(root?["title"], "ann's edit undone: \(state.map { JSONWriter.string($0) } ?? "")")
        XCTAssertEqual(root?["owner"], "bob", "bob's edit kept: \(state.map { JSONWriter.string($0) } ?? "")")
        XCTAssertGreaterThan(v2, v1)
        // And the other way: a user made by the CLI shares with the token's user by its handle (the sub).
        XCTAssertEqual(try bob.request("create_doc", [("doc", "bobs")])["ok"], true)
        XCTAssertEqual(try bob.request("share", [("doc", "bobs"), ("user", "ann"), ("role", "viewer")])["ok"], true)
        XCTAssertEqual(try ann.request("open", [("doc", "bobs")])["ok"], true)
    }

    func testATokenIsWarnedBeforeItExpiresAndEndsTheSessionUnlessRefreshed() throws {
        let db = try TestDatabase(users: ["bob"])
        let s = try server(db, ["--jwt-expiry-warning", "2"])
        // A token of 3 s: `token_expiring` once it is 2 s from its end, then `bye` token_expired.
        let (t, r) = try hello(s.port, try mint(claims("ann", lifetime: 3)))
        XCTAssertEqual(r["ok"], true)
        let warning = try t.push("token_expiring")
        let inMs = warning["in_ms"]?.intValue ?? -1
        XCTAssertTrue(inMs > 0 && inMs <= 2_000, "\(inMs) ms left")
        let bye = try t.push("bye")
        XCTAssertEqual(bye["reason"], "token_expired")
        XCTAssertEqual(bye["retry"], true, "a new token, a new hello")

        // Refreshed before its end, the session outlives the first token.
        let (u, _) = try hello(s.port, try mint(claims("ann", lifetime: 3)))
        _ = try u.push("token_expiring")
        let refreshed = try u.request("refresh", [("token", .string(try mint(claims("ann", lifetime: 600))))])
        XCTAssertEqual(refreshed["ok"], true, JSONWriter.string(.object(refreshed)))
        let expiresAt = Double(refreshed["expires_at"]?.intValue ?? 0) / 1000
        XCTAssertEqual(expiresAt, now + 600, accuracy: 5)
        sleep(4)  // past the first token's `exp`
        XCTAssertEqual(try u.request("ping")["ok"], true, "still connected on the new token")
        XCTAssertFalse(u.pushes.contains { $0["push"] == "bye" })
        // Another user's token changes nothing: forbidden, and the session stays.
        XCTAssertEqual(try u.request("refresh", [("token", .string(try mint(claims("bea"))))]).errorCode, "forbidden")
        // A token refused for what it is says why.
        var old = claims("ann")
        old.exp = now - 120
        let stale = try u.request("refresh", [("token", .string(try mint(old)))])
        XCTAssertEqual(stale.errorCode, "unauthorized")
        XCTAssertEqual(stale["error"]?.objectValue?["details"]?.objectValue?["reason"], "expired")
        XCTAssertEqual(try u.request("ping")["ok"], true)
        // A session of an opaque token has nothing to refresh.
        let bob = try Terminal(port: s.port)
        try bob.hello("bob", db)
        XCTAssertEqual(try bob.request("refresh", [("token", .string(try mint(claims("bob"))))]).errorCode, "bad_request")
    }

    func testAKeyAddedToTheJWKSFileIsTakenWithoutARestartAndOneRemovedOnSIGHUPIsRefused() throws {
        let db = try TestDatabase(users: ["bob"])
        let s = try server(db)
        // The app rotates: the new key goes into the file first; its first token's unknown kid reads the file again.
        try writeJWKS(extraKid: "app-es-2")
        let (_, r) = try hello(s.port, try mint(claims("ann"), .stranger(kid: "app-es-2")))
        XCTAssertEqual(r["ok"], true, "the new key found without a restart: \(JSONWriter.string(.object(r)))")
        // The old key's tokens still work meanwhile.
        XCTAssertEqual(try hello(s.port, try mint(claims("ann"), .es256)).1["ok"], true)
        // The rotated-out key leaves the file; SIGHUP reads it at once (an unknown kid may not: once a minute).
        try writeJWKS()
        kill(s.pid, SIGHUP)
        let deadline = Date().addingTimeInterval(10)
        var reason: String?
        repeat {
            usleep(100_000)
            let (_, again) = try hello(s.port, try mint(claims("ann"), .stranger(kid: "app-es-2")))
            reason = again["error"]?.objectValue?["details"]?.objectValue?["reason"]?.stringValue
        } while reason == nil && Date() < deadline
        XCTAssertEqual(reason, "unknown_kid")
        XCTAssertEqual(try hello(s.port, try mint(claims("ann"), .eddsa)).1["ok"], true, "the keys still in the file work")
    }

    func testAServerWithASecretShorterThan32BytesOrABadJWKSDoesNotStart() throws {
        let db = try TestDatabase(users: [])
        let dir = NSTemporaryDirectory() + "rewind-jwt-bad-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let key = dir + "/master.key"
        _ = try MasterKey.create(key)
        try "short secret\n".write(toFile: dir + "/secret", atomically: true, encoding: .utf8)
        let short = try runProgram(ServerProcess.binDirectory + "/rewind-server",
                                   ["--listen", "127.0.0.1:0", "--database", db.conninfo, "--master-key-file", key, "--jwt-secret-file", dir + "/secret"])
        XCTAssertEqual(short.status, 2)
        XCTAssertTrue(short.err.contains("at least 32"), short.err)
        XCTAssertFalse(short.err.contains("short secret"), "the secret is never printed: \(short.err)")
        try #"{"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}]}"#.write(toFile: dir + "/jwks.json", atomically: true, encoding: .utf8)
        let noKid = try runProgram(ServerProcess.binDirectory + "/rewind-server",
                                   ["--listen", "127.0.0.1:0", "--database", db.conninfo, "--master-key-file", key, "--jwks-file", dir + "/jwks.json"])
        XCTAssertNotEqual(noKid.status, 0)
        XCTAssertTrue(noKid.err.contains("kid"), noKid.err)
    }
}
