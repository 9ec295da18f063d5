import RewindCore
import RewindLoop
import RewindStore

/// `refresh`, and the end of a signed token's life (PROTOCOL.md, "Identity
/// from the app"): `token_expiring` ahead of `exp`, `bye` `token_expired` at it.
extension Server {
    /// Seconds since 1970 by the server's clock (which a test can move on: `advanceClock`).
    var wallClockSeconds: Double { Double(wallClockMillis() + Int64(clock.advance)) / 1000 }

    /// `refresh {token}` → `{expires_at}` (ms since 1970): a new signed token
    /// for the same user replaces the session's. Another user's token is
    /// `forbidden` and changes nothing; a token refused for what it is
    /// (expired, bad signature, …) is `unauthorized` with its reason, and the
    /// session keeps its old token until that expires.
    func refresh(_ r: Request, _ c: Session) throws(RewindError) {
        let token = try r.string("token", maxBytes: .max)
        guard token.utf8.count <= TokenVerifier.maxBytes else {
            throw RewindError(.tooLarge, "refresh: `token` is longer than \(TokenVerifier.maxBytes) bytes")
        }
        guard let verifier = tokens else {
            throw .badRequest("refresh: this server takes no signed tokens (--jwt-secret-file, --jwks-file)")
        }
        guard let began = signedSessions[c.id] else {
            throw .badRequest("refresh: this session did not begin with a signed token; its token does not expire")
        }
        guard TokenVerifier.looksSigned(token) else {
            throw RewindError(.unauthorized, "refresh: " + TokenRefusal.malformed.message, details: ["reason": "malformed"])
        }
        let processing = c.processingGoesOn()  // what the terminal sends next waits for the new token
        checkSignedToken(token, with: verifier) { [unowned self] checked in
            defer { processing.end() }
            guard !c.isClosed else { return }
            switch checked {
            case let .failure(refusal):
                self.metrics?.tokenChecked(refusal)
                c.fail(r, RewindError(.unauthorized, "refresh: " + refusal.message, details: ["reason": .string(refusal.rawValue)]))
            case let .success(t):
                guard (t.issuer ?? "") == began.issuer, t.subject == began.subject else {
                    return c.fail(r, RewindError(.forbidden, "refresh: the token is another user's (sub \"\(t.subject)\"); this session stays as it was"))
                }
                self.signedSessions.refreshed(c.id, expires: t.expires)
                self.metrics?.tokenChecked(nil)
                c.reply(Message.reply(r.id, [("expires_at", .int(Int64((t.expires * 1000).rounded())))]))
            }
        }
    }

    /// A signed token checked, for `hello` and `refresh` alike: its signature
    /// by jwt-kit on the thread pool — an unknown `kid` reads the JWKS file
    /// again (at most once a minute) and tries once more — then its claims by
    /// the server's clock (`TokenPolicy`). `done` runs on the loop.
    func checkSignedToken(_ token: String, with verifier: TokenVerifier, retried: Bool = false,
                          _ done: @escaping (Result<AppToken, TokenRefusal>) -> Void) {
        BackgroundWork.run(on: loop, { verifier.verify(token) }) { [unowned self] verified in
            if case .failure(.unknownKid) = verified, !retried, self.mayReadTokenKeysAgain() {
                return self.readTokenKeysAgain(why: "a token's kid is not among the keys") { [unowned self] in
                    guard let again = self.tokens else { return done(verified) }
                    self.checkSignedToken(token, with: again, retried: true, done)
                }
            }
            done(verified.flatMap { t in
                self.config.tokenPolicy.refusal(of: t, now: self.wallClockSeconds).map { .failure($0) } ?? .success(t)
            })
        }
    }

    /// An unknown `kid` may read the JWKS file again once a minute (a new key
    /// added before the app signs with it is found without a restart; a flood
    /// of made-up kids costs one read a minute).
    func mayReadTokenKeysAgain() -> Bool {
        guard config.tokenKeysFile != nil else { return false }
        if let at = tokenKeysReadAt, now < at + 60_000 { return false }
        tokenKeysReadAt = now
        return true
    }

    /// Reads the JWKS file again, off the loop, and takes its keys (with the
    /// same secret); a file that cannot be read or is not a key set leaves
    /// the keys in use as they were. `then` runs on the loop after.
    func readTokenKeysAgain(why: String, then: @escaping () -> Void = {}) {
        guard let path = config.tokenKeysFile else { return then() }
        let secret = config.tokenSecret
        BackgroundWork.run(on: loop, { () -> Result<TokenVerifier, TokenVerifier.ConfigurationError> in
            guard let text = readTextFile(path) else { return .failure(.init(description: "cannot read \(path)")) }
            do { return .success(try TokenVerifier(secret: secret, jwks: text)) } catch {
                return .failure(.init(description: "\(error)"))
            }
        }) { [unowned self] result in
            switch result {
            case let .success(v):
                self.tokens = v
                self.logger.info("JWKS file read again", metadata: ["why": "\(why)", "keys": "\(v.kids.count)"])
            case let .failure(e):
                self.logger.warning("JWKS file not taken; the keys in use stay", metadata: ["why": "\(why)", "error": "\(e.description)"])
            }
            then()
        }
    }

    /// Once a second (`sweep`): sessions whose token expires within
    /// `--jwt-expiry-warning` are told `token_expiring` (once per token); those
    /// whose token has expired end with `bye` `token_expired` (retry: a new token, a new hello).
    func tokensSweep() {
        let due = signedSessions.due(now: wallClockSeconds, lead: config.tokenExpiryWarning)
        for (id, inMs) in due.warn { sessions.session(id)?.push(SharedBytes(Push.tokenExpiring(inMs: inMs))) }
        for id in due.expired {
            signedSessions.left(id)
            sessions.session(id)?.close(reason: "token_expired", retry: true,
                                        message: "the signed token expired; say hello again with a new one (send `refresh` before `exp` to stay connected)")
        }
    }
}
