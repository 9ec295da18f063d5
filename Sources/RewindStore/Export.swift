import RewindCore

/// `rewind admin export`: documents read out of the log as `LogExport`
/// lines — every stored column, exactly, so that importing them elsewhere
/// and exporting again gives the same bytes.
///
/// A run reads everything in one `REPEATABLE READ` transaction: each
/// document's header and entries come from one snapshot of the database,
/// even while servers keep appending.
public enum Export {
    /// Starts the read-only snapshot every later read of this run sees.
    public static func begin(db: Database) throws(RewindError) {
        try db.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    }

    public static func end(db: Database) throws(RewindError) {
        try db.query("COMMIT")
    }

    /// The header of `doc` up to `version` (nil: its head): the last entry
    /// that counts at most that many events, marks after it included.
    public static func header(_ doc: String, to version: Int64? = nil, db: Database) throws(RewindError) -> LogExport.Header {
        let d = try db.query("""
            SELECT d.title, u.name, (extract(epoch FROM d.created_at) * 1000000)::bigint, d.seq, d.head
            FROM documents d JOIN users u ON u.id = d.owner WHERE d.id = $1
            """, [doc])
        guard d.count == 1, let owner = d[0, 1], let created = d.int(0, 2), let headSeq = d.int(0, 3), let head = d.int(0, 4) else {
            throw .notFound("no document \"\(doc)\"")
        }
        if let version, version < 0 { throw .badRequest("--to must be 0 or more") }
        var stop = headSeq
        if let version, version < head {
            stop = try db.query("SELECT coalesce(max(seq), 0) FROM log WHERE doc = $1 AND version <= $2", [doc, String(version)]).int(0, 0) ?? 0
        }
        var last: (version: Int64, hash: [UInt8]) = (0, [])
        if stop > 0 {
            let r = try db.query("SELECT version, hash FROM log WHERE doc = $1 AND seq = $2", [doc, String(stop)])
            guard r.count == 1, let v = r.int(0, 0), let h = r[0, 1].flatMap(LogRows.bytea) else {
                throw RewindError(.internal, "the log of \(doc) has no entry \(stop), its head says it has: run `rewind admin verify \(doc)`")
            }
            last = (v, h)
        }
        let access = try db.query("""
            SELECT u.name, a.role FROM access a JOIN users u ON u.id = a.user_id WHERE a.doc = $1 ORDER BY u.name
            """, [doc]).values.compactMap { r in r[0].flatMap { n in r[1].map { LogExport.Member(user: n, role: $0) } } }
        let users = try db.query("""
            SELECT u.id, u.name FROM users u
            WHERE u.id IN (SELECT DISTINCT user_id FROM log WHERE doc = $1 AND seq <= $2)
               OR u.id = (SELECT owner FROM documents WHERE id = $1)
               OR u.id IN (SELECT user_id FROM access WHERE doc = $1)
            ORDER BY u.id
            """, [doc, String(stop)]).values.compactMap { r in r[0].flatMap { Int64($0) }.flatMap { id in r[1].map { LogExport.UserName(id: id, name: $0) } } }
        return LogExport.Header(doc: doc, title: d[0, 0], owner: owner, createdMicros: created, access: access, users: users,
                                entries: stop, seq: stop, version: last.version, hash: last.hash)
    }

    /// Entries of `doc` with `afterSeq < seq <= toSeq`, in order, at most `limit`.
    public static func entries(_ doc: String, afterSeq: Int64, toSeq: Int64, limit: Int = 5_000,
                               db: Database) throws(RewindError) -> [LogExport.Entry] {
        let rows = try db.query("""
            SELECT doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse, refers,
                   meta, (extract(epoch FROM time) * 1000000)::bigint, hash
            FROM log WHERE doc = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4
            """, [doc, String(afterSeq), String(toSeq), String(limit)])
        return try rows.values.map { (r: [String?]) throws(RewindError) -> LogExport.Entry in
            guard let d = r[0], let seq = r[1].flatMap({ Int64($0) }), let version = r[2].flatMap({ Int64($0) }), let entry = r[3],
                  let id = r[4], let user = r[5].flatMap({ Int64($0) }), let client = r[6], let kind = r[7],
                  let micros = r[17].flatMap({ Int64($0) }), let hash = r[18].flatMap(LogRows.bytea)
            else { throw RewindError(.internal, "malformed log row in \(doc): run `rewind admin verify \(doc)`") }
            let row = LogRow(doc: d, seq: seq, version: version, entry: entry, id: id, userID: user, client: client, kind: kind,
                             group: r[8], action: r[9], tx: r[10], txDigest: r[11], base: r[12].flatMap { Int64($0) }, ops: r[13],
                             inverse: r[14], refers: r[15], meta: r[16], time: LogExport.millis(micros: micros), hash: hash)
            return LogExport.Entry(row: row, timeMicros: micros)
        }
    }
}

extension Export {
    /// A document's entries as an export writes them: ops and inverses
    /// opened with the document's key, and the file's own hash chain over
    /// those plain columns (what `import` checks the file with). The
    /// stored chain — over the sealed text — is checked as the rows are read.
    /// A document written before encryption (plain text) comes out as stored.
    public struct PlainChain {
        let doc: String
        let cipher: DocumentCipher?
        private var stored: [UInt8] = []
        /// The hash of the last entry given, in the file's chain.
        public private(set) var last: [UInt8] = []

        public init(doc: String, cipher: DocumentCipher?) { self.doc = doc; self.cipher = cipher }

        public mutating func next(_ e: LogExport.Entry) throws(RewindError) -> LogExport.Entry {
            var row = e.row
            guard row.chained(after: stored) == row.hash else {
                throw RewindError(.internal, "the hash chain of \(doc) breaks at entry \(row.seq): run `rewind admin verify \(doc)`")
            }
            stored = row.hash
            if let ops = row.ops, let inverse = row.inverse {
                (row.ops, row.inverse) = try DocumentCipher.plain(ops: ops, inverse: inverse, cipher: cipher, doc: doc, seq: row.seq, id: row.id)
            }
            row.hash = row.chained(after: last)
            last = row.hash
            return LogExport.Entry(row: row, timeMicros: e.timeMicros)
        }
    }
}
