import RewindCore

/// Documents' data keys (SPEC section 15): one per document, created the
/// first time anyone needs it, stored only wrapped by the master key
/// (`document_keys`), and destroyed by a purge. The server keeps the
/// unwrapped keys of its loaded documents here; the admin commands look a
/// key up once per command.
public final class DocumentKeys {
    public internal(set) var master: MasterKey
    private var ciphers: [String: DocumentCipher] = [:]

    public init(master: MasterKey) { self.master = master }

    /// What looking a document's key up found.
    public enum Lookup {
        case key(DocumentCipher)
        /// Purged: its key is gone, and with it its content.
        case purged
        case noDocument
    }

    /// The key of a loaded document, if it was looked up.
    public func cached(_ doc: String) -> DocumentCipher? { ciphers[doc] }

    /// Forgets a document's key (it was unloaded, deleted or purged).
    public func forget(_ doc: String) { ciphers[doc] = nil }

    // MARK: SQL

    /// Claims the database for a master key the first time one is used with
    /// it, and answers the key id the database's data keys are wrapped with.
    static let claimMasterSQL = """
        WITH ins AS (INSERT INTO master_key (key_id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING key_id)
        SELECT key_id FROM ins UNION ALL SELECT key_id FROM master_key
        """

    /// The key of `$1`, created (as `$2`, wrapped `$3`) when it has none and
    /// is not purged, and only while the database's master key is still
    /// `$4` (never a key wrapped with a master key the database has left).
    /// One row: the key's id, its master key's id and the wrapped key (null
    /// without one), the database's master key id, and whether the
    /// document is purged (null: no such document).
    static let fetchSQL = """
        WITH d AS (
            SELECT id FROM documents WHERE id = $1 AND purged_at IS NULL
              AND EXISTS (SELECT 1 FROM master_key WHERE key_id = $4)
        ), ins AS (
            INSERT INTO document_keys (doc, key_id, master_key_id, wrapped)
            SELECT id, $2, $4, decode($3, 'hex') FROM d
            ON CONFLICT (doc) DO NOTHING
            RETURNING key_id, master_key_id, wrapped
        ), k AS (
            SELECT key_id, master_key_id, wrapped FROM ins
            UNION ALL SELECT key_id, master_key_id, wrapped FROM document_keys WHERE doc = $1
        )
        SELECT k.key_id, k.master_key_id, k.wrapped, (SELECT key_id FROM master_key),
               (SELECT purged_at IS NOT NULL FROM documents WHERE id = $1)
        FROM (SELECT 1) one LEFT JOIN k ON true LIMIT 1
        """

    func fetchStatement(doc: String) -> PipelineConnection.Statement {
        let keyID = DocumentCipher.newKeyID()
        let wrapped = master.wrap(DocumentCipher.newKey(), doc: doc, keyID: keyID)
        return .init(Self.fetchSQL, [doc, keyID, Hex.string(wrapped), master.id])
    }

    /// What the answer to `fetchStatement` means; nil: ask again (another
    /// writer created the key between this statement's snapshot and its insert).
    func lookup(doc: String, _ rows: Rows) throws(RewindError) -> Lookup? {
        guard rows.count == 1 else { throw RewindError(.internal, "the key lookup of \(doc) answered \(rows.count) rows") }
        if let keyID = rows[0, 0], let masterID = rows[0, 1], let wrapped = rows[0, 2].flatMap(LogRows.bytea) {
            guard masterID == master.id else { try reread(databaseKey: masterID); return nil }
            let cipher = DocumentCipher(doc: doc, keyID: keyID, key: try master.unwrap(wrapped, doc: doc, keyID: keyID))
            ciphers[doc] = cipher
            return .key(cipher)
        }
        switch rows[0, 4] {
        case nil: return .noDocument
        case "t"?: return .purged
        default:
            if let databaseKey = rows[0, 3], databaseKey != master.id { try reread(databaseKey: databaseKey) }
            return nil
        }
    }

    /// A master key id other than ours in the database: the key was rotated
    /// (`rewind admin rotate-master-key`) and its file replaced in place —
    /// read again, and the caller asks again — or this is the wrong file.
    private func reread(databaseKey: String) throws(RewindError) {
        guard let fresh = try? MasterKey.read(master.path), fresh.id == databaseKey else {
            throw Self.wrongMaster(path: master.path, have: master.id, database: databaseKey)
        }
        master = fresh
    }

    public static func wrongMaster(path: String, have: String, database: String) -> RewindError {
        RewindError(.forbidden, "the master key in \(path) (id \(have)) is not this database's (id \(database)): give the key file the database was set up or last rotated with")
    }

    // MARK: Blocking (admin commands)

    /// Claims the database for this master key (on first use), or refuses a key that is not the database's.
    public func claimMaster(_ db: Database) throws(RewindError) {
        if let refusal = claimAnswered(try db.query(Self.claimMasterSQL, [master.id])) { throw refusal }
    }

    /// What the answer to `claimMasterSQL` means: nil when the database's key is ours.
    func claimAnswered(_ rows: Rows) -> RewindError? {
        guard let id = rows[0, 0] else { return RewindError(.internal, "no master key row") }
        return id == master.id ? nil : Self.wrongMaster(path: master.path, have: master.id, database: id)
    }

    /// The key of `doc` if it has one, read only (nil: it never had content
    /// sealed — no key is made, so a read-only transaction can ask).
    public func existing(doc: String, db: Database) throws(RewindError) -> DocumentCipher? {
        if let c = ciphers[doc] { return c }
        let r = try db.query("SELECT key_id, master_key_id, wrapped FROM document_keys WHERE doc = $1", [doc])
        guard r.count == 1, let keyID = r[0, 0], let masterID = r[0, 1], let wrapped = r[0, 2].flatMap(LogRows.bytea) else { return nil }
        if masterID != master.id { try reread(databaseKey: masterID) }
        let cipher = DocumentCipher(doc: doc, keyID: keyID, key: try master.unwrap(wrapped, doc: doc, keyID: keyID))
        ciphers[doc] = cipher
        return cipher
    }

    /// The key of `doc` (created if it has none), on a blocking connection.
    public func lookup(doc: String, db: Database) throws(RewindError) -> Lookup {
        for _ in 0..<3 {
            if let found = try lookup(doc: doc, try db.query(fetchStatement(doc: doc))) { return found }
        }
        throw RewindError(.unavailable, "the key of \(doc) could not be read: try again")
    }
}
