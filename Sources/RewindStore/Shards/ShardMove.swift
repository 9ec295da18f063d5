import RewindCore
import RewindLoop

/// `rewind admin shard move DOC --to SHARD` (SPEC section 17): a document
/// moved to another PostgreSQL cluster while its terminals keep working, in
/// steps that can each be resumed:
///
/// 1. **copy** what it holds now into the target, while it is still served
///    (one transaction there: its row, key, roles and entries, exactly as
///    stored — ids, sealed text, hashes);
/// 2. **fence** it on the source: `moved_to` set and its head's hash changed
///    in one statement, so no server's claim matches it any more, and the
///    catalog's `moving:<doc>` notice closes it on every instance (terminals
///    get `closed` `moved` and open it again, answered `unavailable` until 5);
/// 3. **copy the rest**, the entries committed before the fence;
/// 4. **verify** the target: its whole chain once copied while served (`Verify`), then after
///    the fence the tail only, ending at the source's last entry;
/// 5. **flip** the catalog's placement (`moved:<doc>`: instances read it again);
/// 6. **purge** the copy left on the source (its key, snapshots, editors, roles).
///
/// The catalog's `placements.moving_to` says a move is under way. A mover
/// killed at any step leaves the document on exactly one shard with every
/// acknowledged entry: before the flip the source is the document (the
/// target's copy is not served), after it the target. Running the command
/// again resumes (a copy continues from where the target's head is);
/// `abort` before the flip unfences the source and drops the target's copy.
public enum ShardMove {
    public enum Step: String, CaseIterable, Sendable { case copied, fenced, copiedRest = "copied-rest", verified, flipped, purged }

    /// Copies while the document is served at most, and the entries a pass may find and still be the last before the fence.
    static let maxLivePasses = 5
    static let fewEnoughToFence: Int64 = 200

    public struct Moved: Sendable {
        public var from: String
        public var to: String
        /// Entries copied before the fence and after it.
        public var entriesLive: Int64 = 0
        public var entriesFenced: Int64 = 0
        /// From the fence to the flip: how long the document answered `unavailable`.
        public var closedMs: Double = 0
        /// Steps skipped because an earlier run had done them.
        public var resumed: [Step] = []
    }

