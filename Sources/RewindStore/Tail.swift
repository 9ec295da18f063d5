import RewindCore

/// `rewind admin tail`: the log read as it grows. The CLI listens on
/// `rewind_log` (each notice names a document and its new head, see
/// schema/009_log_notify.sql and 026) and reads the entries after what it printed.
public enum Tail {
    /// An entry as `tail` shows it: the row, its user's name, its ops parsed.
    public struct Line: Sendable {
        public var row: LogRow
        public var user: String
        public var ops: JSON?

        /// The JSON line of `--json`: every column (ops, inverse and meta as
        /// JSON, not text), the time in milliseconds, and the user's name.
        public var json: JSON {
            func text(_ s: String?) -> JSON { s.map { .string($0) } ?? .null }
            func parsed(_ s: String?) -> JSON { s.flatMap { try? JSONParser.parse($0, maxDepth: Limits.unbounded.maxJSONDepth) } ?? .null }
            return .obj([("doc", .string(row.doc)), ("seq", .int(row.seq)), ("version", .int(row.version)), ("entry", .string(row.entry)),
                         ("time_ms", .int(row.time)), ("user", .string(user)), ("user_id", .int(row.userID)), ("client", .string(row.client)),
                         ("kind", .string(row.kind)), ("grp", text(row.group)), ("action", text(row.action)), ("tx", text(row.tx)),
                         ("base", row.base.map { .int($0) } ?? .null), ("ops", ops ?? .null), ("inverse", parsed(row.inverse)),
                         ("refers", text(row.refers)), ("meta", parsed(row.meta)), ("id", .string(row.id)),
                         ("hash", .string(Hex.string(row.hash)))])
        }
    }

    /// Each document's head entry (`seq`): the named ones (`not_found` for
    /// one that does not exist), or every document when none is named.
    public static func heads(_ docs: [String], db: Database) throws(RewindError) -> [String: Int64] {
        var heads: [String: Int64] = [:]
        if docs.isEmpty {
            for r in try db.query("SELECT id, seq FROM documents").values { if let d = r[0] { heads[d] = r[1].flatMap { Int64($0) } ?? 0 } }
            return heads
        }
        for d in docs {
            let r = try db.query("SELECT seq FROM documents WHERE id = $1", [d])
            guard r.count == 1, let seq = r.int(0, 0) else { throw .notFound("no document \"\(d)\"") }
            heads[d] = seq
        }
        return heads
    }

    /// The last entry of `doc` at or before `version` (0: none): `--since` starts after it.
    public static func seq(_ doc: String, atVersion version: Int64, db: Database) throws(RewindError) -> Int64 {
        try db.query("SELECT coalesce(max(seq), 0) FROM log WHERE doc = $1 AND version <= $2", [doc, String(version)]).int(0, 0) ?? 0
    }

    /// Entries of `doc` after `seq`, in order, at most `limit`.
    /// `cipher` opens sealed ops and inverse; without it they are shown as stored.
    public static func entries(_ doc: String, after seq: Int64, limit: Int = 1_000, cipher: DocumentCipher?,
                               db: Database) throws(RewindError) -> [Line] {
        let rows = try db.query("""
            SELECT l.seq, l.version, l.entry, l.id, l.user_id, u.name, l.client, l.kind, l.grp, l.action, l.tx, l.tx_digest, l.base,
                   l.ops, l.inverse, l.refers, l.meta, (extract(epoch FROM l.time) * 1000)::bigint, l.hash
            FROM log l JOIN users u ON u.id = l.user_id WHERE l.doc = $1 AND l.seq > $2 ORDER BY l.seq LIMIT $3
            """, [doc, String(seq), String(limit)])
        return try rows.values.map { (r: [String?]) throws(RewindError) -> Line in
            guard let s = r[0].flatMap({ Int64($0) }), let v = r[1].flatMap({ Int64($0) }), let entry = r[2], let id = r[3],
                  let uid = r[4].flatMap({ Int64($0) }), let name = r[5], let client = r[6], let kind = r[7],
                  let time = r[17].flatMap({ Int64($0) }), let hash = r[18].flatMap(LogRows.bytea)
            else { throw RewindError(.internal, "malformed log row in \(doc): run `rewind admin verify \(doc)`") }
            var (ops, inverse) = (r[13], r[14])
            if let o = ops, let i = inverse, cipher != nil || !DocumentCipher.isSealed(o) {
                (ops, inverse) = try DocumentCipher.plain(ops: o, inverse: i, cipher: cipher, doc: doc, seq: s, id: id)
            }
            let row = LogRow(doc: doc, seq: s, version: v, entry: entry, id: id, userID: uid, client: client, kind: kind, group: r[8],
                             action: r[9], tx: r[10], txDigest: r[11], base: r[12].flatMap { Int64($0) }, ops: ops,
                             inverse: inverse, refers: r[15], meta: r[16], time: time, hash: hash)
            return Line(row: row, user: name, ops: row.ops.flatMap { try? JSONParser.parse($0, maxDepth: Limits.unbounded.maxJSONDepth) })
        }
    }
}
