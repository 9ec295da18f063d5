import Foundation
import RewindCore
@testable import RewindStore
import XCTest

/// The append statement's duplicate lookup must probe the (doc, user_id, tx)
/// index however the log has grown since the statement was prepared: planned
/// while the log was small, then run on a large one, no scan of `log` may read
/// a document's history (issue 25: a busy document stalled for seconds per
/// batch once its ledger checked for duplicates).
final class PlanStabilityTests: XCTestCase {
    func testPreparedOnAnEmptyLog() throws { try check(youngDocuments: 0) }

    func testPreparedOnAYoungAnalyzedLog() throws { try check(youngDocuments: 50) }

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
        let zero = Self.zero
        try c.query("INSERT INTO users (id, name) VALUES (1, 'planner') ON CONFLICT DO NOTHING")
        try c.query("""
            INSERT INTO documents (id, owner, seq, head, head_hash) VALUES
              ('young', 1, 0, 0, \(zero)), ('busy', 1, 100000, 100000, \(zero))
            """)
        try Self.fill(c, smallDocuments: 50)
        try c.query("ANALYZE")
        try c.query("PREPARE append AS " + LogRows.appendSQL)
        func batch(_ doc: String, seq: Int64) -> String { Self.execute(doc, seq: seq, tx: "t\(seq)", base: seq - 1, checkDuplicates: false) }
        // The triggers fire on the young log: their plans are made now and kept by this session.
        XCTAssertEqual(try c.query(batch("young", seq: 1))[0, 1], "t", "the young document's entry is appended")
        XCTAssertEqual(try db.eventCount("young"), 1)
        try Self.fill(c, busyEntries: 100_000)
        try c.query("BEGIN")
        XCTAssertEqual(try c.query(batch("busy", seq: 100_001))[0, 1], "t", "the busy document's entry is appended")
        let scans = try c.query("""
            SELECT relname, seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname IN ('document_editors', 'log') ORDER BY relname
            """)
        try c.query("ROLLBACK")
        XCTAssertEqual(scans.count, 2)
        for i in 0..<scans.count {
            XCTAssertEqual(scans[i, 1], "0", "\(scans[i, 0] ?? "?") was scanned whole by an append planned on a young log")
        }
        // The entry before the document's first new one, looked up once (it was twice: the lookup's copies in the WHERE clause).
        XCTAssertEqual(scans[1, 0], "log")
        XCTAssertEqual(scans[1, 2], "1", "index probes of log for one document's append")
    }

    /// The plan is made once, on the first run (as a writer's prepared
    /// statement's generic plan is), then the log grows.
    private func check(youngDocuments: Int) throws {
        let db = try TestDatabase()
        let c = db.db
        // Small and analyzed: documents of one entry each.
        if youngDocuments > 0 { try Self.fill(c, smallDocuments: youngDocuments) }
        try c.query("ANALYZE log")
        // Prepared and run once now; the plan made then is kept.
        try c.query("SET plan_cache_mode = force_generic_plan")
        try c.query("PREPARE append AS " + LogRows.appendSQL)
        func batch(_ doc: String, seq: Int64) -> String { Self.execute(doc, seq: seq, tx: "again", base: 0, checkDuplicates: true) }
        try c.query(batch("nowhere", seq: 1))
        // Then one document grows long (as a busy one does).
        try Self.fill(c, busyEntries: 100_000)
        let plan = try XCTUnwrap(c.query("EXPLAIN (FORMAT JSON) " + batch("busy", seq: 100_001))[0, 0])
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

    private static let zero = "decode(repeat('00', 32), 'hex')"

    /// One entry of `doc` at `seq` through the prepared append statement, as `EXECUTE`.
    private static func execute(_ doc: String, seq: Int64, tx: String, base: Int64, checkDuplicates: Bool) -> String {
        let one = "ARRAY['\(doc)']"
        return "EXECUTE append(\(one), ARRAY[\(seq - 1)::bigint], ARRAY[\(zero)], ARRAY[\(seq)::bigint], ARRAY[\(seq)::bigint], ARRAY[\(zero)], "
            + "\(one), ARRAY[\(seq)::bigint], ARRAY[\(seq)::bigint], ARRAY['event'], ARRAY[gen_random_uuid()], ARRAY[1::bigint], ARRAY['c'], "
            + "ARRAY['edit'], ARRAY['g'], ARRAY[NULL::text], ARRAY['\(tx)'], ARRAY['d'], ARRAY[\(base)::bigint], ARRAY['[]'], ARRAY['[]'], "
            + "ARRAY[NULL::text], ARRAY[NULL::text], ARRAY[0::bigint], ARRAY[\(zero)], ARRAY[\(checkDuplicates)])"
    }

    /// Rows straight into `log`, past the append path's triggers (only their number matters here):
    /// `smallDocuments` documents of one entry each, or one document `busy` of `busyEntries`.
    private static func fill(_ c: Database, smallDocuments: Int = 0, busyEntries: Int = 0) throws {
        try c.query("SET session_replication_role = replica")
        let columns = "INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, tx, tx_digest, base, ops, inverse, time, hash)"
        if smallDocuments > 0 {
            try c.query("""
                \(columns) SELECT 'small' || g, 1, 1, 'event', gen_random_uuid(), 1, 'c', 'edit', 'g', 'tx' || g, 'd', 0, '[]', '[]', now(), \(zero)
                FROM generate_series(1, \(smallDocuments)) g
                """)
        }
        if busyEntries > 0 {
            try c.query("""
                \(columns) SELECT 'busy', g, g, 'event', gen_random_uuid(), 1, 'c', 'edit', 'g', 'tx' || g, 'd', g - 1, '[]', '[]', now(), \(zero)
                FROM generate_series(1, \(busyEntries)) g
                """)
        }
        try c.query("SET session_replication_role = DEFAULT")
    }
}
