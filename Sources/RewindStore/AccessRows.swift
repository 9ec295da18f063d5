import RewindCore

/// Roles on documents and token revocation as SQL: the one place that knows
/// the `access` table, shared by the server (on the loop) and the admin CLI.
public enum AccessRows {
    /// The owner and the members of document $1; a null owner: no such
    /// document. A deleted document has no roles: it is `not_found` for
    /// everyone, as one that never existed. The same work whether it exists
    /// or not — one probe of `documents`, one of `access`, at least one row
    /// back — so a stranger cannot tell by the clock which ids are taken
    /// (issue 44: a missing document, found by one probe and no row, answered
    /// `not_found` ~20 µs sooner than one that exists but is not shared).
    static let loadSQL = """
        SELECT d.owner, a.user_id, a.role FROM (SELECT $1::text AS id) q
        LEFT JOIN documents d ON d.id = q.id AND d.deleted_at IS NULL
        LEFT JOIN access a ON a.doc = q.id
        """

    static func decode(_ rows: Rows) throws(RewindError) -> DocumentAccess? {
        guard rows.count > 0, let owner = rows.int(0, 0) else { return nil }
        var access = DocumentAccess(owner: owner)
        for i in 0..<rows.count {
            guard let user = rows.int(i, 1) else { continue }
            guard let role = rows[i, 2].flatMap({ Role(rawValue: $0) }) else { throw RewindError(.internal, "unknown role in access") }
            access.members[user] = role
        }
        return access
    }

    /// Gives the user named $2 the role $3 on document $1 (null takes it
    /// away), granted by user $4 (null: an operator). Answers one row: the
    /// user's id (null: no such user), the owner (null: no such document),
    /// and whether a row changed. The owner's role is never changed here.
    static let share = """
        WITH target AS (SELECT id FROM users WHERE name = $2),
             doc AS (SELECT owner FROM documents WHERE id = $1 AND deleted_at IS NULL),
             removed AS (
                 DELETE FROM access a USING target
                 WHERE $3::text IS NULL AND a.doc = $1 AND a.user_id = target.id
                 RETURNING 1),
             granted AS (
                 INSERT INTO access (doc, user_id, role, granted_by)
                 SELECT $1, target.id, $3::text, $4::bigint FROM target, doc
                 WHERE $3::text IS NOT NULL AND target.id <> doc.owner
                 ON CONFLICT (doc, user_id) DO UPDATE
                     SET role = EXCLUDED.role, granted_by = EXCLUDED.granted_by, granted_at = now()
                 RETURNING 1)
        SELECT (SELECT id FROM target), (SELECT owner FROM doc),
               (SELECT count(*) FROM removed) + (SELECT count(*) FROM granted)
        """

    public struct Shared: Sendable, Equatable {
        public var user: Int64
        public var role: Role?
    }

    /// The outcome of `share`, as the protocol answers it.
    static func shared(_ rows: Rows, doc: String, user: String, role: Role?) throws(RewindError) -> Shared {
        guard rows.count == 1, let owner = rows.int(0, 1) else { throw .notFound("no document \"\(doc)\"") }
        guard let id = rows.int(0, 0) else { throw .notFound("no user \"\(user)\"", details: ["user": .string(user)]) }
        guard id != owner else { throw .badRequest("\"\(user)\" owns \"\(doc)\": the owner's role cannot be changed") }
        return Shared(user: id, role: role)
    }

    static func shareParams(doc: String, user: String, role: Role?, by: Int64?) -> [String?] {
        [doc, user, role?.rawValue, by.map { String($0) }]
    }

    // MARK: Operators (blocking, for `rewind admin`)

    /// `rewind admin grant DOC USER ROLE` / `revoke DOC USER`.
    public static func share(doc: String, user: String, role: Role?, db: Database) throws(RewindError) -> Shared {
        if role == .owner { throw .badRequest("a document has one owner, its creator; grant editor or viewer") }
        return try shared(db.query(share, shareParams(doc: doc, user: user, role: role, by: nil)), doc: doc, user: user, role: role)
    }

    /// Revokes every token of a user (their connections are closed at once); returns how many.
    public static func revokeTokens(of user: String, db: Database) throws(RewindError) -> Int {
        let u = try db.query("SELECT id FROM users WHERE name = $1", [user])
        guard u.count == 1 else { throw .notFound("no user \"\(user)\"") }
        let rows = try db.query("UPDATE tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL RETURNING 1", [u[0, 0]])
        return rows.count
    }

    public struct UserInfo: Sendable {
        public var name: String
        public var created: String
        public var tokens: Int
        public var revoked: Int
        public var owns: Int
        public var shared: Int
    }

    /// Every user, with live and revoked tokens and the documents they own or share.
    public static func users(db: Database) throws(RewindError) -> [UserInfo] {
        let rows = try db.query("""
            SELECT u.name, to_char(u.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                   (SELECT count(*) FROM tokens t WHERE t.user_id = u.id AND t.revoked_at IS NULL),
                   (SELECT count(*) FROM tokens t WHERE t.user_id = u.id AND t.revoked_at IS NOT NULL),
                   (SELECT count(*) FROM documents d WHERE d.owner = u.id),
                   (SELECT count(*) FROM access a WHERE a.user_id = u.id)
            FROM users u ORDER BY u.name
            """)
        return rows.values.map { r in
            UserInfo(name: r[0] ?? "", created: r[1] ?? "", tokens: Int(r[2] ?? "0") ?? 0, revoked: Int(r[3] ?? "0") ?? 0,
                     owns: Int(r[4] ?? "0") ?? 0, shared: Int(r[5] ?? "0") ?? 0)
        }
    }
}
