import RewindCore

/// The catalog's shards as the admin commands read and change them, on
/// blocking connections (schema/028; `rewind admin shard`).
public enum ShardCatalog {
    public struct Shard: Sendable {
        public var name: String
        public var conninfo: String
        public var state: String
        /// Documents on it: placed there, or (`home`) made in the catalog's own database.
        public var documents: Int
    }

    public static let states = ["accepting", "closed", "draining"]
    /// The documents on shard `s` (a row of `shards`), as the policy and `shard list` count
    /// them: `home`'s in the catalog's own table (not the copies moves left), the others' by placement.
    static let documentsOnShard = """
        CASE WHEN s.name = 'home' THEN (SELECT count(*) FROM documents WHERE moved_to IS NULL)
             ELSE (SELECT count(*) FROM placements p WHERE p.shard = s.name) END
        """

    /// The catalog's own database, as a shard.
    public static let home = ShardDirectory.home

    public static func shards(_ catalog: Database) throws(RewindError) -> [Shard] {
        let rows = try catalog.query("""
            SELECT s.name, s.conninfo, s.state, \(documentsOnShard)
            FROM shards s ORDER BY s.name <> 'home', s.name
            """)
        return (0..<rows.count).map { i in
            Shard(name: rows[i, 0] ?? "", conninfo: rows[i, 1] ?? "", state: rows[i, 2] ?? "", documents: Int(rows.int(i, 3) ?? 0))
        }
    }

    /// The shard `doc` lives on: nil for `home` (no placement, or placed there).
    public static func placement(of doc: String, _ catalog: Database) throws(RewindError) -> Shard? {
        let rows = try catalog.query("SELECT s.name, s.conninfo, s.state FROM placements p JOIN shards s ON s.name = p.shard WHERE p.doc = $1 AND s.name <> 'home'", [doc])
        guard rows.count == 1 else { return nil }
        return Shard(name: rows[0, 0] ?? "", conninfo: rows[0, 1] ?? "", state: rows[0, 2] ?? "", documents: 0)
    }

    /// Makes `target` shard `name` of `catalog`: its schema migrated, its
    /// name written in it, and the catalog's row added (or its conninfo
    /// changed). Refused for the catalog itself, a database that holds
    /// documents of its own (another catalog), or another shard.
    public static func add(name: String, conninfo: String, state: String, migrations: [Migrations.File],
                           catalog: Database, target: Database) throws(RewindError) -> (applied: [String], new: Bool)
    {
        guard name != "home" else { throw RewindError(.badRequest, "`home` is the catalog's own database; name the new shard otherwise") }
        guard states.contains(state) else { throw RewindError(.badRequest, "a shard's state is one of \(states.joined(separator: ", "))") }
        let identity = "SELECT system_identifier::text || '/' || current_database() FROM pg_control_system()"
        guard try catalog.query(identity)[0, 0] != target.query(identity)[0, 0] else {
            throw RewindError(.badRequest, "that conninfo reaches the catalog's own database, which is the shard `home`")
        }
        let hasSchema = try target.query("SELECT to_regclass('documents') IS NOT NULL")[0, 0] == "t"
        if hasSchema {
            let said = try target.query("SELECT name FROM shard_identity WHERE to_regclass('shard_identity') IS NOT NULL")
            let its = said.count == 1 ? said[0, 0] : nil
            if let its, its != name { throw RewindError(.conflict, "that database is already shard \(its)") }
            if its == nil, try target.query("SELECT count(*) FROM documents").int(0, 0) ?? 0 > 0 {
                throw RewindError(.conflict, "that database holds documents of its own (a catalog?): a shard starts empty")
            }
        }
        let applied = try Migrations.apply(migrations, to: target)
        try target.query("INSERT INTO shard_identity (name) VALUES ($1) ON CONFLICT (one) DO NOTHING", [name])
        let rows = try catalog.query("""
            INSERT INTO shards (name, conninfo, state) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET conninfo = EXCLUDED.conninfo RETURNING (xmax = 0)
            """, [name, conninfo, state])
        return (applied, rows[0, 0] == "t")
    }

