import RewindCore

/// Moving a database from before encryption forward (schema 014): every
/// document's plain ops and inverses sealed with its new key, and its chain
/// computed again over the sealed text — as schema 008 moved entries into
/// `log` and re-chained them. It needs the master key, so it runs in Swift
/// from `rewind admin migrate`, not in a migration file.
///
/// One transaction per document. The append-only trigger is switched off
/// and on again inside it (no other session ever sees it off). Transaction
/// fingerprints (`tx_digest`, an unkeyed hash of the content) are replaced
/// by a keyed one of themselves. Snapshots, derived and unsealed, are
/// dropped. Anchors taken before are superseded: take new ones.
public enum SealExisting {
    /// Documents whose log or snapshots still hold plain content.
    public static func documents(db: Database) throws(RewindError) -> [String] {
        try db.query("""
            SELECT doc FROM log WHERE entry = 'event' AND left(ops, 1) <> '~'
            UNION SELECT doc FROM snapshots WHERE left(state, 1) <> '~'
            ORDER BY 1
            """).values.compactMap { $0[0] }
    }

    /// Seals one document; the number of entries rewritten.
    public static func document(_ doc: String, keys: DocumentKeys, db: Database) throws(RewindError) -> Int64 {
        try db.query("BEGIN")
        do throws(RewindError) {
            try db.query("SELECT 1 FROM documents WHERE id = $1 FOR UPDATE", [doc])
            guard case let .key(cipher) = try keys.lookup(doc: doc, db: db) else { throw RewindError.notFound("no document \"\(doc)\" (or it was purged)") }
            try db.query("ALTER TABLE log DISABLE TRIGGER log_append_only")
            var seq: Int64 = 0, previous: [UInt8] = [], previousStored: [UInt8] = [], rewritten: Int64 = 0
            while true {
                let rows = try LogRows.decodeStored(doc: doc, try db.query(LogRows.stored(doc: doc, afterSeq: seq, toSeq: .max, limit: 5_000)))
                guard let last = rows.last else { break }
                var seqs = BinaryArray(.int8), ops = BinaryArray(.text), inverse = BinaryArray(.text)
                var digests = BinaryArray(.text), hashes = BinaryArray(.bytea)
                for var r in rows {
                    guard r.chained(after: previousStored) == r.hash else {
                        throw RewindError(.internal, "the hash chain of \(doc) breaks at entry \(r.seq) before sealing: run `rewind admin verify \(doc)` and restore it first")
                    }
                    previousStored = r.hash
                    if let o = r.ops, let i = r.inverse { (r.ops, r.inverse) = cipher.sealed(ops: o, inverse: i, seq: r.seq, id: r.id) }
                    if r.entry == "event", let d = r.txDigest { r.txDigest = cipher.fingerprint(Array(("sealed " + d).utf8)) }
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
                rewritten += Int64(rows.count)
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
