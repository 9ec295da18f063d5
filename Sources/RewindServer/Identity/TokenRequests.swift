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
        guard SignedToken.looksSigned(token) else {
            throw RewindError(.unauthorized, "refresh: " + TokenRefusal.malformed.message, details: ["reason": "malformed"])
        }
        let processing = c.processingGoesOn()  // what the terminal sends next waits for the new token
        let denialsHeard = signedSessions.denialsHeard
        checkSignedToken(token, with: verifier) { [unowned self] checked in
            defer { processing.end() }
            guard !c.isClosed else { return }
            switch checked {
            case let .failed(e):
                c.fail(r, e)
            case let .refused(refusal):
                self.metrics?.tokenChecked(refusal)
                c.fail(r, RewindError(.unauthorized, "refresh: " + refusal.message, details: ["reason": .string(refusal.rawValue)]))
            case let .accepted(t):
                guard (t.issuer ?? "") == began.issuer, t.subject == began.subject else {
                    return c.fail(r, RewindError(.forbidden, "refresh: the token is another user's (sub \"\(t.subject)\"); this session stays as it was"))
                }
                let grantsChanged = t.grants != began.grants
                self.signedSessions.refreshed(c.id, t)
                self.metrics?.tokenChecked(nil)
                self.checkDenialAgain(c, t, ifHeardSince: denialsHeard)
                c.reply(Message.reply(r.id, [("expires_at", .int(Int64((t.expires * 1000).rounded())))]))
                if grantsChanged { self.grantsChanged(c) }
            }
        }
    }

    /// Whether session `c` may create document `doc` (nil: an id the server
    /// picks). A session whose token grants documents by pattern was scoped
    /// by the app: it creates only ids an `editor` pattern matches (and so
    /// must name one); other sessions create as any user does.
    func creationRefusal(_ doc: String?, _ c: Session) -> RewindError? {
        guard let grants = signedSessions[c.id]?.grants else { return nil }
        guard let doc else {
            return RewindError(.forbidden, "this session's token grants documents by pattern (`rewind.docs`): create one with an id an `editor` pattern matches (`create_doc {doc}`)")
        }
        guard grants.allowsCreating(doc) else {
            return RewindError(.forbidden, "create_doc: no `editor` pattern of this session's token (`rewind.docs`) matches \"\(doc)\"")
        }
        return nil
    }

    /// A denial heard while `t` was being checked may have been written after
    /// its check read the table: ask once more, and end the session if it is
    /// denied (as the denial's notice would have, had the session existed).
    func checkDenialAgain(_ c: Session, _ t: AppToken, ifHeardSince heard: Int) {
        guard signedSessions.denialsHeard != heard else { return }
        store.tokenDenied(issuer: t.issuer ?? "", subject: t.subject, id: t.id) { [unowned self] result in
            guard case .success(true) = result, !c.isClosed else { return }
            self.signedSessions.left(c.id)
            c.close(reason: "unauthorized", retry: false, message: "your signed token was denied by an operator")
        }
    }

    /// What checking a signed token found.
    enum TokenCheck {
        case accepted(AppToken)
        case refused(TokenRefusal)
        /// Whether it is denied could not be read (the database): nothing is let in on a guess.
        case failed(RewindError)
    }

    /// A signed token checked, for `hello` and `refresh` alike: its signature
    /// by jwt-kit on the thread pool — an unknown `kid` reads the JWKS file
    /// again (at most once a minute) and tries once more — then its claims by
    /// the server's clock (`TokenPolicy`), then whether an operator denied it
    /// (`rewind admin token deny`: one query). `done` runs on the loop.
    func checkSignedToken(_ token: String, with verifier: TokenVerifier, retried: Bool = false,
                          _ done: @escaping (TokenCheck) -> Void) {
        BackgroundWork.run(on: loop, { verifier.verify(token) }) { [unowned self] verified in
            if case .failure(.unknownKid) = verified, !retried, self.mayReadTokenKeysAgain() {
                return self.readTokenKeysAgain(why: "a token's kid is not among the keys") { [unowned self] in
                    guard let again = self.tokens else { return done(.refused(.unknownKid)) }
                    self.checkSignedToken(token, with: again, retried: true, done)
                }
            }
            let t: AppToken
            switch verified {
            case let .failure(refusal): return done(.refused(refusal))
            case let .success(v): t = v
            }
            if let refusal = self.config.tokenPolicy.refusal(of: t, now: self.wallClockSeconds) { return done(.refused(refusal)) }
            self.store.tokenDenied(issuer: t.issuer ?? "", subject: t.subject, id: t.id) { result in
                switch result {
                case let .failure(e): done(.failed(e))
                case .success(true): done(.refused(.denied))
                case .success(false): done(.accepted(t))
                }
            }
        }
    }

    /// A refresh brought other grants: the session's open documents are
    /// checked again — one it no longer has any role on is `closed`
    /// `forbidden`, as when a stored role is taken away; the rest get their
    /// prompt state again (a viewer cannot undo).
    func grantsChanged(_ c: Session) {
        for doc in c.openDocuments {
            access.load(doc) { [unowned self] result in
                guard !c.isClosed, c.openDocuments.contains(doc), let d = self.documents[doc], case let .success(a) = result else { return }
                if self.access.role(of: c, on: doc, in: a) == nil {
                    self.leaveDocument(c, doc)
                    c.push(SharedBytes(Push.closed(doc: doc, reason: "forbidden")))
                } else {
                    self.promptStates.push(d, to: c)
                }
            }
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
