import RewindCore

/// A user's documents as their home page lists them (`list_docs`), the ones
/// they deleted and may bring back (`list_deleted`), and a title changed
/// (`rename`). Each is one indexed query: the documents a user owns
/// (`documents_owner`, schema/027) and the ones shared with them
/// (`access_user`), each with its latest editor from `document_editors`;
/// with shards, the same on each, merged (`onEveryShard`).
extension EventStore {
    /// One row of `list_docs`.
    public struct ListedDocument: Sendable, Equatable {
        public var doc: String
        public var title: String?
        /// The caller's role: "owner", "editor" or "viewer".
        public var role: String
        /// The owner's user name.
        public var owner: String
        /// When it was last edited (by anyone; to within 5 seconds), else created: microseconds since 1970, and ISO 8601.
        public var editedMicros: Int64
        public var edited: String
        /// Who edited it last (nil: nobody yet), by user name and the name shown for them.
        public var lastEditor: (user: String, name: String)?

        public static func == (a: Self, b: Self) -> Bool {
            a.doc == b.doc && a.title == b.title && a.role == b.role && a.owner == b.owner && a.editedMicros == b.editedMicros
                && a.lastEditor?.user == b.lastEditor?.user
        }
    }

    /// Where a page of `list_docs` resumes: after (edited, doc) in the list's order.
    public struct ListCursor: Sendable, Equatable {
        public var editedMicros: Int64
        public var doc: String
        public init(editedMicros: Int64, doc: String) {
            self.editedMicros = editedMicros
            self.doc = doc
        }
    }

    static let iso = "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'"

    /// Newest edit first, then by id; `$2` rows after the cursor `($3, $4)`.
    static let listDocumentsSQL = """
        WITH mine AS (
            SELECT d.id, d.title, d.owner, 'owner' AS role, d.created_at FROM documents d
            WHERE d.owner = $1 AND d.deleted_at IS NULL
            UNION ALL
            SELECT d.id, d.title, d.owner, a.role, d.created_at FROM access a JOIN documents d ON d.id = a.doc
            WHERE a.user_id = $1 AND d.deleted_at IS NULL AND d.owner <> $1
        ), dated AS (
            SELECT m.*, coalesce(le.last_edit, m.created_at) AS edited, le.user_id AS editor FROM mine m
            LEFT JOIN LATERAL (SELECT e.user_id, e.last_edit FROM document_editors e
                               WHERE e.doc = m.id ORDER BY e.last_edit DESC, e.user_id LIMIT 1) le ON true
        ), keyed AS (
            SELECT dated.*, (extract(epoch FROM edited) * 1000000)::bigint AS micros FROM dated
        )
        SELECT k.id, k.title, k.role, o.name, k.micros, to_char(k.edited AT TIME ZONE 'UTC', \(iso)),
               u.name, coalesce(u.display_name, u.name)
        FROM keyed k JOIN users o ON o.id = k.owner LEFT JOIN users u ON u.id = k.editor
        WHERE $3::bigint IS NULL OR k.micros < $3::bigint OR (k.micros = $3::bigint AND k.id > $4)
        ORDER BY k.micros DESC, k.id
        LIMIT $2
        """

    /// Up to `limit` of the documents `user` owns or has a role on (not
    /// deleted), newest edit first, after `cursor`: each shard's first
    /// `limit`, merged. `missed`: shards not reached, whose documents the page lacks.
    public func listDocuments(user: Int64, limit: Int, after cursor: ListCursor?,
                              _ done: @escaping (Result<(docs: [ListedDocument], missed: [String]), RewindError>) -> Void)
    {
        let s = PipelineConnection.Statement(Self.listDocumentsSQL, [String(user), String(limit), cursor.map { String($0.editedMicros) }, cursor?.doc])
        onEveryShard(s, decode: { (rows: Rows) -> [ListedDocument] in
            (0..<rows.count).compactMap { i in
                guard let doc = rows[i, 0], let role = rows[i, 2], let owner = rows[i, 3], let micros = rows.int(i, 4) else { return nil }
                let editor = rows[i, 6].map { (user: $0, name: rows[i, 7] ?? $0) }
                return ListedDocument(doc: doc, title: rows[i, 1], role: role, owner: owner, editedMicros: micros,
                                      edited: rows[i, 5] ?? "", lastEditor: editor)
            }
        }) { result in
            done(result.map { all in
                let merged = all.items.sorted { ($0.editedMicros, $1.doc) > ($1.editedMicros, $0.doc) }
                return (Array(merged.prefix(limit)), all.missed)
            })
        }
    }

    /// One row of `list_deleted`.
    public struct DeletedDocument: Sendable {
        public var doc: String
        public var title: String?
        /// ISO 8601: when it was deleted, and when it can no longer be brought back.
        public var deleted: String
        public var restorableUntil: String
    }

    /// The documents `owner` deleted that can still be brought back (within
    /// `retentionDays`, not purged), most recently deleted first.
    public func deletedDocuments(owner: Int64, retentionDays: Int, limit: Int,
                                 _ done: @escaping (Result<[DeletedDocument], RewindError>) -> Void)
    {
        let s = PipelineConnection.Statement("""
            SELECT id, title, to_char(deleted_at AT TIME ZONE 'UTC', \(Self.iso)),
                   to_char((deleted_at + make_interval(days => $2::int)) AT TIME ZONE 'UTC', \(Self.iso))
            FROM documents
            WHERE owner = $1 AND deleted_at IS NOT NULL AND purged_at IS NULL AND deleted_at > now() - make_interval(days => $2::int)
            ORDER BY deleted_at DESC, id LIMIT $3
            """, [String(owner), String(retentionDays), String(limit)])
        onEveryShard(s, decode: { (rows: Rows) -> [DeletedDocument] in
            (0..<rows.count).compactMap { i in
                guard let doc = rows[i, 0], let deleted = rows[i, 2], let until = rows[i, 3] else { return nil }
                return DeletedDocument(doc: doc, title: rows[i, 1], deleted: deleted, restorableUntil: until)
            }
        }) { result in
            // The times are ISO 8601 in UTC, all of one width: as strings they sort as times.
            done(result.map { all in Array(all.items.sorted { ($0.deleted, $1.doc) > ($1.deleted, $0.doc) }.prefix(limit)) })
        }
    }

    /// Sets `doc`'s title (nil: none). False when there is no such document
    /// (deleted ones included): the caller's role was checked before.
    public func rename(_ doc: String, title: String?, _ done: @escaping (Result<Bool, RewindError>) -> Void) {
        query(doc: doc, .init("UPDATE documents SET title = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING id", [doc, title])) { result in
            done(result.map { $0.count == 1 })
        }
    }

    /// `doc`'s title (nil: none, or no such document).
    public func title(of doc: String, _ done: @escaping (Result<String?, RewindError>) -> Void) {
        query(doc: doc, .init("SELECT title FROM documents WHERE id = $1 AND deleted_at IS NULL", [doc])) { result in
            done(result.map { $0.count == 1 ? $0[0, 0] : nil })
        }
    }
}
