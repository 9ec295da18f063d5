import RewindCore
import RewindLoop

/// `rewind admin user erase` (SPEC section 15): a person's name gone from
/// everything Rewind shows, their edits kept. Their tokens are revoked
/// (every instance ends their connections), their name is replaced by a
/// pseudonym in one place — `users.name`, which events, presence, quick
/// actions and `user list` all read — and the log keeps its user ids, so
/// the documents others own keep every edit and verify as before.
/// Snapshots of the documents they edited are dropped (a snapshot lists the
/// names of the users in it; they are derived data, rebuilt from the log),
/// and every instance renames them in the documents it has loaded
/// (`rewind_access` notice `erased:<id>:<pseudonym>`). It returns once every
/// running instance has said it did (`rewind_erased`), or after `waitMs`:
/// until an instance has, it may still show the old name it holds in memory.
public enum Erase {
    public struct Erased: Sendable {
        public var pseudonym: String
        public var tokens: Int
        public var snapshots: Int
        /// Running instances that applied it before `user` returned.
        public var confirmed: Int
        /// Running instances that had not said so within the wait.
        public var unconfirmed: [Int32]
        /// The user's id (kept by the log; only the name changed).
        public var userID: String
        /// The name given was already an erased user's pseudonym: nothing
        /// changed in the catalog (run again for the shards a first run missed).
        public var already = false
    }

    public static func user(_ name: String, db: Database, waitMs: Int = 10_000) throws(RewindError) -> Erased {
        try db.listen(Notifications.erasedChannel)
        defer { _ = try? db.query("UNLISTEN \(Notifications.erasedChannel)") }
        var erased = try rename(name, db: db)
        if erased.already { return erased }
        let live = try db.query(Notifications.liveSQL(classParam: "$1"), [String(Notifications.lockClass)])
        var waiting = Set((0..<live.count).compactMap { live.int($0, 0).map { Int32(truncatingIfNeeded: $0) } })
        let deadline = monotonicNanos() + UInt64(waitMs) * 1_000_000
        while !waiting.isEmpty {
            let now = monotonicNanos()
            guard now < deadline else { break }
            guard let n = try db.nextNotice(timeoutMs: Int32((deadline - now) / 1_000_000) + 1) else { continue }
            let parts = n.payload.split(separator: ":")
            if parts.count == 2, parts[0] == Substring(erased.userID), let instance = Int32(parts[1]), waiting.remove(instance) != nil {
                erased.confirmed += 1
            }
        }
        erased.unconfirmed = waiting.sorted()
        return erased
    }

    private static func rename(_ name: String, db: Database) throws(RewindError) -> Erased {
        try db.query("BEGIN")
        do throws(RewindError) {
            let u = try db.query("SELECT id, erased_at IS NOT NULL FROM users WHERE name = $1 FOR UPDATE", [name])
            guard u.count == 1, let id = u[0, 0] else { throw RewindError.notFound("no user \"\(name)\"") }
            guard u[0, 1] == "f" else {
                try db.query("COMMIT")
                return Erased(pseudonym: name, tokens: 0, snapshots: 0, confirmed: 0, unconfirmed: [], userID: id, already: true)
            }
            // Random, so it says nothing about the person; stored, so it is the same everywhere and every time.
            let pseudonym = "erased-" + DocumentCipher.newKeyID()
            try db.query("UPDATE users SET name = $2, display_name = NULL, erased_at = now() WHERE id = $1", [id, pseudonym])
            // A user of signed tokens is forgotten by its app too: its next token makes a new user.
            try db.query("DELETE FROM identities WHERE user_id = $1", [id])
            let snapshots = try db.query("""
                DELETE FROM snapshots WHERE doc IN (SELECT doc FROM document_editors WHERE user_id = $1) RETURNING 1
                """, [id]).count
            // Before the tokens' revocation, whose trigger notifies `user:<id>`: notices arrive in
            // the order sent, and a server that read that one first ended the person's
            // connections under their real name (what their leaving told others).
            try db.query("SELECT pg_notify('rewind_access', 'erased:' || $1 || ':' || $2)", [id, pseudonym])
            let tokens = try db.query("UPDATE tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL RETURNING 1", [id]).count
            try db.query("COMMIT")
            return Erased(pseudonym: pseudonym, tokens: tokens, snapshots: snapshots, confirmed: 0, unconfirmed: [], userID: id)
        } catch {
            _ = try? db.query("ROLLBACK")
            throw error
        }
    }

    /// The same erasure in each shard's copy of the account (schema/028):
    /// the name replaced by the pseudonym, snapshots of the documents they
    /// edited there dropped. Answers the snapshots dropped per shard, and
    /// the shards it could not reach (their copy keeps the name until run again).
    public static func onShards(userID: String, pseudonym: String, catalog: Database)
        throws(RewindError) -> (snapshots: [String: Int], unreachable: [String: String])
    {
        var snapshots: [String: Int] = [:], unreachable: [String: String] = [:]
        for shard in try ShardCatalog.shards(catalog) where shard.name != ShardCatalog.home {
            do throws(RewindError) {
                let db = try Database(shard.conninfo)
                try db.query("BEGIN")
                try db.query("UPDATE users SET name = $2, display_name = NULL, erased_at = coalesce(erased_at, now()) WHERE id = $1",
                              [userID, pseudonym])
                snapshots[shard.name] = try db.query("""
                    DELETE FROM snapshots WHERE doc IN (SELECT doc FROM document_editors WHERE user_id = $1) RETURNING 1
                    """, [userID]).count
                try db.query("COMMIT")
            } catch { unreachable[shard.name] = error.message }
        }
        return (snapshots, unreachable)
    }
}