    /// Moves `doc` to `target`. `stopAfter`: end the run right after that step
    /// (tests: a mover killed there). `connect` reaches a shard by its conninfo.
    public static func move(_ doc: String, to target: String, catalog: Database, keys: DocumentKeys?,
                            stopAfter: Step? = nil, connect: (String) throws(RewindError) -> Database) throws(RewindError) -> Moved
    {
        let shards = Dictionary(uniqueKeysWithValues: try ShardCatalog.shards(catalog).map { ($0.name, $0) })
        guard let to = shards[target] else { throw .notFound("no shard \(target) (`rewind admin shard list`)") }
        func open(_ name: String) throws(RewindError) -> Database {
            name == ShardCatalog.home ? catalog : try connect(shards[name]!.conninfo)
        }
        let placed = try catalog.query("SELECT shard, moving_to FROM placements WHERE doc = $1", [doc])
        let from = placed.count == 1 ? placed[0, 0]! : ShardCatalog.home
        var moved = Moved(from: from, to: target)
        if from == target {
            // A mover killed after the flip: the copy it left to purge, wherever it is.
            for (name, _) in shards where name != target {
                let source = try open(name)
                if try source.query("SELECT 1 FROM documents WHERE id = $1 AND moved_to = $2 AND purged_at IS NULL", [doc, target]).count == 1 {
                    moved.from = name
                    moved.resumed = [.copied, .fenced, .copiedRest, .verified, .flipped]
                    try purgeCopy(doc, on: source)
                    return moved
                }
            }
            throw .conflict("\(doc) is on shard \(target) already")
        }
        if let other = placed.count == 1 ? placed[0, 1] : nil, other != target {
            throw .conflict("\(doc) is being moved to shard \(other): finish that move (`shard move \(doc) --to \(other)`) or abort it (`shard move \(doc) --abort`)")
        }
        let source = try open(from), dest = try open(target)
        let d = try source.query("""
            SELECT title, owner, (extract(epoch FROM created_at) * 1000000)::bigint, deleted_at IS NOT NULL, moved_to
            FROM documents WHERE id = $1
            """, [doc])
        guard d.count == 1, let owner = d.int(0, 1), let created = d.int(0, 2) else { throw .notFound("no document \"\(doc)\" on shard \(from)") }
        guard d[0, 3] == "f" else { throw .conflict("\(doc) is deleted: undelete it, or purge it, rather than move it") }
        try sameMasterKey(source, dest, from: from, to: target)
        var earlier = try dest.query("SELECT moved_to IS NOT NULL, purged_at IS NOT NULL FROM documents WHERE id = $1", [doc])
        if earlier.count == 1, earlier[0, 0] == "t" {
            // Moving back to a shard it left: the purged copy it left there goes first (the log it held lives on where the document is).
            guard earlier[0, 1] == "t" else { throw .conflict("shard \(target)'s copy of \(doc) is being moved away; finish that move first") }
            try dropCopy(doc, on: dest, leftBehind: true)
            earlier = try dest.query("SELECT 1 FROM documents WHERE id = $1", [doc])
        } else if earlier.count == 1, earlier[0, 1] == "t" {
            throw .conflict("shard \(target) holds \(doc) purged")
        }
        let resuming = placed.count == 1 && placed[0, 1] == target
        if earlier.count == 1, !resuming {
            throw .conflict("shard \(target) already has a document \(doc) that is not a copy of this one")
        }
        // Under way: instances answer it `unavailable` only from the fence on (they read moving_to when they look it up).
        try catalog.query("INSERT INTO placements (doc, shard) VALUES ($1, $2) ON CONFLICT (doc) DO NOTHING", [doc, from])
        try catalog.query("UPDATE placements SET moving_to = $2 WHERE doc = $1 AND shard = $3", [doc, target, from])
        let header = (title: d[0, 0], owner: owner, createdMicros: created)
        var verified: (seq: Int64, hash: [UInt8])?

        if d[0, 4] == nil {
            // Copied while served, pass after pass, until a pass finds little new: what the fence then waits for.
            for _ in 0..<Self.maxLivePasses {
                let n = try copy(doc, header, from: source, to: dest, intoShard: target != ShardCatalog.home, catalog: catalog)
                moved.entriesLive += n
                if n <= Self.fewEnoughToFence { break }
            }
            // The chain as copied so far checked while it is still served (after the fence only the tail is),
            // then what was committed meanwhile copied too.
            verified = try verifyWhole(doc, target: dest, keys: keys, to: target)
            moved.entriesLive += try copy(doc, header, from: source, to: dest, intoShard: target != ShardCatalog.home, catalog: catalog)
            if stopAfter == .copied { return moved }
            try source.query("UPDATE documents SET moved_to = $2, head_hash = '\\xfe'::bytea || head_hash WHERE id = $1 AND moved_to IS NULL",
                              [doc, target])
            try catalog.query("SELECT pg_notify('rewind_access', 'moving:' || $1)", [doc])
        } else {
            moved.resumed = [.copied, .fenced]
        }
        let fencedAt = monotonicNanos()
        if stopAfter == .fenced { return moved }
        moved.entriesFenced = try copy(doc, header, from: source, to: dest, intoShard: target != ShardCatalog.home, catalog: catalog)
        if stopAfter == .copiedRest { return moved }
        let checked: (seq: Int64, hash: [UInt8])
        if let verified { checked = verified } else { checked = try verifyWhole(doc, target: dest, keys: keys, to: target) }  // resumed: whole
        try verifyTail(doc, source: source, target: dest, after: checked, from: from, to: target)
        if stopAfter == .verified { return moved }
        try catalog.query("BEGIN")
        do throws(RewindError) {
            guard try catalog.query("UPDATE placements SET shard = $2, moving_to = NULL WHERE doc = $1 AND moving_to = $2 RETURNING 1",
                                    [doc, target]).count == 1 else {
                throw RewindError.conflict("the move of \(doc) was aborted meanwhile")
            }
            try catalog.query("SELECT pg_notify('rewind_access', 'moved:' || $1)", [doc])
            try catalog.query("COMMIT")
        } catch {
            _ = try? catalog.query("ROLLBACK")
            throw error
        }
        moved.closedMs = Double(monotonicNanos() - fencedAt) / 1_000_000
        if stopAfter == .flipped { return moved }
        try purgeCopy(doc, on: source)
        return moved
    }

