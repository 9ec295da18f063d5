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
        store.share(doc: doc, user: name, role: role, by: c.user!.id) { [unowned self] result in
            switch result {
            case let .failure(e): c.fail(r, e)
            case let .success(shared):
                self.access.changed(doc, user: shared.user, role: shared.role)
                c.reply(Message.reply(r.id, [("doc", .string(doc)), ("user", .string(name)), ("role", role.map { .string($0.rawValue) } ?? .null)]))
            }
        }
    }

    /// The roles of `doc` changed (here or on another instance): terminals
    /// that lost all access are told `closed` and leave it (their open groups
    /// close, their presence goes); the others get their `prompt_state`
    /// again (a viewer cannot undo).
    func accessChanged(_ doc: String, _ a: DocumentAccess?) {
        guard let d = existingDocument(doc) else { return }
        for c in Array(d.subscribers.values) {
            guard let user = c.user else { continue }
            if a?.role(of: user.id) == nil {
                leaveDocument(c, doc)
                c.push(SharedBytes(Message.push("closed", [("doc", .string(doc)), ("reason", "forbidden")])))
                logger.info("access lost; document closed", metadata: ["conn": "\(c.label)", "doc": "\(doc)"])
            } else {
                pushPromptState(d, to: c)
            }
        }
    }

    /// Every token of `user` was revoked: its connections end now.
    func tokensRevoked(user: Int64) {
        for c in connectionsOf(user: user) {
            c.close(reason: "unauthorized", retry: false, message: "your tokens were revoked; ask an operator for a new one")
        }
    }

    /// Whether `c` may edit `d` now (prompt state, `validate`, chain actions).
    func mayEdit(_ d: DocumentRuntime, _ c: Connection) -> Bool {
        guard let user = c.user else { return false }
        return access.lastKnownRole(d.id, user.id)?.allows(.edit) ?? false
    }
}
