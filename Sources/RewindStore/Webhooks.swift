import RewindCore

/// Webhook endpoints (schema/022) as SQL: added, listed, replayed and
/// removed by `rewind admin webhook`; leased, advanced and disabled by the
/// server instances that deliver them (RewindServer/Webhooks), each on a
/// connection of its own, synchronously, off the loop.
public enum Webhooks {
    /// The entry kinds an endpoint may ask for (`--events`).
    public static let kinds: Set<String> = ["edit", "undo", "redo", "restore", "close", "rename", "clear", "levels"]

    /// An endpoint as an instance that holds its lease delivers it.
    public struct Endpoint: Sendable, Equatable {
        public var id: Int64
        public var generation: Int64
        public var url: String
        public var secret: String
        public var kinds: Set<String>?
        public var prefix: String?
        public var withOps: Bool
        public var position: Int64
    }

    /// An endpoint as `rewind admin webhook list` shows it.
    public struct Listed: Sendable {
        public var id: Int64
        public var url: String
        public var kinds: [String]?
        public var prefix: String?
        public var withOps: Bool
        public var position: Int64
        public var enabled: Bool
        public var disabledReason: String?
        public var leaseOwner: String?
        public var delivered: Int64
        public var lastDelivered: String?
        public var failingSince: String?
        public var lastError: String?
    }

    /// Where a new endpoint starts.
    public enum Start: Sendable {
        /// With the entries committed from now on.
        case now
        /// With the entries after this position (0: the whole log).
        case after(Int64)
    }