    /// Ends a move before its flip: the source unfenced (its head's hash as its last entry's), the target's copy dropped.
    public static func abort(_ doc: String, catalog: Database, connect: (String) throws(RewindError) -> Database) throws(RewindError) -> String {
        let placed = try catalog.query("SELECT p.shard, p.moving_to, t.conninfo FROM placements p JOIN shards t ON t.name = p.moving_to WHERE p.doc = $1", [doc])
        guard placed.count == 1, let from = placed[0, 0], let to = placed[0, 1] else { throw .conflict("\(doc) is not being moved") }
        let shards = Dictionary(uniqueKeysWithValues: try ShardCatalog.shards(catalog).map { ($0.name, $0.conninfo) })
        let source = from == ShardCatalog.home ? catalog : try connect(shards[from]!)
        let dest = to == ShardCatalog.home ? catalog : try connect(shards[to]!)
        try dropCopy(doc, on: dest)
        try source.query("""
            UPDATE documents SET moved_to = NULL,
                   head_hash = coalesce((SELECT hash FROM log WHERE log.doc = documents.id AND log.seq = documents.seq), '\\x')
            WHERE id = $1 AND moved_to IS NOT NULL
            """, [doc])
        try catalog.query("UPDATE placements SET moving_to = NULL WHERE doc = $1", [doc])
        try catalog.query("SELECT pg_notify('rewind_access', 'moved:' || $1)", [doc])
        return from
    }

    // MARK: Steps

    private static func sameMasterKey(_ source: Database, _ dest: Database, from: String, to: String) throws(RewindError) {
        let a = try source.query("SELECT key_id FROM master_key"), b = try dest.query("SELECT key_id FROM master_key")
        guard a.count == 1, let id = a[0, 0] else { return }  // nothing sealed at the source yet
        if b.count == 0 { try dest.query(DocumentKeys.claimMasterSQL, [id]); return }
        guard b[0, 0] == id else {
            throw .conflict("shard \(to)'s data keys are wrapped with another master key (\(b[0, 0] ?? "?")) than shard \(from)'s (\(id))")
        }
    }

