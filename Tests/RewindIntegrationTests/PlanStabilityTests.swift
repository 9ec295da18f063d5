import Foundation
import RewindCore
@testable import RewindStore
import XCTest

/// Appends must read the log by key however it has grown since their plans
/// were made. PostgreSQL gives a prepared statement a generic plan after five
/// runs and keeps it until something invalidates it; a writer prepares the
/// append on a new database, where every table is a page or two, so a plan
/// that can read a table whole is one that will, once it is large (issue 25,
/// issue 44: a busy document stalled for seconds per batch).
final class PlanStabilityTests: XCTestCase {
    /// The server's own path (issue 44): a writer prepares the append on a
    /// freshly migrated database (schema/012 ANALYZEd `log` empty) and runs it
    /// more than five times while the log is small, so PostgreSQL settles on
    /// a generic plan for it; the log then grows 100-fold with no ANALYZE in
    /// between. Neither the writer's next batch nor one that looks
    /// transactions up (a repeat the unique index refused; an undo retried by
    /// its `tx` on a ledger that forgot old ones) may scan `log` whole:
    /// planned that way, the lookup read a busy document's every entry for
    /// each row of each batch (870 ms a batch at 150,000 entries).
    func testAWritersPlanMadeOnASmallLogStillProbesTheGrownLog() throws {
        let db = try TestDatabase()
        let c = db.db
        let user = try XCTUnwrap(c.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0))
        try c.query("INSERT INTO documents (id, owner, seq, head, head_hash) VALUES ('busy', \(user), 0, 0, \(Self.zero))")
        for setting in LogRows.writerSettings { try c.query(setting) }  // as a writer's session is set
        // Both of the writers' statements (with editor notes and without), more than five times each.
        let small: Int64 = 20
        for seq in 1...small {
            let s = Self.append("busy", seq: seq, tx: "t\(seq)", user: user, lookUp: false, notes: seq % 2 == 0)
            XCTAssertEqual(s.prepared, seq % 2 == 0 ? LogRows.appendName : LogRows.appendWithoutNotesName,
                           "the writers' statements are the prepared ones")
            XCTAssertEqual(try c.query(s)[0, 1], "t", "entry \(seq) is appended")
        }
        // 100 times as many entries, straight into the log (no ANALYZE: autovacuum has not come by yet),
        // from another session: changing session_replication_role here would empty this one's plan cache.
        let grown = small * 100
        let other = try c.another()
        try Self.fill(other, doc: "busy", entries: (small + 1)...grown, user: user)
        try other.query("UPDATE documents SET seq = \(grown), head = \(grown) WHERE id = 'busy'")
        // And 100 times as many documents.
        try other.query("""
            INSERT INTO documents (id, owner, seq, head, head_hash) SELECT 'other' || g, \(user), 0, 0, \(Self.zero) FROM generate_series(1, 2000) g
            """)

        // The writer's next batch, through the plan it made on the small log: without notes, then with.
        for notes in [false, true] {
            let next = try reads(c, of: ["log", "documents"]) {
                try c.query(Self.append("busy", seq: grown + 1, tx: "new", user: user, lookUp: false, notes: notes))
            }
            XCTAssertEqual(next.rows[0, 1], "t", "the next entry is appended (notes: \(notes))")
            XCTAssertEqual(next.of["log"]?.seqScans, 0, "the writer's statement scanned the grown log whole (notes: \(notes))")
            XCTAssertEqual(next.of["documents"]?.seqScans, 0, "the writer's statement scanned the grown documents whole (notes: \(notes))")
            XCTAssertLessThan(next.of["documents"]?.fetched ?? .max, 10, "rows of documents fetched to claim one head (notes: \(notes))")
        }