    /// Adds an endpoint; answers its id and its secret (give it to the receiver).
    public static func add(url: String, kinds: [String]?, prefix: String?, withOps: Bool, start: Start, db: Database) throws(RewindError) -> (id: Int64, secret: String) {
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), url.utf8.count <= 2048, !url.contains(where: \.isWhitespace) else {
            throw .badRequest("a webhook's URL is http:// or https://, at most 2,048 bytes, without spaces")
        }
        if let kinds {
            guard !kinds.isEmpty else { throw .badRequest("--events names at least one kind") }
            for k in kinds where !Self.kinds.contains(k) {
                throw .badRequest("unknown entry kind \"\(k)\" (\(Self.kinds.sorted().joined(separator: ", ")))")
            }
        }
        if let prefix, prefix.isEmpty { throw .badRequest("--doc-prefix is not empty") }
        let position: String
        switch start {
        case .now: position = "rewind_followable_below() - 1"
        case let .after(p):
            guard p >= 0 else { throw .badRequest("--after is a position, 0 or more") }
            position = String(p)
        }
        let secret = StandardWebhooks.newSecret()
        let kindList = kinds.map { "{" + Set($0).sorted().joined(separator: ",") + "}" }
        let rows = try db.query("""
            INSERT INTO webhooks (url, secret, kinds, doc_prefix, with_ops, position)
            VALUES ($1, $2, $3::text[], $4, $5, \(position)) RETURNING id
            """, [url, secret, kindList, prefix, withOps ? "t" : "f"])
        guard let id = rows.int(0, 0) else { throw RewindError(.internal, "the new webhook has no id") }
        return (id, secret)
    }

    public static func list(db: Database) throws(RewindError) -> [Listed] {
        let iso = "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'"
        let rows = try db.query("""
            SELECT id, url, array_to_string(kinds, ','), doc_prefix, with_ops, position, enabled, disabled_reason,
                   CASE WHEN lease_until > now() THEN lease_owner END, delivered,
                   to_char(last_delivered_at AT TIME ZONE 'UTC', \(iso)), to_char(failing_since AT TIME ZONE 'UTC', \(iso)), last_error
            FROM webhooks ORDER BY id
            """)
        return (0..<rows.count).map { i in
            Listed(id: rows.int(i, 0) ?? 0, url: rows[i, 1] ?? "", kinds: rows[i, 2].map { $0.split(separator: ",").map(String.init) },
                   prefix: rows[i, 3], withOps: rows[i, 4] == "t", position: rows.int(i, 5) ?? 0, enabled: rows[i, 6] == "t",
                   disabledReason: rows[i, 7], leaseOwner: rows[i, 8], delivered: rows.int(i, 9) ?? 0, lastDelivered: rows[i, 10],
                   failingSince: rows[i, 11], lastError: rows[i, 12])
        }
    }

    public static func remove(_ id: Int64, db: Database) throws(RewindError) {
        guard try db.query("DELETE FROM webhooks WHERE id = $1 RETURNING 1", [String(id)]).count == 1 else { throw notFound(id) }
    }

    /// Delivers again from after `position` (nil: from where it stopped), enabled: the instance
    /// delivering it stops (a new generation), and one takes it up from there.
    public static func replay(_ id: Int64, after position: Int64?, db: Database) throws(RewindError) {
        if let position, position < 0 { throw .badRequest("--from is a position, 0 or more") }
        guard try db.query("""
            UPDATE webhooks SET position = coalesce($2::bigint, position), enabled = true, disabled_reason = NULL,
                failing_since = NULL, last_error = NULL, generation = generation + 1, lease_owner = NULL, lease_until = NULL
            WHERE id = $1 RETURNING 1
            """, [String(id), position.map { String($0) }]).count == 1 else { throw notFound(id) }
    }

    /// Stops deliveries to an endpoint until `replay` (or `enable`) starts them again.
    public static func disable(_ id: Int64, db: Database) throws(RewindError) {
        guard try db.query("""
            UPDATE webhooks SET enabled = false, disabled_reason = 'disabled by an operator', generation = generation + 1,
                lease_owner = NULL, lease_until = NULL
            WHERE id = $1 RETURNING 1
            """, [String(id)]).count == 1 else { throw notFound(id) }
    }

    static func notFound(_ id: Int64) -> RewindError { .notFound("no webhook \(id) (`rewind admin webhook list`)") }

    // MARK: The server's side

    /// Takes (or renews) the lease of every enabled endpoint that no other
    /// live instance holds, for `seconds`; answers the endpoints `owner` now holds.
    public static func lease(owner: String, seconds: Int, db: Database) throws(RewindError) -> [Endpoint] {
        let rows = try db.query("""
            UPDATE webhooks SET lease_owner = $1, lease_until = now() + make_interval(secs => $2::int)
            WHERE enabled AND (lease_owner = $1 OR lease_owner IS NULL OR lease_until < now())
            RETURNING id, generation, url, secret, array_to_string(kinds, ','), doc_prefix, with_ops, position
            """, [owner, String(seconds)])
        return (0..<rows.count).compactMap { i in
            guard let id = rows.int(i, 0), let generation = rows.int(i, 1), let url = rows[i, 2], let secret = rows[i, 3],
                  let position = rows.int(i, 7) else { return nil }
            return Endpoint(id: id, generation: generation, url: url, secret: secret,
                            kinds: rows[i, 4].map { Set($0.split(separator: ",").map(String.init)) }, prefix: rows[i, 5],
                            withOps: rows[i, 6] == "t", position: position)
        }
    }

    /// What one endpoint's deliverer reports: how far it delivered, how many since the last report, what fails.
    public struct Progress: Sendable {
        public var position: Int64
        public var delivered: Int64
        /// Seconds the oldest undelivered entry has been failing (nil: none is).
        public var failingForSeconds: Double?
        public var lastError: String?
        public init(position: Int64, delivered: Int64, failingForSeconds: Double?, lastError: String?) {
            self.position = position
            self.delivered = delivered
            self.failingForSeconds = failingForSeconds
            self.lastError = lastError
        }
    }

    /// Records progress, fenced by the lease and generation; false: the endpoint is no longer `owner`'s to deliver.
    public static func record(_ endpoint: Endpoint, owner: String, _ p: Progress, db: Database) throws(RewindError) -> Bool {
        try db.query("""
            UPDATE webhooks SET position = greatest(position, $4::bigint), delivered = delivered + $5::bigint,
                last_delivered_at = CASE WHEN $5::bigint > 0 THEN now() ELSE last_delivered_at END,
                failing_since = CASE WHEN $6::float8 IS NULL THEN NULL
                                     ELSE coalesce(failing_since, now() - make_interval(secs => $6::float8)) END,
                last_error = coalesce($7, CASE WHEN $6::float8 IS NULL THEN NULL ELSE last_error END)
            WHERE id = $1 AND generation = $2 AND lease_owner = $3 AND enabled
            RETURNING 1
            """, [String(endpoint.id), String(endpoint.generation), owner, String(p.position), String(p.delivered),
                  p.failingForSeconds.map { String($0) }, p.lastError]).count == 1
    }

    /// Disables an endpoint that kept failing past the retry window (fenced as `record`).
    public static func giveUp(_ endpoint: Endpoint, owner: String, _ p: Progress, reason: String, db: Database) throws(RewindError) {
        _ = try record(endpoint, owner: owner, p, db: db)
        try db.query("""
            UPDATE webhooks SET enabled = false, disabled_reason = $4, lease_owner = NULL, lease_until = NULL
            WHERE id = $1 AND generation = $2 AND lease_owner = $3
            """, [String(endpoint.id), String(endpoint.generation), owner, reason])
    }

    /// Lets go of every lease `owner` holds (a server stopping: another instance takes them up at once).
    public static func release(owner: String, db: Database) throws(RewindError) {
        try db.query("UPDATE webhooks SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1", [owner])
    }
}
