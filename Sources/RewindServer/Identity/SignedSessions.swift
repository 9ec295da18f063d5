import RewindCore

/// The sessions that began with a signed token: whose token it is, what it
/// grants and when it expires — the identity subsystem's per-terminal
/// table, keyed by `Session.id`, dropped when the terminal leaves. A
/// connection is not left open on an old promise: `due` says which to warn
/// (`token_expiring`) and which have expired (`bye` `token_expired`);
/// `refresh` moves the expiry on and brings the new token's grants.
final class SignedSessions {
    struct Entry {
        let issuer: String
        let subject: String
        /// The user's handle (`users.name`), for logs: the session shows the token's display name.
        let handle: String
        /// The token's `jti` (what `rewind admin token deny --jti` names).
        var tokenID: String?
        /// `exp`, seconds since 1970.
        var expires: Double
        /// Roles the token grants (`rewind.docs`), for this session only.
        var grants: DocumentGrants?
        /// `token_expiring` was pushed for this expiry.
        var warned = false
    }

    private var entries: [Int: Entry] = [:]
    /// Operators' denials heard so far: a token checked while one came may have been checked before it was written.
    private(set) var denialsHeard = 0

    subscript(_ session: Int) -> Entry? { entries[session] }

    func began(_ session: Int, _ t: AppToken, handle: String) {
        entries[session] = Entry(issuer: t.issuer ?? "", subject: t.subject, handle: handle, tokenID: t.id, expires: t.expires, grants: t.grants)
    }

    func left(_ session: Int) { entries[session] = nil }

    /// A new token for the same (issuer, subject): its expiry, id and grants hold from now on.
    func refreshed(_ session: Int, _ t: AppToken) {
        entries[session]?.expires = t.expires
        entries[session]?.tokenID = t.id
        entries[session]?.grants = t.grants
        entries[session]?.warned = false
    }

    /// The role the session's token grants on `doc` (nil: none, or not a signed session).
    func grantedRole(_ session: Int, on doc: String) -> Role? {
        entries[session]?.grants?.role(on: doc)
    }

    /// An operator's denial was heard: the sessions it covers — every token
    /// of `subject` (of `issuer`, or of any when nil), or the token whose
    /// `jti` is `tokenID` — leave the table, to be ended by the caller.
    func denied(issuer: String?, subject: String?, tokenID: String?) -> [Int] {
        denialsHeard += 1
        let covered: [Int] = entries.compactMap { id, e in
            if let issuer, issuer != e.issuer { return nil }
            if let subject, subject == e.subject { return id }
            if let tokenID, tokenID == e.tokenID { return id }
            return nil
        }
        for id in covered { entries[id] = nil }
        return covered
    }

    /// At `now` (seconds): the sessions to warn, with the milliseconds left, at most `lead`
    /// seconds before their expiry (each once per token), and those whose token has expired.
    func due(now: Double, lead: Double) -> (warn: [(session: Int, inMs: Int64)], expired: [Int]) {
        var warn: [(Int, Int64)] = [], expired: [Int] = []
        for (id, e) in entries {
            if now >= e.expires {
                expired.append(id)
            } else if !e.warned && e.expires - now <= lead {
                entries[id]?.warned = true
                warn.append((id, Int64(((e.expires - now) * 1000).rounded())))
            }
        }
        return (warn, expired)
    }
}
