import RewindCore

/// Signed tokens an operator denied (schema/019), as SQL for the admin CLI:
/// deny a subject or one token (`jti`), list what is denied, lift a denial.
/// The server reads them with `EventStore.tokenDenied` and hears new ones on
/// `rewind_access` (`denied:`).
public enum TokenDenials {
    public struct Denial: Sendable {
        public var id: Int64
        public var issuer: String?
        public var subject: String?
        public var tokenID: String?
        /// ISO 8601 (UTC), nil: for ever.
        public var until: String?
        public var reason: String?
        public var created: String
    }

    /// Denies every token of `subject` (of `issuer`, or of any issuer when
    /// nil), or the one token whose `jti` is `tokenID`, until `until` (an
    /// ISO 8601 time or a PostgreSQL interval such as `7 days`; nil: for
    /// ever). Answers the denial's id.
    public static func deny(issuer: String?, subject: String?, tokenID: String?, until: String?, reason: String?,
                            db: Database) throws(RewindError) -> Int64 {
        guard (subject == nil) != (tokenID == nil) else { throw .badRequest("deny a subject (--sub) or one token (--jti), not both") }
        for (what, v) in [("--sub", subject), ("--jti", tokenID), ("--iss", issuer)] {
            if let v, v.utf8.count > 255 || (v.isEmpty && what != "--iss") { throw .badRequest("\(what) must be 1 to 255 bytes") }
        }
        let untilSQL = "CASE WHEN $4::text IS NULL THEN NULL WHEN $4 ~ '^[0-9]{4}-' THEN $4::timestamptz ELSE now() + $4::interval END"
        let rows: Rows
        do {
            rows = try db.query("""
                INSERT INTO token_denials (issuer, subject, token_id, until, reason)
                VALUES ($1, $2, $3, \(untilSQL), $5) RETURNING id
                """, [issuer, subject, tokenID, until, reason])
        } catch where Database.sqlstate(of: error).map({ $0.hasPrefix("22") }) ?? false {
            throw .badRequest("--until must be a time (2026-12-01T00:00:00Z) or a span (`7 days`, `12 hours`): \(until ?? "")")
        }
        guard let id = rows.int(0, 0) else { throw RewindError(.internal, "the denial was not recorded") }
        return id
    }

    /// Denials in force (and, with `all`, those whose `until` has passed), newest first.
    public static func list(all: Bool = false, db: Database) throws(RewindError) -> [Denial] {
        let iso = "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'"
        let rows = try db.query("""
            SELECT id, issuer, subject, token_id, to_char(until AT TIME ZONE 'UTC', \(iso)), reason,
                   to_char(created_at AT TIME ZONE 'UTC', \(iso))
            FROM token_denials WHERE $1 OR until IS NULL OR until > now() ORDER BY id DESC
            """, [all ? "true" : "false"])
        return (0..<rows.count).map { i in
            Denial(id: rows.int(i, 0) ?? 0, issuer: rows[i, 1], subject: rows[i, 2], tokenID: rows[i, 3], until: rows[i, 4],
                   reason: rows[i, 5], created: rows[i, 6] ?? "")
        }
    }

    /// Lifts denial `id` (tokens it covered are taken again from now on; connections it ended stay ended).
    public static func lift(_ id: Int64, db: Database) throws(RewindError) {
        guard try db.query("DELETE FROM token_denials WHERE id = $1 RETURNING 1", [String(id)]).count == 1 else {
            throw .notFound("no denial \(id) (`rewind admin token denials` lists them)")
        }
    }
}
