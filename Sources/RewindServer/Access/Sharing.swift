import RewindCore
import RewindLoop
import RewindStore

/// Roles taking effect: `share`, role changes from anywhere, revoked tokens.
extension Server {
    /// `share {doc, user, role}` (the owner only: checked before it runs).
    func share(_ r: Request, _ c: Connection) throws(RewindError) {
        let doc = try r.string("doc", maxBytes: config.limits.maxNameBytes)
        let name = try r.string("user", maxBytes: 64)
        guard let v = r.body["role"] else { throw .badRequest("share: missing field `role` (\"editor\", \"viewer\" or null)") }
        var role: Role?
        if !v.isNull {
            guard let s = v.stringValue, let rl = Role(rawValue: s), rl != .owner else {
                throw .badRequest("share: `role` must be \"editor\", \"viewer\" or null")
            }
            role = rl
        }
        let by = c.user!.id
        if let wait = unknownNameShares[by]?.wait(now: now) {
            throw RewindError(.rateLimited, "share: too many names that are no user; try again later",
                              details: ["retry_after_ms": .int(Int64(wait))])
        }
        store.share(doc: doc, user: name, role: role, by: by) { [unowned self] result in
            switch result {
            case let .failure(e):
                if e.code == .notFound, e.details?.objectValue?["user"] != nil { self.unknownNameShared(name, by: c) }
                c.fail(r, e)
            case let .success(shared):
                self.access.changed(doc, user: shared.user, role: shared.role)
                c.reply(Message.reply(r.id, [("doc", .string(doc)), ("user", .string(name)), ("role", role.map { .string($0.rawValue) } ?? .null)]))
            }
        }
    }

    /// `delete_doc {doc}` (the owner only: checked before it runs). The mark
    /// is committed first; then every terminal that has the document open,
    /// here and (through the `rewind_access` notice) on every instance, is
    /// told `closed` `deleted`.
    func deleteDocument(_ r: Request, _ c: Connection) throws(RewindError) {
        let doc = try r.string("doc", maxBytes: config.limits.maxNameBytes)
        store.deleteDocument(doc, owner: c.user!.id) { [unowned self] result in
            switch result {
            case let .failure(e): c.fail(r, e)
            case .success(false): c.fail(r, .notFound("no document \"\(doc)\"", details: ["doc": .string(doc)]))
            case .success(true):
                self.logger.info("document deleted", metadata: ["doc": "\(doc)", "by": "\(c.label)"])
                self.access.deleted(doc)
                c.reply(Message.reply(r.id, [("doc", .string(doc)), ("deleted", true)]))
            }
        }
    }

    /// Names that are no user, shared with (PROTOCOL.md: an owner learns
    /// whether a name is a user from `share`): logged, and limited per user
    /// (`shareProbeBurst`, refilled at `shareProbesPerMinute`), so that user
    /// names cannot be listed by trying a dictionary.
    private func unknownNameShared(_ name: String, by c: Connection) {
        guard let user = c.user else { return }
        if unknownNameShares.count > 10_000 { unknownNameShares = unknownNameShares.filter { var b = $0.value; return !b.isFull(now: now) } }
        var bucket = unknownNameShares[user.id]
            ?? TokenBucket(rate: config.shareProbesPerMinute / 60, burst: config.shareProbeBurst, now: now)
        _ = bucket.take(now: now)
        unknownNameShares[user.id] = bucket
        logger.warning("share named no user (a probe for names?)", metadata: ["conn": "\(c.label)", "name": "\(name)"])
    }

    /// The roles of `doc` changed (here or on another instance): terminals
    /// that lost all access are told `closed` and leave it (their open groups
    /// close, their presence goes); the others get their `prompt_state`
    /// again (a viewer cannot undo). No roles at all (`a` nil): the document
    /// was deleted, and everyone is told `closed` `deleted`.
    func accessChanged(_ doc: String, _ a: DocumentAccess?) {
        guard let d = existingDocument(doc) else { return }
        let reason = a == nil ? "deleted" : "forbidden"
        for c in Array(d.subscribers.values) {
            guard let user = c.user else { continue }
            if a?.role(of: user.id) == nil {
                leaveDocument(c, doc)
                c.push(SharedBytes(Message.push("closed", [("doc", .string(doc)), ("reason", .string(reason))])))
                logger.info("access lost; document closed", metadata: ["conn": "\(c.label)", "doc": "\(doc)", "reason": "\(reason)"])
            } else {
                pushPromptState(d, to: c)
            }
        }
        // Deleted (perhaps purged next): its key leaves memory with its terminals.
        if a == nil { documentMayBeIdle(d, unloadNow: true) }
    }

    /// `user` was erased: their connections end (their tokens were revoked
    /// too), loaded documents show the pseudonym from now on — events held
    /// encoded with the old name are dropped, and read again from the log —
    /// and quick actions are listed again.
    func userErased(_ user: Int64, pseudonym: String) {
        tokensRevoked(user: user)
        for d in loadedDocuments { d.userRenamed(user, to: pseudonym) }
        quickActions.resync()
        logger.info("user erased", metadata: ["user": "\(user)", "pseudonym": "\(pseudonym)"])
    }

    /// Every token of `user` was revoked: its connections end now.
    func tokensRevoked(user: Int64) {
        for c in sessions.connections(ofUser: user) {
            c.close(reason: "unauthorized", retry: false, message: "your tokens were revoked; ask an operator for a new one")
        }
    }

    /// Whether `c` may edit `d` now (prompt state, `validate`, chain actions).
    func mayEdit(_ d: DocumentRuntime, _ c: Connection) -> Bool {
        guard let user = c.user else { return false }
        return access.lastKnownRole(d.id, user.id)?.allows(.edit) ?? false
    }
}
