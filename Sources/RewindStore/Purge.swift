import RewindCore

/// `rewind admin purge` (SPEC section 15): a document's content erased for
/// good without touching its log. Its wrapped data key goes, and with it
/// every way to open the sealed ops and inverses; its snapshots (sealed
/// too), its editors and its title go as well. The log rows stay, and
/// `verify` still checks their chain. A document not yet deleted is deleted
/// in the same transaction (every instance closes it at once).
public enum Purge {
    public struct Purged: Sendable {
        public var doc: String
        /// It had not been deleted by its owner.
        public var wasLive: Bool
    }

    public static func document(_ doc: String, db: Database) throws(RewindError) -> Purged {
        try db.query("BEGIN")
        do throws(RewindError) {
            let r = try db.query("SELECT deleted_at IS NULL, purged_at IS NOT NULL FROM documents WHERE id = $1 FOR UPDATE", [doc])
            guard r.count == 1 else { throw RewindError.notFound("no document \"\(doc)\"") }
            guard r[0, 1] == "f" else { throw RewindError.conflict("\(doc) is already purged") }
            try db.query("UPDATE documents SET deleted_at = coalesce(deleted_at, now()), purged_at = now(), title = NULL WHERE id = $1", [doc])
            try db.query("DELETE FROM document_keys WHERE doc = $1", [doc])
            try db.query("DELETE FROM snapshots WHERE doc = $1", [doc])
            try db.query("DELETE FROM document_editors WHERE doc = $1", [doc])
            try db.query("DELETE FROM prompts WHERE doc = $1", [doc])  // where its conflicts were, by node
            try db.query("COMMIT")
            return Purged(doc: doc, wasLive: r[0, 0] == "t")
        } catch {
            _ = try? db.query("ROLLBACK")
            throw error
        }
    }

    /// Documents deleted more than `days` ago and not purged yet, oldest first.
    public static func expired(days: Int, db: Database) throws(RewindError) -> [String] {
        try db.query("""
            SELECT id FROM documents WHERE purged_at IS NULL AND deleted_at < now() - make_interval(days => $1::int)
            ORDER BY deleted_at, id
            """, [String(days)]).values.compactMap { $0[0] }
    }
}
