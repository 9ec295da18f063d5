import RewindCore
import RewindLoop
import RewindStore

/// Roles taking effect: changes from anywhere, revoked or denied tokens, erased users.
extension Server {
    /// The roles of `doc` changed (here or on another instance): terminals
    /// that lost all access are told `closed` and leave it (their open groups
    /// close, their presence goes); the others get their `prompt_state`
    /// again (a viewer cannot undo). No roles at all (`a` nil): the document
    /// was deleted, and everyone is told `closed` `deleted`.
    func accessChanged(_ doc: String, _ a: DocumentAccess?) {
        guard let d = documents[doc] else { return }
        let reason = a == nil ? "deleted" : "forbidden"
        for c in Array(d.subscribers.values) {
            if access.role(of: c, on: doc, in: a) == nil {
                leaveDocument(c, doc)
                c.push(SharedBytes(Push.closed(doc: doc, reason: reason)))
                logger.info("access lost; document closed", metadata: ["conn": "\(c.label)", "doc": "\(doc)", "reason": "\(reason)"])
            } else {
                promptStates.push(d, to: c)
            }
        }
        // Deleted (perhaps purged next): its key leaves memory with its terminals.
        if a == nil { documents.mayBeIdle(d, unloadNow: true) }
    }

    /// `doc` was renamed (here or on another instance): its terminals here
    /// get push `renamed` with the title as stored now (two renames close
    /// together may both push the later title: the last push is right).
    func renamed(_ doc: String) {
        guard let d = documents[doc], !d.subscribers.isEmpty else { return }
        store.title(of: doc) { [unowned self] result in
            guard case let .success(title) = result, let d = self.documents[doc] else { return }
            let push = SharedBytes(Push.renamed(doc: doc, title: title))
            for c in d.subscribers.values { c.push(push) }
        }
    }

    /// `user` was erased: their connections end (their tokens were revoked
    /// too), loaded documents show the pseudonym from now on — events held
    /// encoded with the old name are dropped, and read again from the log —
    /// and quick actions are listed again.
    ///
    /// The connections take the pseudonym before they end, so what their
    /// leaving tells others (`presence` with `node: null`, here and on other
    /// instances) does not carry the name; once all is done the instance says
    /// so on `rewind_erased` (`<user>:<instance>`), which `rewind admin user
    /// erase` waits for from every running instance before it returns — a
    /// read right after it (`open` with `since`) finds no old name anywhere.
    func userErased(_ user: Int64, pseudonym: String) {
        for d in documents.all { d.userRenamed(user, to: pseudonym) }
        for c in sessions.sessions(ofUser: user) { c.user = (id: user, name: pseudonym) }
        tokensRevoked(user: user)
        quickActions.resync()
        notifications.notify(Notifications.erasedChannel, ["\(user):\(notifications.instance)"])
        logger.info("user erased", metadata: ["user": "\(user)", "pseudonym": "\(pseudonym)"])
    }

    /// Every token of `user` was revoked: its connections end now.
    func tokensRevoked(user: Int64) {
        for c in sessions.sessions(ofUser: user) {
            c.close(reason: "unauthorized", retry: false, message: "your tokens were revoked; ask an operator for a new one")
        }
    }

    /// An operator denied signed tokens: the connections they opened end now.
    func tokensDenied(issuer: String?, subject: String?, tokenID: String?) {
        for id in signedSessions.denied(issuer: issuer, subject: subject, tokenID: tokenID) {
            sessions.session(id)?.close(reason: "unauthorized", retry: false, message: "your signed token was denied by an operator")
        }
    }
}
