import RewindCore

/// How an admin command reaches a document's content: with its key when
/// the command was given the master key, never for a purged document.
extension DocumentKeys {
    /// The key `doc`'s content is read with (nil without a master key: only
    /// plain text, from before encryption, can then be read). A purged
    /// document is refused: its content is gone for good.
    public static func cipher(for doc: String, keys: DocumentKeys?, db: Database) throws(RewindError) -> DocumentCipher? {
        if let purged = try purgedAt(doc, db: db) { throw Self.purgedError(doc, at: purged) }
        guard let keys else { return nil }
        return try keys.existing(doc: doc, db: db)
    }

    /// When `doc` was purged (ISO 8601, UTC), or nil.
    public static func purgedAt(_ doc: String, db: Database) throws(RewindError) -> String? {
        let r = try db.query("SELECT to_char(purged_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM documents WHERE id = $1", [doc])
        return r.count == 1 ? r[0, 0] : nil
    }

    public static func purgedError(_ doc: String, at: String) -> RewindError {
        RewindError(.notFound, "\(doc) was purged (\(at)): its content is erased for good; `rewind admin verify \(doc)` still checks its log's chain")
    }
}
