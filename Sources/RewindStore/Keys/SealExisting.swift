import RewindCore

/// Moving a database's content forward, as schema 008 moved entries into
/// `log` and re-chained them: from before encryption (schema 014), every
/// document's plain ops and inverses sealed with its new key; from before
/// entries were bound to their place (`DocumentCipher`), every entry sealed
/// bound to its document only opened and sealed again bound to its entry.
/// Either way the document's chain is computed again over the new text. It
/// needs the master key, so it runs in Swift from `rewind admin migrate`,
/// not in a migration file.
///
/// One transaction per document, with no server running (`liveInstances`):
/// a server holding the document would append after a head hash that is
/// gone. The append-only trigger is switched off and on again inside it (no
/// other session ever sees it off). Transaction fingerprints of plain
/// entries (`tx_digest`, an unkeyed hash of the content) are replaced by a
/// keyed one of themselves; sealed entries' are keyed already and stay.
/// Snapshots are dropped: each names its entry's hash inside its sealed
/// text, and the hashes change (servers take new ones as documents are
/// edited; until then a document opens by replaying its log). Anchors taken
/// before are superseded: take new ones.
///
/// Binding makes no move made before it visible: an entry is bound where it
/// lies. Check the log first (`rewind admin verify --anchors`) if that matters.
public enum SealExisting {
    /// Documents whose log or snapshots still hold plain content.
    public static func documents(db: Database) throws(RewindError) -> [String] {
        try db.query("""
            SELECT doc FROM log WHERE entry = 'event' AND left(ops, 1) <> '~'
            UNION SELECT doc FROM snapshots WHERE left(state, 1) <> '~'
            ORDER BY 1
            """).values.compactMap { $0[0] }
    }

    /// Documents (not purged: their content opens for no one) with entries
    /// sealed unbound, `~<key id>:…` rather than `~<key id>.2:…` — told by
    /// the text before the first colon (key ids are hex), read from the
    /// first bytes only (`substr` fetches a slice of a long value).
    public static func unbound(db: Database) throws(RewindError) -> [String] {
        try db.query("""
            SELECT DISTINCT l.doc FROM log l JOIN documents d ON d.id = l.doc
            WHERE l.entry = 'event' AND d.purged_at IS NULL
              AND left(l.ops, 1) = '~' AND split_part(substr(l.ops, 1, 64), ':', 1) NOT LIKE '%.2'
            ORDER BY 1
            """).values.compactMap { $0[0] }
    }

    /// Server instances running on this database now: each holds its
    /// liveness lock (`Notifications`) while it serves.
    public static func liveInstances(db: Database) throws(RewindError) -> Int {
        Int(try db.query("""
            SELECT count(*) FROM pg_locks
            WHERE locktype = 'advisory' AND objsubid = 2 AND classid = $1::bigint::oid AND granted
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """, [String(Notifications.lockClass)]).int(0, 0) ?? 0)
    }

    /// What `document` rewrote: entries re-chained, plain ones sealed, unbound ones bound.
    public struct Rewritten: Sendable, Equatable {
        public var entries: Int64 = 0
        public var sealed: Int64 = 0
        public var bound: Int64 = 0
    }

    /// Seals the plain entries of one document and binds its unbound ones, and re-chains it.
    public static func document(_ doc: String, keys: DocumentKeys, db: Database) throws(RewindError) -> Rewritten {
        try db.query("BEGIN")
        do throws(RewindError) {
            try db.query("SELECT 1 FROM documents WHERE id = $1 FOR UPDATE", [doc])
            guard case let .key(cipher) = try keys.lookup(doc: doc, db: db) else { throw RewindError.notFound("no document \"\(doc)\" (or it was purged)") }
            try db.query("ALTER TABLE log DISABLE TRIGGER log_append_only")
            var seq: Int64 = 0, previous: [UInt8] = [], previousStored: [UInt8] = [], rewritten = Rewritten()
            while true {
                let rows = try LogRows.decodeStored(doc: doc, try db.query(LogRows.stored(doc: doc, afterSeq: seq, toSeq: .max, limit: 5_000)))
                guard let last = rows.last else { break }
                var seqs = BinaryArray(.int8), ops = BinaryArray(.text), inverse = BinaryArray(.text)
                var digests = BinaryArray(.text), hashes = BinaryArray(.bytea)
                for var r in rows {
                    guard r.chained(after: previousStored) == r.hash else {
                        throw RewindError(.internal, "the hash chain of \(doc) breaks at entry \(r.seq) before it is sealed again: run `rewind admin verify \(doc)` and restore it first")
                    }
                    previousStored = r.hash
                    if let o = r.ops, let i = r.inverse {
                        let plain = !DocumentCipher.isSealed(o)
                        do { (r.ops, r.inverse) = try cipher.bound(ops: o, inverse: i, seq: r.seq, id: r.id) } catch {
                            throw RewindError(error.code, "\(error.message): run `rewind admin verify \(doc)` and restore it first")
                        }
                        if plain {
                            rewritten.sealed += 1
                            if r.entry == "event", let d = r.txDigest { r.txDigest = cipher.fingerprint(Array(("sealed " + d).utf8)) }
                        } else if r.ops != o {
                            rewritten.bound += 1
                        }
                    }
                    r.hash = r.chained(after: previous)
                    previous = r.hash
                    seqs.append(r.seq); ops.append(r.ops); inverse.append(r.inverse); digests.append(r.txDigest); hashes.append(bytes: r.hash)
                }
                try db.query(.init("""
                    UPDATE log l SET ops = n.ops, inverse = n.inverse, tx_digest = n.tx_digest, hash = n.hash
                    FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::bytea[]) AS n(seq, ops, inverse, tx_digest, hash)
                    WHERE l.doc = $1 AND l.seq = n.seq
                    """, values: [.text(doc), .binary(seqs.finish()), .binary(ops.finish()), .binary(inverse.finish()), .binary(digests.finish()),
                                  .binary(hashes.finish())]))
                rewritten.entries += Int64(rows.count)
                seq = last.seq
            }
            try db.query("ALTER TABLE log ENABLE TRIGGER log_append_only")
            try db.query("UPDATE documents SET head_hash = $2 WHERE id = $1", [doc, "\\x" + Hex.string(previous)])
            try db.query("DELETE FROM snapshots WHERE doc = $1", [doc])
            try db.query("COMMIT")
            return rewritten
        } catch {
            _ = try? db.query("ROLLBACK")
            throw error
        }
    }

    /// Rewrites the tables' files so no old row version (plain text) stays in
    /// them, and checkpoints. WAL already written and backups are not touched.
    public static func compact(db: Database) throws(RewindError) {
        try db.query("VACUUM FULL log")
        try db.query("VACUUM FULL snapshots")
        try db.query("CHECKPOINT")
    }
}
