import RewindCore

/// Applies `schema/NNN_name.sql` files in order, each in its own transaction,
/// recording each in `schema_migrations` so that a second run does nothing.
public enum Migrations {
    /// The newest migration this release's code reads and writes (`schema/`'s
    /// last file; a test holds them equal). A server refuses to serve a
    /// database behind it — it would fail query by query, or wait forever
    /// for a table that is not there — and serves one ahead of it (a newer
    /// release migrated first: migrations keep what older servers use).
    public static let required = 29

    /// What a server started on a database whose newest migration is `applied` must say (nil: it may serve).
    public static func refusal(applied: Int?) -> RewindError? {
        guard let applied else {
            return RewindError(.unavailable, "the database has no Rewind schema: run `rewind admin migrate` on it first")
        }
        guard applied < required else { return nil }
        return RewindError(.unavailable, "the database's schema is at migration \(applied) and this release needs \(required): run this release's `rewind admin migrate` first",
                           details: ["applied": .int(Int64(applied)), "required": .int(Int64(required))])
    }

    public struct File: Sendable {
        public let version: Int
        public let name: String
        public let sql: String
    }

    /// Reads the migration files of a folder, ordered by their number.
    public static func load(from directory: String) throws(RewindError) -> [File] {
        guard let names = try? listDirectory(directory) else {
            throw RewindError(.notFound, "no schema folder at \(directory)")
        }
        var files: [File] = []
        for name in names.sorted() where name.hasSuffix(".sql") {
            guard let n = Int(name.prefix(while: \.isNumber)) else { continue }
            guard let sql = readTextFile(directory + "/" + name) else {
                throw RewindError(.internal, "cannot read \(directory)/\(name)")
            }
            files.append(File(version: n, name: name, sql: sql))
        }
        guard !files.isEmpty else { throw RewindError(.notFound, "no NNN_name.sql files in \(directory)") }
        return files
    }

    /// Applies what is missing; returns the names applied now.
    @discardableResult
    public static func apply(_ files: [File], to db: Database) throws(RewindError) -> [String] {
        try db.execute(script: """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
            """)
        var applied: [String] = []
        for f in files {
            try db.execute(script: "BEGIN")
            do {
                // One migrator at a time, even with several servers starting together.
                try db.query("SELECT pg_advisory_xact_lock(7878)")
                if try db.query("SELECT 1 FROM schema_migrations WHERE version = $1", [String(f.version)]).count > 0 {
                    try db.execute(script: "COMMIT")
                    continue
                }
                try db.execute(script: f.sql)
                try db.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [String(f.version), f.name])
                try db.execute(script: "COMMIT")
                applied.append(f.name)
            } catch {
                try? db.execute(script: "ROLLBACK")
                throw RewindError(error.code, "migration \(f.name): \(error.message)", details: error.details)
            }
        }
        // A database restored into another cluster: its log's positions are raised above
        // what the new cluster's transaction ids make (schema/021). Nothing to do otherwise.
        if try db.query("SELECT 1 FROM pg_proc WHERE proname = 'rewind_log_positions_repair'").count == 1,
           try db.query("SELECT rewind_log_positions_repair()")[0, 0] == "t" {
            applied.append("(the log's positions, raised above those of a restored log)")
        }
        return applied
    }

    /// Whether the log's positions need `rewind_log_positions_repair()` (a server refuses to serve until
    /// `rewind admin migrate` has run it): the newest is not below what a new transaction would make.
    static let positionsBehindSQL = """
        SELECT EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'rewind_followable_below')
           AND (SELECT coalesce(max(position), 0) FROM log) >= rewind_followable_below()
        """

    /// The schema folder: `$REWIND_SCHEMA_DIR`, else `schema/` in the first of
    /// the current directory and the executable's ancestors that has one.
    public static func defaultDirectory(executable: String) -> String? {
        if let env = environment("REWIND_SCHEMA_DIR") { return env }
        var candidates = [currentDirectory()]
        var dir = executable
        while let slash = dir.lastIndex(of: "/"), slash > dir.startIndex {
            dir = String(dir[..<slash])
            candidates.append(dir)
        }
        for c in candidates where readTextFile(c + "/schema/001_users_and_documents.sql") != nil {
            return c + "/schema"
        }
        return nil
    }
}
