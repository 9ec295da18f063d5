import Logging
import RewindCore
import RewindLoop
import RewindStore

/// Frames → requests → their handlers: `handle` decodes and rate-limits,
/// `dispatch` checks what `RequestTable` says a request needs and calls the
/// handler, a method of the subsystem's request type (`DocumentRequests`,
/// `UndoRequests`, `ChainRequests`, …), given the `Session` that `hello`
/// made — the one request given only the connection. `hello` and `close`
/// (which changes what the session has open) are here.
extension Server {
    /// One frame of `c`, taken in order by `Connection.pump`.
    func handle(_ frame: FrameDecoder.Frame, from c: Connection) {
        let line: [UInt8]
        switch frame {
        case .tooLarge:
            let e = RewindError(.tooLarge, "line longer than \(config.limits.maxFrameBytes) bytes; skipped to its newline")
            metrics?.counts.malformed(e.code)
            c.reply(Message.error(nil, e))
            return badFrame(c)
        case let .line(l): line = l
        }
        let request: Request
        switch Request.decode(line, maxDepth: config.limits.maxJSONDepth, submitLimits: config.limits) {
        case let .failure(f):
            metrics?.counts.malformed(f.error.code)
            c.reply(Message.error(f.id, f.error))
            return f.error.code == .badFrame ? badFrame(c) : ()
        case let .success(r): request = r
        }
        metrics?.counts.request(RequestLabels.index(of: request.type))
        c.inbox.badFramesInARow = 0
        if let wait = c.inbox.requests.take(now: now, rate: config.requestsPerSecond, burst: config.requestBurst) {
            return c.fail(request, RewindError(
                .rateLimited, "more than \(Int(config.requestsPerSecond)) requests a second on this connection; slow down",
                details: ["retry_after_ms": .int(Int64(wait))]))
        }
        let session = sessions.session(of: c)
        do {
            try dispatch(request, from: c, session)
        } catch {
            if let session { session.fail(request, error) } else { c.fail(request, error) }
        }
    }

    private func badFrame(_ c: Connection) {
        c.inbox.badFramesInARow += 1
        if Int(c.inbox.badFramesInARow) >= config.maxBadFrames {
            c.close(reason: "bad_frames", retry: false, message: "\(config.maxBadFrames) malformed lines in a row")
        }
    }

    /// Runs `r` by its entry in `RequestType.all`, once what the entry asks
    /// for holds: a session, a role on the document that allows the request,
    /// the document open on this connection. A handler of an open document
    /// runs in the document's order (`whenOpen`): after it is ready and after
    /// what this connection sent before, so no handler can forget to wait.
    func dispatch(_ r: Request, from connection: Connection, _ session: Session?) throws(RewindError) {
        let type = RequestType.byName[r.type]
        if case let .hello(handler) = type?.rule { return try handler(self, r, connection) }
        guard let c = session else { throw RewindError(.unauthorized, "say hello with a token first") }
        if shuttingDown && type?.duringShutdown != true { throw RewindError(.unavailable, "server shutting down; reconnect") }
        switch type?.rule {
        case nil: throw .badRequest("unknown request type \"\(r.type)\"", details: ["type": .string(r.type)])
        case .hello: return
        case let .session(handler)?: try handler(self, r, c)
        case let .role(need, handler)?:
            try access.withRole(on: try documentRequests.documentID(r), need, for: r, c) { [unowned self] role throws(RewindError) in try handler(self, r, c, role) }
        case let .openDocument(need, handler)?:
            let doc = try documentRequests.documentID(r)
            try access.withRole(on: doc, need, for: r, c) { [unowned self] _ throws(RewindError) in
                guard c.openDocuments.contains(doc) else { throw .badRequest("\(r.type): open document \"\(doc)\" first") }
                let d = self.documents.runtime(doc)
                self.documentRequests.whenOpen(c, d) { [unowned self] error in
                    if let error { return c.fail(r, error) }
                    do throws(RewindError) { try handler(self, r, c, d) } catch { c.fail(r, error) }
                }
            }
        }
    }

    // MARK: Session

