import RewindCore

/// The sessions that began with a signed token: whose token it is and when
/// it expires — the identity subsystem's per-terminal table, keyed by
/// `Session.id`, dropped when the terminal leaves. A connection is not left
/// open on an old promise: `due` says which to warn (`token_expiring`) and
/// which have expired (`bye` `token_expired`); `refresh` moves the expiry on.
final class SignedSessions {
    struct Entry {
        let issuer: String
        let subject: String
        /// `exp`, seconds since 1970.
        var expires: Double
        /// `token_expiring` was pushed for this expiry.
        var warned = false
    }

    private var entries: [Int: Entry] = [:]

    subscript(_ session: Int) -> Entry? { entries[session] }

    func began(_ session: Int, _ t: AppToken) {
        entries[session] = Entry(issuer: t.issuer ?? "", subject: t.subject, expires: t.expires)
    }

    func left(_ session: Int) { entries[session] = nil }

    /// A new token for the same (issuer, subject): its expiry holds from now on.
    func refreshed(_ session: Int, expires: Double) {
        entries[session]?.expires = expires
        entries[session]?.warned = false
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
