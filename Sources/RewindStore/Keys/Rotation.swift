import RewindCore

extension DocumentKeys {
    /// Re-wraps every document's data key under `new`, in one transaction,
    /// and makes `new` the database's master key; returns how many keys.
    /// Copies of keys wrapped under the old master key (old WAL, backups)
    /// are useless once the old key file is destroyed — purged documents'
    /// keys among them.
    public func rotate(to new: MasterKey, db: Database) throws(RewindError) -> Int {
        guard new.id != master.id else { throw .conflict("the new master key is the current one (id \(master.id))") }
        try db.query("BEGIN")
        do throws(RewindError) {
            let current = try db.query("SELECT key_id FROM master_key FOR UPDATE")
            guard current.count == 1, let id = current[0, 0] else { throw RewindError(.conflict, "this database has no master key yet: nothing to rotate") }
            guard id == master.id else { throw Self.wrongMaster(path: master.path, have: master.id, database: id) }
            let rows = try db.query("SELECT doc, key_id, master_key_id, wrapped FROM document_keys ORDER BY doc FOR UPDATE")
            var doc = BinaryArray(.text), wrapped = BinaryArray(.bytea)
            for r in rows.values {
                guard let d = r[0], let keyID = r[1], let masterID = r[2], let w = r[3].flatMap(LogRows.bytea) else {
                    throw RewindError(.internal, "a malformed row in document_keys")
                }
                guard masterID == master.id else {
                    throw RewindError(.internal, "the key of \(d) is wrapped with master key \(masterID), not the database's \(master.id)")
                }
                doc.append(d)
                wrapped.append(bytes: new.wrap(try master.unwrap(w, doc: d, keyID: keyID), doc: d, keyID: keyID))
            }
            try db.query(.init("""
                UPDATE document_keys k SET wrapped = n.wrapped, master_key_id = $3
                FROM unnest($1::text[], $2::bytea[]) AS n(doc, wrapped) WHERE k.doc = n.doc
                """, values: [.binary(doc.finish()), .binary(wrapped.finish()), .text(new.id)]))
            try db.query("UPDATE master_key SET key_id = $1, set_at = now()", [new.id])
            try db.query("COMMIT")
            master = new
            return rows.count
        } catch {
            _ = try? db.query("ROLLBACK")
            throw error
        }
    }
}