    /// The entries the target lacks (after its head, up to the source's), with the document's row,
    /// key, title and roles, in one transaction on the target. Answers the entries copied.
    private static func copy(_ doc: String, _ header: (title: String?, owner: Int64, createdMicros: Int64),
                             from source: Database, to dest: Database, intoShard: Bool, catalog: Database) throws(RewindError) -> Int64
    {
        let upTo = try source.query("SELECT seq FROM documents WHERE id = $1", [doc]).int(0, 0) ?? 0
        try dest.query("BEGIN")
        do throws(RewindError) {
            if intoShard {
                let users = try source.query("""
                    SELECT DISTINCT u FROM (SELECT user_id FROM log WHERE doc = $1
                                            UNION SELECT user_id FROM access WHERE doc = $1
                                            UNION SELECT granted_by FROM access WHERE doc = $1
                                            UNION SELECT owner FROM documents WHERE id = $1) x(u) WHERE u IS NOT NULL
                    """, [doc]).values.compactMap { $0[0] }
                for id in users {
                    let u = try catalog.query("SELECT name, display_name FROM users WHERE id = $1", [id])
                    guard u.count == 1 else { throw RewindError(.internal, "user \(id) of \(doc) is not in the catalog") }
                    try dest.query("SELECT rewind_user_copy($1, $2, $3)", [id, u[0, 0], u[0, 1]])
                }
            }
            try dest.query("""
                INSERT INTO documents (id, title, owner, created_at) VALUES ($1, $2, $3, 'epoch'::timestamptz + $4::bigint * interval '1 microsecond')
                ON CONFLICT (id) DO NOTHING
                """, [doc, header.title, String(header.owner), String(header.createdMicros)])
            let key = try source.query("SELECT key_id, master_key_id, wrapped FROM document_keys WHERE doc = $1", [doc])
            if key.count == 1 {
                try dest.query("INSERT INTO document_keys (doc, key_id, master_key_id, wrapped) VALUES ($1, $2, $3, $4::bytea) ON CONFLICT (doc) DO NOTHING",
                               [doc, key[0, 0], key[0, 1], key[0, 2]])
            }
            let head = try dest.query("SELECT seq, head_hash FROM documents WHERE id = $1", [doc])
            var at = head.int(0, 0) ?? 0, hash = head[0, 1].flatMap(LogRows.bytea) ?? []
            var copied: Int64 = 0
            while at < upTo {
                let entries = try Export.entries(doc, afterSeq: at, toSeq: upTo, limit: 5_000, db: source)
                guard let last = entries.last else { throw RewindError(.internal, "the log of \(doc) on the source ends before its head \(upTo)") }
                let r = try dest.query(ImportRows.append(doc: doc, expectedSeq: at, expectedHash: hash, entries))
                guard r.int(0, 0) == 1, r.int(0, 1) == Int64(entries.count) else {
                    throw RewindError(.conflict, "the copy of \(doc) on the target changed while it was being made")
                }
                (at, hash) = (last.row.seq, last.row.hash)
                copied += Int64(entries.count)
            }
            // Snapshots (sealed with the same key): the first open on the target reads the newest, not the whole log.
            let newest = try dest.query("SELECT coalesce(max(seq), 0) FROM snapshots WHERE doc = $1", [doc]).int(0, 0) ?? 0
            for r in try source.query("""
                SELECT version, state, created, seq, hash, digest FROM snapshots WHERE doc = $1 AND seq > $2 AND seq <= $3 ORDER BY seq
                """, [doc, String(newest), String(at)]).values {
                try dest.query("INSERT INTO snapshots (doc, version, state, created, seq, hash, digest) VALUES ($1, $2, $3, $4, $5, $6::bytea, $7::bytea)",
                               [doc] + r)
            }
            // Roles and title as the source has them now (they may have changed since a first copy).
            try dest.query("UPDATE documents SET title = $2 WHERE id = $1 AND title IS DISTINCT FROM $2", [doc, header.title])
            try dest.query("DELETE FROM access WHERE doc = $1", [doc])
            for a in try source.query("SELECT user_id, role, granted_by, granted_at FROM access WHERE doc = $1", [doc]).values {
                try dest.query("INSERT INTO access (doc, user_id, role, granted_by, granted_at) VALUES ($1, $2, $3, $4, $5)", [doc] + a)
            }
            try dest.query("COMMIT")
            return copied
        } catch {
            _ = try? dest.query("ROLLBACK")
            throw error
        }
    }

    /// The target's copy checked whole (`Verify`: its chain, versions and head; with the master key, its content):
    /// where it ends, verified.
    private static func verifyWhole(_ doc: String, target: Database, keys: DocumentKeys?, to: String) throws(RewindError) -> (seq: Int64, hash: [UInt8]) {
        if case let .failure(problem) = try Verify.document(doc, db: target, keys: keys) {
            throw .conflict("the copy of \(doc) on shard \(to) does not verify (\(problem)): not flipped; abort the move")
        }
        let t = try target.query("SELECT seq, head_hash FROM documents WHERE id = $1", [doc])
        return (t.int(0, 0) ?? 0, t[0, 1].flatMap(LogRows.bytea) ?? [])
    }