    public static func setState(_ name: String, _ state: String, _ catalog: Database) throws(RewindError) {
        guard states.contains(state) else { throw RewindError(.badRequest, "a shard's state is one of \(states.joined(separator: ", "))") }
        guard try catalog.query("UPDATE shards SET state = $2 WHERE name = $1 RETURNING 1", [name, state]).count == 1 else {
            throw RewindError(.notFound, "no shard \(name)")
        }
    }

    /// The placement policy as stored (nil: none set, least-loaded).
    public static func policy(_ catalog: Database) throws(RewindError) -> String? {
        let rows = try catalog.query("SELECT policy FROM placement_policy")
        return rows.count == 1 ? rows[0, 0] : nil
    }

    /// Sets the policy, checked first: it parses, and each rule names a shard the catalog lists.
    public static func setPolicy(_ text: String, _ catalog: Database) throws(RewindError) -> PlacementPolicy {
        let policy = try PlacementPolicy(parsing: text)
        let known = Set(try shards(catalog).map(\.name))
        for rule in policy.rules where !known.contains(rule.shard) {
            throw RewindError(.badRequest, "the rule `\(rule.prefix) -> \(rule.shard)` names no shard of this catalog (`rewind admin shard list`)")
        }
        try catalog.query("""
            INSERT INTO placement_policy (policy) VALUES ($1) ON CONFLICT (one) DO UPDATE SET policy = EXCLUDED.policy, set_at = now()
            """, [policy.description])
        return policy
    }

    /// Copies the account named `name` from the catalog into `shard` (as the
    /// server does before writing for a user there). Nothing when `shard` is
    /// the catalog itself, or no user has that name (the caller says so).
    public static func copyUser(named name: String, from catalog: Database, to shard: Database) throws(RewindError) {
        guard try shard.query("SELECT to_regclass('shard_identity') IS NOT NULL AND EXISTS (SELECT 1 FROM shard_identity)")[0, 0] == "t" else { return }
        let u = try catalog.query("SELECT id, name, display_name FROM users WHERE name = $1", [name])
        guard u.count == 1 else { return }
        try shard.query("SELECT rewind_user_copy($1, $2, $3)", [u[0, 0], u[0, 1], u[0, 2]])
    }

    /// Every shard's documents (not deleted, not a copy left by a move) and their sizes, read from each
    /// shard, for `Rebalance.plan`. A document's bytes are its entries times its shard's log bytes per entry.
    /// Closed shards are left out (they neither give nor take); draining ones do not accept.
    public static func loads(_ catalog: Database, connect: (String) throws(RewindError) -> Database)
        throws(RewindError) -> (shards: [ShardLoad], documents: [Rebalance.Placed])
    {
        var loads: [ShardLoad] = [], placed: [Rebalance.Placed] = []
        for s in try shards(catalog) where s.state != "closed" {
            let db = s.name == home ? catalog : try connect(s.conninfo)
            let perEntry = try db.query("""
                SELECT pg_total_relation_size('log')::float8 / greatest(1, coalesce(nullif((SELECT reltuples FROM pg_class WHERE relname = 'log'), -1), (SELECT count(*) FROM log)))
                """)[0, 0].flatMap(Double.init) ?? 0
            let rows = try db.query("SELECT id, seq FROM documents WHERE moved_to IS NULL AND deleted_at IS NULL")
            var bytes: Int64 = 0
            for i in 0..<rows.count {
                guard let doc = rows[i, 0] else { continue }
                let b = Int64((Double(rows.int(i, 1) ?? 0) * perEntry).rounded())
                placed.append(Rebalance.Placed(doc: doc, shard: s.name, bytes: b))
                bytes += b
            }
            loads.append(ShardLoad(id: s.name, documents: rows.count, bytes: bytes, accepting: s.state == "accepting"))
        }
        return (loads, placed)
    }
}
