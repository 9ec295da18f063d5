import RewindCore

/// The log as a stream a backend follows (PROTOCOL.md, "Following the log";
/// schema/021): every entry of every document by its position, after a
/// position already seen — none twice, none skipped, even when two writers
/// commit out of order — read only below the horizon under which every
/// transaction has ended (`rewind_followable_below()`). Read synchronously
/// on a connection of the follower's own: by `rewind admin follow`, and by
/// the server (`GET /v1/events`) on its thread pool.
public enum Follow {
    /// One entry as a follower gets it.
    public struct Entry: Sendable {
        public var position: Int64
        public var doc: String
        public var seq: Int64
        public var version: Int64
        /// `event` or `mark`.
        public var entry: String
        public var kind: String
        /// The user's handle (what `share` and the API name them by).
        public var user: String
        public var client: String
        /// Milliseconds since 1970.
        public var time: Int64
        /// The ops, opened (nil: a mark, no content asked for, or a purged document).
        public var ops: JSON?

        /// `{position, doc, version, entry, kind, user, client, time, ops?}`.
        public var json: JSON {
            .obj([("position", .int(position)), ("doc", .string(doc)), ("version", .int(version)), ("entry", .string(entry)),
                  ("kind", .string(kind)), ("user", .string(user)), ("client", .string(client)), ("time", .int(time)), ("ops", ops)])
        }
    }

    static let pageSQL = """
        SELECT l.position, l.doc, l.seq, l.version, l.entry, l.kind, u.name, l.client, (extract(epoch FROM l.time) * 1000)::bigint,
               l.ops, l.inverse, l.id, d.purged_at IS NOT NULL
        FROM log l JOIN users u ON u.id = l.user_id JOIN documents d ON d.id = l.doc
        WHERE l.position > $1 AND l.position < rewind_followable_below() AND ($2::text IS NULL OR starts_with(l.doc, $2))
        ORDER BY l.position LIMIT $3
        """

    /// The keys a follower opens content with, per document (nil: purged, or no master key).
    public final class Keys {
        let keys: DocumentKeys?
        private var ciphers: [String: DocumentCipher?] = [:]
        /// `keys` of the follower's own (a cache not shared with any other thread); nil: none.
        public init(_ keys: DocumentKeys?) { self.keys = keys }

        func cipher(_ doc: String, db: Database) throws(RewindError) -> DocumentCipher? {
            if let c = ciphers[doc] { return c }
            let c = try keys?.existing(doc: doc, db: db)
            ciphers[doc] = c
            return c
        }
    }

    /// What one read found: the entries, and how far the follower may move on
    /// without them (`next`): past the last entry, or — when the page is not
    /// full — to just below the horizon read first, under which every entry,
    /// matching the prefix or not, is now known. A follower of a rare prefix
    /// then does not read the same stretch of the log again and again.
    public struct Page: Sendable {
        public var entries: [Entry]
        public var next: Int64
    }

    /// Entries after `position`, by position, at most `limit`, of documents
    /// whose id starts with `prefix` (nil: all). `keys` nil: no content (`ops` left out).
    public static func page(after position: Int64, prefix: String?, limit: Int, keys: Keys?, db: Database) throws(RewindError) -> Page {
        // First: the page's own bound is read later, so it is at least this (horizons only move on).
        let horizon = try db.query("SELECT rewind_followable_below()").int(0, 0) ?? 0
        let rows = try db.query(pageSQL, [String(position), prefix, String(limit)])
        let entries = try rows.values.map { (r: [String?]) throws(RewindError) -> Entry in
            guard let p = r[0].flatMap({ Int64($0) }), let doc = r[1], let seq = r[2].flatMap({ Int64($0) }),
                  let version = r[3].flatMap({ Int64($0) }), let entry = r[4], let kind = r[5], let user = r[6], let client = r[7],
                  let time = r[8].flatMap({ Int64($0) }), let id = r[11]
            else { throw RewindError(.internal, "malformed log row: run `rewind admin verify`") }
            var ops: JSON?
            if let keys, let stored = r[9], let inverse = r[10], r[12] != "t" {
                let cipher = try keys.cipher(doc, db: db)
                if cipher != nil || !DocumentCipher.isSealed(stored) {
                    let plain = try DocumentCipher.plain(ops: stored, inverse: inverse, cipher: cipher, doc: doc, seq: seq, id: id).ops
                    ops = try? JSONParser.parse(plain, maxDepth: Limits.unbounded.maxJSONDepth)
                }
            }
            return Entry(position: p, doc: doc, seq: seq, version: version, entry: entry, kind: kind, user: user, client: client,
                         time: time, ops: ops)
        }
        let next = entries.count == limit ? entries.last!.position : max(position, entries.last?.position ?? position, horizon - 1)
        return Page(entries: entries, next: next)
    }
}