    func hello(_ r: Request, _ c: Connection) throws(RewindError) {
        guard sessions.session(of: c) == nil else { throw .badRequest("hello was already said on this connection") }
        let token = try r.string("token", maxBytes: .max)  // (the frame limit bounds it)
        let signed = SignedToken.looksSigned(token)
        if token.utf8.count > (signed ? TokenVerifier.maxBytes : 256) {
            throw RewindError(.tooLarge, "hello: `token` is longer than \(signed ? TokenVerifier.maxBytes : 256) bytes")
        }
        let claimed = try r.optionalString("user", maxBytes: 255)
        let client = try r.optionalString("client", maxBytes: config.limits.maxNameBytes) ?? "t-" + Accounts.newToken().prefix(12)
        let locale = try r.optionalString("locale", maxBytes: 64)
        let options = HelloOptions(shakeToEdit: try r.optionalBool("shake_to_edit") ?? true,
                                   errorPrompts: try r.optionalBool("error_prompts") ?? false, gestures: try gestureBindings(r))
        let launch = try r.body["shortcut"].flatMap { v throws(RewindError) in v.isNull ? nil : try LaunchShortcut(v) }
        // An address whose hellos keep failing is throttled, but a right token
        // still gets in at once (many users share an address behind NAT): each
        // connection then has one try, and a wrong token ends it (`bye`
        // `rate_limited`), so guessing costs a connection per guess.
        let throttled = admission.helloRetryAfter(c)
        // Lines sent behind hello wait for it (and for its quick actions, and a launch shortcut's start).
        let processing = c.processingGoesOn()
        func refuse(_ why: String, reason: TokenRefusal? = nil) {
            if let reason { metrics?.tokenChecked(reason) }
            admission.helloFailed(c, claimed: claimed, why: reason?.rawValue ?? why)
            c.fail(r, RewindError(.unauthorized, why, details: reason.map { ["reason": .string($0.rawValue)] } ?? [:]))
            guard let wait = throttled else { return }
            c.close(reason: "rate_limited", retry: true,
                    message: "too many failed hellos from \(c.address): one try per connection for about \(wait) ms more")
        }
        /// The token named `user`: the session begins (`signed`: with this app
        /// token, which expires; `handle` is the user's `users.name`, as `user.name` may be the token's display name).
        /// `slot`: the hello's place (`HelloGate`), held until its answer is sent.
        func admit(_ user: (id: Int64, name: String), signed: (token: AppToken, handle: String)? = nil, slot: HelloGate.Slot) {
            guard admission.admitUser(c, user.id) else { return }
            let handle = signed?.handle ?? user.name
            let s = Session(connection: c, user: user, client: client, helloAt: wallClockMillis(), locale: Titles.locale(locale), options: options)
            if let signed {
                signedSessions.began(s.id, signed.token, handle: signed.handle)
                metrics?.tokenChecked(nil)
            }
            if let old = sessions.begin(s) {
                old.close(reason: "replaced", retry: false, message: "another connection took over client \"\(client)\"")
            }
            cluster.tookOver(user: user.id, client: client, at: s.helloAt)  // and on the other instances
            logger.debug("hello", metadata: ["conn": "\(c.label)"])
            let joining = c.processingGoesOn()  // until its quick actions are known
            quickActions.join(s) { [unowned self] items in
                defer { joining.end() }
                s.reply(Message.reply(r.id, [
                    ("client", .string(client)), ("user", .string(handle)), ("name", .string(user.name)), ("server", .string(self.serverName)),
                    ("protocol", 1), ("shortcuts", .array(items.map { $0.json(locale: s.locale) })),
                ]))
                if let launch { self.shortcuts.run(launch, answering: r, s) }
                withExtendedLifetime(slot) {}
            }
        }
        // The token's check and the quick actions' read wait for a place (`HelloGate`).
        helloGate.enter { [unowned self] slot in
            guard !c.isClosed else { return processing.end() }
            if signed, let verifier = tokens {
                let denialsHeard = signedSessions.denialsHeard
                checkSignedToken(token, with: verifier) { [unowned self] checked in
                    guard !c.isClosed else { return processing.end() }
                    let t: AppToken
                    switch checked {
                    case let .failed(e): c.fail(r, e); return processing.end()
                    case let .refused(reason): refuse("signed token refused: " + reason.message, reason: reason); return processing.end()
                    case let .accepted(v): t = v
                    }
                    if let claimed, claimed != t.subject {
                        refuse("`user` is not the token's `sub` (it may be left out)")
                        return processing.end()
                    }
                    self.store.userForIdentity(issuer: t.issuer ?? "", subject: t.subject, displayName: t.name) { [unowned self] result in
                        defer { processing.end() }
                        guard !c.isClosed else { return }
                        switch result {
                        case let .failure(e): c.fail(r, e)
                        case let .success(u):
                            if u.made { self.logger.info("user made on first sight of a signed token", metadata: ["user": "\(u.name)", "iss": "\(t.issuer ?? "")"]) }
                            admit((id: u.id, name: u.displayName ?? u.name), signed: (t, u.name), slot: slot)
                            if let s = self.sessions.session(of: c) { self.checkDenialAgain(s, t, ifHeardSince: denialsHeard) }
                        }
                    }
                }
                return
            }
            store.authenticate(token: token) { result in
                defer { processing.end() }
                guard !c.isClosed else { return }
                switch result {
                case let .failure(e): c.fail(r, e)
                case .success(nil):
                    refuse(signed ? "signed tokens are not configured on this server (--jwt-secret-file, --jwks-file)" : "unknown or revoked token")
                case let .success(user?):
                    if let claimed, !claimed.utf8.elementsEqual(user.name.utf8) {
                        return refuse("this token belongs to another user")
                    }
                    admit(user, slot: slot)
                }
            }
        }
    }

    /// `gestures` at hello: gesture name → action, over the defaults; null unbinds one.
    private func gestureBindings(_ r: Request) throws(RewindError) -> [String: String] {
        var bindings = HelloOptions.defaultGestures
        guard let v = r.body["gestures"], !v.isNull else { return bindings }
        guard let o = v.objectValue, o.members.count <= 32 else {
            throw .badRequest("hello: `gestures` must be an object of at most 32 gesture → action names")
        }
        for (name, action) in o.members {
            guard !name.isEmpty, name.utf8.count <= 64 else { throw .badRequest("hello: gesture names are 1 to 64 bytes") }
            if action.isNull { bindings[name] = nil; continue }
            guard let a = action.stringValue, !a.isEmpty, a.utf8.count <= 64 else {
                throw .badRequest("hello: gesture \"\(name)\" must name an action (a string) or be null")
            }
            bindings[name] = a
        }
        return bindings
    }

    // MARK: Documents

    func close(_ r: Request, _ c: Session) throws(RewindError) {
        let doc = try documentRequests.documentID(r)
        let wasOpen = c.openDocuments.contains(doc)
        leaveDocument(c, doc)
        c.reply(Message.reply(r.id, [("doc", .string(doc)), ("closed", .bool(wasOpen))]))
    }
}
