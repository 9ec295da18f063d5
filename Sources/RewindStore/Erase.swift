import RewindCore

/// `rewind admin user erase` (SPEC section 15): a person's name gone from
/// everything Rewind shows, their edits kept. Their tokens are revoked
/// (every instance ends their connections), their name is replaced by a
/// pseudonym in one place — `users.name`, which events, presence, quick
/// actions and `user list` all read — and the log keeps its user ids, so
/// the documents others own keep every edit and verify as before.
/// Snapshots of the documents they edited are dropped (a snapshot lists the
/// names of the users in it; they are derived data, rebuilt from the log),
/// and every instance renames them in the documents it has loaded
/// (`rewind_access` notice `erased:<id>:<pseudonym>`).
public enum Erase {
    public struct Erased: Sendable {
        public var pseudonym: String
        public var tokens: Int
        public var snapshots: Int
    }

    public static func user(_ name: String, db: Database) throws(RewindError) -> Erased {
        try db.query("BEGIN")
        do throws(RewindError) {
            let u = try db.query("SELECT id, erased_at IS NOT NULL FROM users WHERE name = $1 FOR UPDATE", [name])
            guard u.count == 1, let id = u[0, 0] else { throw RewindError.notFound("no user \"\(name)\"") }
            guard u[0, 1] == "f" else { throw RewindError.conflict("\(name) is already an erased user's pseudonym") }
            let tokens = try db.query("UPDATE tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL RETURNING 1", [id]).count
            // Random, so it says nothing about the person; stored, so it is the same everywhere and every time.
            let pseudonym = "erased-" + DocumentCipher.newKeyID()
            try db.query("UPDATE users SET name = $2, erased_at = now() WHERE id = $1", [id, pseudonym])
            let snapshots = try db.query("""
                DELETE FROM snapshots WHERE doc IN (SELECT doc FROM document_editors WHERE user_id = $1) RETURNING 1
                """, [id]).count
            try db.query("SELECT pg_notify('rewind_access', 'erased:' || $1 || ':' || $2)", [id, pseudonym])
            try db.query("COMMIT")
            return Erased(pseudonym: pseudonym, tokens: tokens, snapshots: snapshots)
        } catch {
            _ = try? db.query("ROLLBACK")
            throw error
        }
    }
}