        // A retry of an old transaction, looked up as the store sends it (unnamed).
        let checked = Self.append("busy", seq: grown + 1, tx: "t7", user: user, lookUp: true)
        XCTAssertNil(checked.prepared, "the lookup is planned for each batch, not prepared")
        let retry = try reads(c) { try c.query(checked) }
        XCTAssertTrue((0..<retry.rows.count).contains { retry.rows[$0, 3] == "7" }, "the retry is found at version 7: \(retry.rows.values)")
        XCTAssertEqual(retry.of["log"]?.seqScans, 0, "the lookup scanned the grown log whole")
        XCTAssertLessThan(retry.of["log"]?.fetched ?? .max, 100, "rows of log fetched through an index to find one transaction")
    }

    /// The claim prices every way to read `documents` but an index probe out
    /// and never compiles just in time (a plan with nothing else costs over
    /// `jit_above_cost`: ~140 ms a batch). It announces the heads it moves
    /// itself (schema/026): no trigger on `documents` joins transition tables
    /// behind it any more (schema/016's did, with settings of its own that
    /// this one's overrode: 233 commits/s instead of ~10,000).
    func testTheClaimProbesByKeyNeverCompilesAndNoTriggerFollowsIt() throws {
        let db = try TestDatabase()
        let settings = try db.db.query("SELECT array_to_string(proconfig, ',') FROM pg_proc WHERE proname = 'rewind_claim_heads'")
        XCTAssertEqual(settings.count, 1)
        let claim = settings[0, 0] ?? ""
        for s in ["enable_seqscan=off", "enable_hashjoin=off", "enable_mergejoin=off", "jit=off"] { XCTAssertTrue(claim.contains(s), claim) }
        let triggers = try db.db.query("SELECT tgname FROM pg_trigger WHERE tgrelid = 'documents'::regclass AND NOT tgisinternal ORDER BY 1")
        // Each fires only on an UPDATE naming its column (`deleted_at`, `title`), which a claim never does.
        XCTAssertEqual(triggers.values.map { $0[0] ?? "" }, ["documents_deleted", "documents_renamed"],
                       "only the deletion's and the rename's notices are on documents")
        let columns = try db.db.query("""
            SELECT t.tgname, a.attname FROM pg_trigger t JOIN pg_attribute a ON a.attrelid = t.tgrelid AND a.attnum = ANY (t.tgattr::int2[])
            WHERE t.tgrelid = 'documents'::regclass AND NOT t.tgisinternal ORDER BY 1
            """)
        XCTAssertEqual(columns.values.map { "\($0[0] ?? "") \($0[1] ?? "")" }, ["documents_deleted deleted_at", "documents_renamed title"])
    }

    /// The writers' statement does not look transactions up; the unique
    /// index refuses a repeat, under the name the store recognises
    /// (`LogRows.refusedARepeatedTransaction`), and the statement that looks
    /// them up answers it as a repeat and appends nothing.
    func testARepeatedTransactionIsRefusedByTheIndexAndAnsweredByTheLookup() throws {
        let db = try TestDatabase()
        let c = db.db
        let user = try XCTUnwrap(c.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0))
        try c.query("INSERT INTO documents (id, owner, seq, head, head_hash) VALUES ('d', \(user), 0, 0, \(Self.zero))")
        XCTAssertEqual(try c.query(Self.append("d", seq: 1, tx: "once", user: user, lookUp: false))[0, 1], "t")
        var refusal: SQLFailure?
        do { try c.query(Self.append("d", seq: 2, tx: "once", user: user, lookUp: false)) } catch { refusal = Database.failure(of: error) }
        XCTAssertEqual(refusal?.sqlstate, "23505")
        XCTAssertEqual(refusal?.constraint, "log_event_tx")
        XCTAssertTrue(refusal.map(LogRows.refusedARepeatedTransaction) ?? false, "the store sends it again, looking it up")
        let answer = LogRows.outcome(try c.query(Self.append("d", seq: 2, tx: "once", user: user, lookUp: true)))
        XCTAssertTrue(answer.claimed.isEmpty, "nothing claimed")
        XCTAssertEqual(answer.duplicates["d"]?[2]?.version, 1, "the repeat of entry 2 is the transaction at version 1")
        XCTAssertEqual(try c.query("SELECT count(*) FROM log WHERE doc = 'd'").int(0, 0), 1, "nothing appended")
    }

    /// The lookup planned on a log analyzed young (documents of one entry
    /// each: `doc` looks nearly unique) and run on a long one probes the
    /// (doc, user_id, tx) indexes, one probe per kind of entry.
    func testTheLookupProbesTheTransactionIndexes() throws {
        let db = try TestDatabase()
        let c = db.db
        let user = try XCTUnwrap(c.query("SELECT id FROM users WHERE name = 'alice'").int(0, 0))
        try Self.fill(c, doc: nil, entries: 1...50, user: user)
        try c.query("ANALYZE log")
        try Self.fill(c, doc: "busy", entries: 1...100_000, user: user)
        try c.query("PREPARE checked AS " + LogRows.appendCheckedSQL)
        try c.query("SET plan_cache_mode = force_custom_plan")  // as for an unnamed statement
        let plan = try XCTUnwrap(c.query("EXPLAIN (FORMAT JSON) " + Self.execute("busy", seq: 100_001, tx: "again", user: user))[0, 0])
        var scans: [String] = []
        func visit(_ node: JSON) {
            guard let o = node.objectValue else { return }
            if o["Relation Name"]?.stringValue == "log", let type = o["Node Type"]?.stringValue, type != "ModifyTable" {
                scans.append(type + " " + (o["Index Name"]?.stringValue ?? ""))
            }
            for child in o["Plans"]?.arrayValue ?? [] { visit(child) }
        }
        for top in try JSONParser.parse(plan).arrayValue ?? [] { visit(top.objectValue?["Plan"] ?? .null) }
        XCTAssertEqual(scans.count, 2, "one lookup for events, one for marks: \(scans)\n\(plan)")
        for s in scans {
            XCTAssertTrue(s == "Index Scan log_event_tx" || s == "Index Scan log_mark_tx" || s == "Index Only Scan log_event_tx"
                          || s == "Index Only Scan log_mark_tx", "the log is read by \(s), not by the (doc, user_id, tx) index:\n\(plan)")
        }
    }

    /// The statement triggers' lookups (the entry before a document's first
    /// new one; its `document_editors` row) are planned once per session, the
    /// first time they fire: here on a young log, as on a new database. Once
    /// the log has grown, an append through them must still probe by key —
    /// no sequential scan of `log` or `document_editors` in its transaction
    /// (planned on a young log, the checks read `document_editors` whole
    /// into a hash, and — in the commit benchmark, auto_explain — the whole
    /// log twice per document of every batch, until schema/015).
    func testTheAppendTriggersProbeByKeyOnceTheLogHasGrown() throws {
        let db = try TestDatabase()
        let c = db.db
        try c.query("INSERT INTO users (id, name) VALUES (1, 'planner') ON CONFLICT DO NOTHING")
        try c.query("""
            INSERT INTO documents (id, owner, seq, head, head_hash) VALUES
              ('young', 1, 0, 0, \(Self.zero)), ('busy', 1, 100000, 100000, \(Self.zero))
            """)
        try Self.fill(c, doc: nil, entries: 1...50, user: 1)
        try c.query("ANALYZE")
        // The triggers fire on the young log: their plans are made now and kept by this session.
        XCTAssertEqual(try c.query(Self.append("young", seq: 1, tx: "t1", user: 1, lookUp: false))[0, 1], "t", "the young document's entry is appended")
        XCTAssertEqual(try db.eventCount("young"), 1)
        // From another session: changing session_replication_role here would empty this one's plan cache.
        try Self.fill(try c.another(), doc: "busy", entries: 1...100_000, user: 1)
        let append = try reads(c, of: ["document_editors", "log"]) {
            try c.query(Self.append("busy", seq: 100_001, tx: "t100001", user: 1, lookUp: false))
        }
        XCTAssertEqual(append.rows[0, 1], "t", "the busy document's entry is appended")
        for (table, r) in append.of {
            XCTAssertEqual(r.seqScans, 0, "\(table) was scanned whole by an append planned on a young log")
        }
        // The entry before the document's first new one, looked up once (it was twice: the lookup's copies in the WHERE clause).
        XCTAssertEqual(append.of["log"]?.indexScans, 1, "index probes of log for one document's append")
    }

    /// How `body` read each of `tables`, in a transaction of its own (rolled
    /// back). Counted as a difference: PostgreSQL 15 reports in
    /// `pg_stat_xact_user_tables` what the session has not yet flushed to
    /// the shared statistics, which can include earlier transactions (the
    /// migrations' index builds); it flushes only between transactions.
    private func reads(_ c: Database, of tables: [String] = ["log"], _ body: () throws -> Rows) throws -> (rows: Rows, of: [String: Reads]) {
        let query = "SELECT relname, seq_scan, idx_scan, idx_tup_fetch FROM pg_stat_xact_user_tables WHERE relname = ANY($1::text[])"
        let names = "{" + tables.joined(separator: ",") + "}"
        func counts() throws -> [String: Reads] {
            let r = try c.query(query, [names])
            var found: [String: Reads] = [:]
            for i in 0..<r.count { found[r[i, 0]!] = Reads(seqScans: r.int(i, 1) ?? 0, indexScans: r.int(i, 2) ?? 0, fetched: r.int(i, 3) ?? 0) }
            return found
        }
        try c.query("BEGIN")
        defer { _ = try? c.query("ROLLBACK") }
        let before = try counts()
        let rows = try body()
        let after = try counts()
        var delta: [String: Reads] = [:]
        for t in tables {
            let a = after[t] ?? Reads(), b = before[t] ?? Reads()
            delta[t] = Reads(seqScans: a.seqScans - b.seqScans, indexScans: a.indexScans - b.indexScans, fetched: a.fetched - b.fetched)
        }
        return (rows, delta)
    }

    struct Reads {
        var seqScans: Int64 = 0
        var indexScans: Int64 = 0
        /// Rows fetched through index scans.
        var fetched: Int64 = 0
    }

    private static let zero = "decode(repeat('00', 32), 'hex')"

    /// One entry of `doc` at `seq` (hashes zero), as the store sends it: its own claim, in one batch
    /// (with `notes`, the writer also notes `user` as an editor of `doc`).
    private static func append(_ doc: String, seq: Int64, tx: String, user: Int64, lookUp: Bool,
                               notes: Bool = false) -> PipelineConnection.Statement {
        let zero = [UInt8](repeating: 0, count: 32)
        let row = LogRow(doc: doc, seq: seq, version: seq, entry: "event", id: UUID().uuidString.lowercased(), userID: user, client: "c",
                         kind: "edit", group: "g", action: nil, tx: tx, txDigest: "d", base: seq - 1, ops: "[]", inverse: "[]",
                         refers: nil, meta: nil, time: 0, hash: zero)
        return LogRows.append([LogRows.Claim(doc: doc, expectedSeq: seq - 1, expectedHash: zero, rows: [row], checkDuplicates: lookUp,
                                             editors: notes ? [(user: user, timeMs: seq)] : [])])
    }

    /// The same entry through `PREPARE checked AS appendCheckedSQL`, as `EXECUTE` (for EXPLAIN).
    private static func execute(_ doc: String, seq: Int64, tx: String, user: Int64) -> String {
        let one = "ARRAY['\(doc)']"
        return "EXECUTE checked(\(one), ARRAY[\(seq - 1)::bigint], ARRAY[\(zero)], ARRAY[\(seq)::bigint], ARRAY[\(seq)::bigint], ARRAY[\(zero)], "
            + "\(one), ARRAY[\(seq)::bigint], ARRAY[\(seq)::bigint], ARRAY['event'], ARRAY[gen_random_uuid()], ARRAY[\(user)::bigint], ARRAY['c'], "
            + "ARRAY['edit'], ARRAY['g'], ARRAY[NULL::text], ARRAY['\(tx)'], ARRAY['d'], ARRAY[\(seq - 1)::bigint], ARRAY['[]'], ARRAY['[]'], "
            + "ARRAY[NULL::text], ARRAY[NULL::text], ARRAY[0::bigint], ARRAY[\(zero)], ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::bigint[], ARRAY[true])"
    }

    /// Rows straight into `log`, past the append path's triggers (only their
    /// number matters here; `session_replication_role`, which lets them past,
    /// also empties the session's plan cache: grow the log from another one): entries `entries` of `doc`, or (`doc` nil) one
    /// entry each of documents `small1`, `small2`, ….
    private static func fill(_ c: Database, doc: String?, entries: ClosedRange<Int64>, user: Int64) throws {
        try c.query("SET session_replication_role = replica")
        let columns = "INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, tx, tx_digest, base, ops, inverse, time, hash)"
        if let doc {
            try c.query("""
                \(columns) SELECT '\(doc)', g, g, 'event', gen_random_uuid(), \(user), 'c', 'edit', 'g', 't' || g, 'd', g - 1, '[]', '[]', now(), \(zero)
                FROM generate_series(\(entries.lowerBound), \(entries.upperBound)) g
                """)
        } else {
            try c.query("""
                \(columns) SELECT 'small' || g, 1, 1, 'event', gen_random_uuid(), \(user), 'c', 'edit', 'g', 'tx' || g, 'd', 0, '[]', '[]', now(), \(zero)
                FROM generate_series(\(entries.lowerBound), \(entries.upperBound)) g
                """)
        }
        try c.query("SET session_replication_role = DEFAULT")
    }
}
