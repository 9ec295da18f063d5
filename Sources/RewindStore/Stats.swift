import RewindCore

/// `rewind admin stats`: what the log holds, counted by PostgreSQL.
public enum Stats {
    public struct Report: Sendable {
        /// The document counted, or nil: the whole database.
        public var doc: String?
        public var documents: Int64
        public var events: Int64
        public var marks: Int64
        public var snapshots: Int64
        public var logBytes: Int64
        public var snapshotBytes: Int64
        /// Sizes of one document are sums of its rows' sizes (`pg_column_size`),
        /// without indexes or free space; the whole database's are the tables' own
        /// (`pg_total_relation_size`: heap, TOAST and indexes).
        public var bytesAreEstimate: Bool
        /// The last 14 days (UTC), oldest first, days without events included.
        public var eventsPerDay: [(day: String, events: Int64)]
        /// The users with the most events, at most 10.
        public var topUsers: [(user: String, events: Int64)]

        public var json: JSON {
            .obj([("doc", doc.map { .string($0) } ?? .null), ("documents", .int(documents)), ("events", .int(events)),
                  ("marks", .int(marks)), ("snapshots", .int(snapshots)), ("log_bytes", .int(logBytes)),
                  ("snapshot_bytes", .int(snapshotBytes)), ("bytes_are_estimate", .bool(bytesAreEstimate)),
                  ("events_per_day", .array(eventsPerDay.map { .obj([("day", .string($0.day)), ("events", .int($0.events))]) })),
                  ("top_users", .array(topUsers.map { .obj([("user", .string($0.user)), ("events", .int($0.events))]) }))])
        }
    }

    /// Counts for `doc` (`not_found` if it does not exist), or for the whole database.
    public static func collect(doc: String?, db: Database) throws(RewindError) -> Report {
        // One snapshot for every count, so they agree with each other.
        try db.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        defer { _ = try? db.query("COMMIT") }
        let only = doc == nil ? "" : " AND doc = $1"
        let params: [String?] = doc.map { [$0] } ?? []
        let documents: Int64
        if let doc {
            guard try db.query("SELECT 1 FROM documents WHERE id = $1", [doc]).count == 1 else { throw .notFound("no document \"\(doc)\"") }
            documents = 1
        } else {
            documents = try db.query("SELECT count(*) FROM documents").int(0, 0) ?? 0
        }
        let counts = try db.query("""
            SELECT count(*) FILTER (WHERE entry = 'event'), count(*) FILTER (WHERE entry = 'mark') FROM log WHERE true\(only)
            """, params)
        let snapshots = try db.query("SELECT count(*) FROM snapshots WHERE true\(only)", params).int(0, 0) ?? 0
        let sizes = try doc == nil
            ? db.query("SELECT pg_total_relation_size('log'), pg_total_relation_size('snapshots')")
            : db.query("""
                SELECT (SELECT coalesce(sum(pg_column_size(l.*)), 0) FROM log l WHERE doc = $1),
                       (SELECT coalesce(sum(pg_column_size(s.*)), 0) FROM snapshots s WHERE doc = $1)
                """, params)
        let days = try db.query("""
            WITH counted AS (
                SELECT (time AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM log
                WHERE entry = 'event' AND time >= ((now() AT TIME ZONE 'UTC')::date - 13)::timestamp AT TIME ZONE 'UTC'\(only)
                GROUP BY 1)
            SELECT to_char(d, 'YYYY-MM-DD'), coalesce(c.n, 0)
            FROM generate_series((now() AT TIME ZONE 'UTC')::date - 13, (now() AT TIME ZONE 'UTC')::date, interval '1 day') d
            LEFT JOIN counted c ON c.day = d::date
            ORDER BY d
            """, params)
        let users = try db.query("""
            SELECT u.name, count(*) FROM log l JOIN users u ON u.id = l.user_id
            WHERE l.entry = 'event'\(doc == nil ? "" : " AND l.doc = $1")
            GROUP BY u.name ORDER BY count(*) DESC, u.name LIMIT 10
            """, params)
        return Report(doc: doc, documents: documents, events: counts.int(0, 0) ?? 0, marks: counts.int(0, 1) ?? 0, snapshots: snapshots,
                      logBytes: sizes.int(0, 0) ?? 0, snapshotBytes: sizes.int(0, 1) ?? 0, bytesAreEstimate: doc != nil,
                      eventsPerDay: days.values.map { ($0[0] ?? "", $0[1].flatMap { Int64($0) } ?? 0) },
                      topUsers: users.values.map { ($0[0] ?? "", $0[1].flatMap { Int64($0) } ?? 0) })
    }
}