    /// After the fence: every entry the target has past `after` (verified before) follows it in the
    /// chain, and the target ends at the source's last entry.
    private static func verifyTail(_ doc: String, source: Database, target: Database, after: (seq: Int64, hash: [UInt8]),
                                   from: String, to: String) throws(RewindError) {
        let s = try source.query("SELECT d.seq, l.hash FROM documents d LEFT JOIN log l ON l.doc = d.id AND l.seq = d.seq WHERE d.id = $1", [doc])
        let t = try target.query("SELECT seq, head_hash FROM documents WHERE id = $1", [doc])
        guard s.count == 1, t.count == 1, s.int(0, 0) == t.int(0, 0), (s[0, 1] ?? "\\x") == t[0, 1] else {
            throw .conflict("the copy of \(doc) on shard \(to) does not end where shard \(from)'s does: not flipped; run the move again, or abort it")
        }
        var (seq, previous) = after
        while true {
            let rows = try LogRows.decodeStored(doc: doc, try target.query(LogRows.stored(doc: doc, afterSeq: seq, toSeq: .max, limit: 5_000)))
            if rows.isEmpty { break }
            for r in rows {
                guard r.seq == seq + 1, r.chained(after: previous) == r.hash else {
                    throw .conflict("the copy of \(doc) on shard \(to) breaks its chain at entry \(seq + 1): not flipped; abort the move")
                }
                (seq, previous) = (r.seq, r.hash)
            }
        }
        guard seq == t.int(0, 0) else { throw .conflict("the copy of \(doc) on shard \(to) ends at entry \(seq), its head says \(t.int(0, 0) ?? 0)") }
    }

    /// The copy a move left behind: its key (and with it every way to read its sealed text), snapshots, editors and roles.
    /// Its log rows and its row in `documents` (deleted, purged, `moved_to`) stay: the log is append-only.
    private static func purgeCopy(_ doc: String, on db: Database) throws(RewindError) {
        try db.query("BEGIN")
        do throws(RewindError) {
            try db.query("UPDATE documents SET deleted_at = coalesce(deleted_at, now()), purged_at = now(), title = NULL WHERE id = $1", [doc])
            for table in ["document_keys", "snapshots", "document_editors", "access"] {
                try db.query("DELETE FROM \(table) WHERE doc = $1", [doc])
            }
            try db.query("COMMIT")
        } catch {
            _ = try? db.query("ROLLBACK")
            throw error
        }
    }

    /// A copy made before an abort: its rows go (the log's append-only triggers set aside for this one statement's transaction).
    /// `leftBehind`: the purged copy a move left (a document moving back), else the copy an aborted move made.
    private static func dropCopy(_ doc: String, on db: Database, leftBehind: Bool = false) throws(RewindError) {
        let which = leftBehind ? "moved_to IS NOT NULL AND purged_at IS NOT NULL" : "moved_to IS NULL"
        guard try db.query("SELECT 1 FROM documents WHERE id = $1 AND \(which)", [doc]).count == 1 else { return }
        try db.query("BEGIN")
        do throws(RewindError) {
            try db.query("ALTER TABLE log DISABLE TRIGGER USER")
            for table in ["log", "document_keys", "snapshots", "document_editors", "access"] {
                try db.query("DELETE FROM \(table) WHERE doc = $1", [doc])
            }
            try db.query("DELETE FROM documents WHERE id = $1", [doc])
            try db.query("ALTER TABLE log ENABLE TRIGGER USER")
            try db.query("COMMIT")
        } catch {
            _ = try? db.query("ROLLBACK")
            throw error
        }
    }
}
