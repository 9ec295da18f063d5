import RewindCore

/// The documents a user edited most recently, for quick actions: read from
/// `document_editors` (kept by the statements that append, schema/010 and 025), so a `hello`
/// costs one indexed query, not a scan of the log. Documents the user can no
/// longer read are left out.
extension EventStore {
    static let recentDocumentsSQL = """
        SELECT e.doc, d.title, o.user_id, u.name, (extract(epoch FROM e.last_edit) * 1000000)::bigint
        FROM document_editors e
        JOIN documents d ON d.id = e.doc
        LEFT JOIN LATERAL (
            SELECT x.user_id FROM document_editors x
            WHERE x.doc = e.doc AND x.user_id <> e.user_id ORDER BY x.last_edit DESC LIMIT 1
        ) o ON true
        LEFT JOIN users u ON u.id = o.user_id
        WHERE e.user_id = $1 AND d.deleted_at IS NULL
          AND (d.owner = $1 OR EXISTS (SELECT 1 FROM access a WHERE a.doc = e.doc AND a.user_id = $1))
        ORDER BY e.last_edit DESC, e.doc
        LIMIT $2
        """

    /// With shards, each shard's most recent, merged; a shard not reached is left out (quick actions are a convenience).
    public func recentDocuments(user: Int64, limit: Int, _ done: @escaping (Result<[RecentDocument], RewindError>) -> Void) {
        onEveryShard(.init(Self.recentDocumentsSQL, [String(user), String(limit)]), decode: { (rows: Rows) -> [(micros: Int64, doc: RecentDocument)] in
            (0..<rows.count).compactMap { i -> (micros: Int64, doc: RecentDocument)? in
                guard let doc = rows[i, 0] else { return nil }
                let other = rows.int(i, 2).flatMap { id in rows[i, 3].map { (id: id, name: $0) } }
                return (rows.int(i, 4) ?? 0, RecentDocument(doc: doc, title: rows[i, 1], lastOtherEditor: other))
            }
        }) { result in
            done(result.map { all in
                Array(all.items.sorted { ($0.micros, $1.doc.doc) > ($1.micros, $0.doc.doc) }.prefix(limit).map(\.doc))
            })
        }
    }
}
