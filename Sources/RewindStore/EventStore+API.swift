import RewindCore

/// What the server API (`--api`) reads and writes besides what terminals do:
/// its keys, a document's metadata, users by name, undeleting.
extension EventStore {
    /// Whether the log's positions are ahead of this cluster's transaction ids (a restore: `rewind admin migrate` raises them).
    public func logPositionsNeedRepair(_ done: @escaping (Result<Bool, RewindError>) -> Void) {
        query(.init(Migrations.positionsBehindSQL, [])) { result in done(result.map { $0.count == 1 && $0[0, 0] == "t" }) }
    }

    /// The key `token` is, if it authenticates (schema/020).
    public func apiKey(_ token: String, _ done: @escaping (Result<APIKeys.Key?, RewindError>) -> Void) {
        query(.init(APIKeys.lookupSQL, [token])) { result in done(result.map(APIKeys.decode)) }
    }

    /// A document's metadata, as the API shows it.
    public struct DocumentInfo: Sendable {
        public var doc: String
        public var head: Int64
        public var title: String?
        public var owner: String
        public var ownerID: Int64
        /// ISO 8601 (UTC).
        public var created: String
        public var deleted: String?
        public var purged: Bool
        /// Everyone else with a role, by name.
        public var members: [(user: String, role: String)]
    }

    /// `doc`'s metadata (nil: no such document, deleted or not).
    public func documentInfo(_ doc: String, _ done: @escaping (Result<DocumentInfo?, RewindError>) -> Void) {
        let iso = "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'"
        query(doc: doc, .init("""
            SELECT d.head, d.title, u.name, d.owner, to_char(d.created_at AT TIME ZONE 'UTC', \(iso)),
                   to_char(d.deleted_at AT TIME ZONE 'UTC', \(iso)), d.purged_at IS NOT NULL,
                   (SELECT json_agg(json_build_array(m.name, a.role) ORDER BY m.name) FROM access a JOIN users m ON m.id = a.user_id WHERE a.doc = d.id)
            FROM documents d JOIN users u ON u.id = d.owner WHERE d.id = $1
            """, [doc])) { result in
            done(result.map { rows in
                guard rows.count == 1, let head = rows.int(0, 0), let owner = rows[0, 2], let ownerID = rows.int(0, 3) else { return nil }
                // [[name, role], …]: names may hold any character (a token's `sub`), so no separator is safe but JSON.
                let pairs = rows[0, 7].flatMap { try? JSONParser.parse($0) }?.arrayValue ?? []
                let members = pairs.compactMap { p -> (user: String, role: String)? in
                    guard let a = p.arrayValue, a.count == 2, let u = a[0].stringValue, let r = a[1].stringValue else { return nil }
                    return (user: u, role: r)
                }
                return DocumentInfo(doc: doc, head: head, title: rows[0, 1], owner: owner, ownerID: ownerID, created: rows[0, 4] ?? "",
                                    deleted: rows[0, 5], purged: rows[0, 6] == "t", members: members)
            })
        }
    }

    /// The user named `name` (nil: none; an erased user keeps only its pseudonym), and the name shown for it.
    public func user(named name: String, _ done: @escaping (Result<(id: Int64, name: String, displayName: String?)?, RewindError>) -> Void) {
        query(.init("SELECT id, name, display_name FROM users WHERE name = $1", [name])) { result in
            done(result.map { rows in
                guard rows.count == 1, let id = rows.int(0, 0), let n = rows[0, 1] else { return nil }
                return (id: id, name: n, displayName: rows[0, 2])
            })
        }
    }

    public enum Undeleted: Sendable { case undeleted, notFound, notDeleted, purged, pastRetention }

    /// Brings back `doc`, deleted at most `retentionDays` ago and not purged (its roles' notice tells every instance).
    /// With `owner`, only a document that user owns (`undelete_doc`; any other is `notFound`).
    public func undelete(_ doc: String, owner: Int64? = nil, retentionDays: Int, _ done: @escaping (Result<Undeleted, RewindError>) -> Void) {
        query(doc: doc, .init("""
            WITH d AS (SELECT id, deleted_at, purged_at FROM documents WHERE id = $1 AND ($3::bigint IS NULL OR owner = $3::bigint) FOR UPDATE),
            u AS (UPDATE documents SET deleted_at = NULL FROM d
                  WHERE documents.id = d.id AND d.deleted_at IS NOT NULL AND d.purged_at IS NULL
                    AND d.deleted_at > now() - make_interval(days => $2::int) RETURNING 1)
            SELECT d.deleted_at IS NOT NULL, d.purged_at IS NOT NULL, (SELECT count(*) FROM u) FROM d
            """, [doc, String(retentionDays), owner.map { String($0) }])) { result in
            done(result.map { rows in
                guard rows.count == 1 else { return .notFound }
                if rows[0, 2] == "1" { return .undeleted }
                if rows[0, 0] != "t" { return .notDeleted }
                return rows[0, 1] == "t" ? .purged : .pastRetention
            })
        }
    }
}
