import RewindCore

/// The `log` table: the one place that knows its columns, how entries are
/// read back, and the statement that appends a batch.
enum LogRows {
    static let select = """
        SELECT l.seq, l.version, l.entry, l.id, l.user_id, u.name, l.client, l.kind, l.grp, l.action, l.tx, l.tx_digest,
               l.base, l.ops, l.inverse, l.refers, l.meta, (extract(epoch FROM l.time) * 1000)::bigint, l.hash
        FROM log l JOIN users u ON u.id = l.user_id
        """

    /// Entries of `doc` with `afterSeq < seq <= toSeq`, in order, at most `limit`.
    static func range(doc: String, afterSeq: Int64, toSeq: Int64, limit: Int) -> PipelineConnection.Statement {
        .init(select + " WHERE l.doc = $1 AND l.seq > $2 AND l.seq <= $3 ORDER BY l.seq LIMIT $4",
              [doc, String(afterSeq), String(toSeq), String(limit)])
    }

    /// Events of `doc` after version `after` (up to `to`), oldest first: catch-up for `open` with `since`.
    static func events(doc: String, after: Int64, to: Int64?, limit: Int) -> PipelineConnection.Statement {
        .init(select + " WHERE l.doc = $1 AND l.entry = 'event' AND l.version > $2 AND l.version <= $3 ORDER BY l.version LIMIT $4",
              [doc, String(after), String(to ?? Int64.max), String(limit)])
    }

    /// What a snapshot taken at entry `toSeq` needs: the entries from event
    /// `fromVersion` up to and including that entry (just that entry when no event is needed).
    static func tail(doc: String, fromVersion: Int64, toSeq: Int64) -> PipelineConnection.Statement {
        .init(select + """
             WHERE l.doc = $1 AND l.seq <= $3
               AND l.seq >= coalesce((SELECT seq FROM log WHERE doc = $1 AND entry = 'event' AND version = $2), $3)
             ORDER BY l.seq
            """, [doc, String(fromVersion), String(toSeq)])
    }

    /// Entries of `doc` with `afterSeq < seq <= toSeq` as stored: every
    /// column as text, nothing parsed — what checking the hash chain needs.
    static func stored(doc: String, afterSeq: Int64, toSeq: Int64, limit: Int) -> PipelineConnection.Statement {
        .init("""
            SELECT seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse, refers, meta,
                   (extract(epoch FROM time) * 1000)::bigint, hash
            FROM log WHERE doc = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4
            """, [doc, String(afterSeq), String(toSeq), String(limit)])
    }

    static func decodeStored(doc: String, _ rows: Rows) throws(RewindError) -> [LogRow] {
        try rows.values.map { (r: [String?]) throws(RewindError) -> LogRow in
            guard let seq = r[0].flatMap({ Int64($0) }), let version = r[1].flatMap({ Int64($0) }), let entry = r[2], let id = r[3],
                  let user = r[4].flatMap({ Int64($0) }), let client = r[5], let kind = r[6],
                  let time = r[16].flatMap({ Int64($0) }), let hash = r[17].flatMap(bytea)
            else { throw RewindError(.internal, "malformed log row in \(doc)") }
            return LogRow(doc: doc, seq: seq, version: version, entry: entry, id: id, userID: user, client: client, kind: kind,
                          group: r[7], action: r[8], tx: r[9], txDigest: r[10], base: r[11].flatMap { Int64($0) }, ops: r[12],
                          inverse: r[13], refers: r[14], meta: r[15], time: time, hash: hash)
        }
    }

    /// The positions (`seq`) of the events at versions `first` and `last` of `doc`.
    static func seqs(doc: String, first: Int64, last: Int64) -> PipelineConnection.Statement {
        .init("SELECT version, seq FROM log WHERE doc = $1 AND entry = 'event' AND version IN ($2, $3)",
              [doc, String(first), String(last)])
    }

    /// Entries as read with `select`; sealed ops and inverse are opened with `cipher`.
    static func decode(doc: String, _ rows: Rows, cipher: DocumentCipher?) throws(RewindError) -> [LogEntry] {
        try decode(doc: doc, rows.values, count: rows.count, cipher: cipher)
    }

    /// How far the entries of a page chain to the entry before them in the
    /// page, checked as they are decoded (`LogPageReader`'s `checksLinks`).
    struct Links {
        /// Entries `1..<linked` were checked against the entry before them (the first never is).
        var linked = 0
        /// Entry `linked` does not chain to the one before it (nil: not checked, or none).
        /// It may be just past the entries: a row whose sealed text does not open
        /// there either is not decoded, and the page ends before it.
        var broken: RewindError?
    }

    /// The same, read in place from the result (a log page: no `String` per
    /// cell); with `links`, each entry's hash is checked against the one
    /// before it as it is made (checking them afterwards copied each entry
    /// out of the page, retaining every one of its strings).
    static func decode(doc: String, _ rows: ResultRows, cipher: DocumentCipher?, links: inout Links?) throws(RewindError) -> [LogEntry] {
        try decode(doc: doc, (0..<rows.count).lazy.map { rows[$0] }, count: rows.count, cipher: cipher, links: &links)
    }

    private static func decode<Cells: LogCells>(doc: String, _ rows: some Sequence<Cells>, count: Int,
                                                cipher: DocumentCipher?) throws(RewindError) -> [LogEntry] {
        var links: Links?
        return try decode(doc: doc, rows, count: count, cipher: cipher, links: &links)
    }

    private static func decode<Cells: LogCells>(doc: String, _ rows: some Sequence<Cells>, count: Int, cipher: DocumentCipher?,
                                                links: inout Links?) throws(RewindError) -> [LogEntry] {
        var out: [LogEntry] = []
        out.reserveCapacity(count)
        var linking = links != nil
        var before: (seq: Int64, hash: [UInt8]) = (0, [])
        /// Checks the entry just made (`k`th of the page) against the one before it; `expected`: its hash after a given one.
        func link(_ seq: Int64, _ hash: [UInt8], expected: ([UInt8]) -> [UInt8], entry: () -> LogEntry) {
            defer { before = (seq, hash) }
            guard linking else { return }
            if out.isEmpty { links!.linked = 1; return }
            guard seq == before.seq + 1 else { linking = false; return }  // a gap: the caller names it
            guard expected(before.hash) == hash else {
                do throws(RewindError) { try DocumentLedger.checkChain(entry(), doc: doc, after: before.hash) } catch { links!.broken = error }
                linking = false
                return
            }
            links!.linked = out.count + 1
        }
        for r in rows {
            guard let seq = r.int(0), let version = r.int(1), let entry = r.text(2), let id = r.text(3),
                  let user = r.int(4), let name = r.text(5), let client = r.text(6), let kind = r.text(7),
                  let time = r.int(17), let hash = r.hash(18)
            else { throw RewindError(.internal, "malformed log row in \(doc)") }
            if entry == "event" {
                guard let k = EventKind(rawValue: kind), let grp = r.text(8), let tx = r.text(10), let digest = r.text(11),
                      let base = r.int(12), let opsText = r.text(13), let invText = r.text(14)
                else { throw RewindError(.internal, "malformed event \(version) in \(doc)") }
                var meta = EventMeta()
                let metaText = r.text(16)
                if let m = metaText {
                    do { meta = try EventMeta.parse(try JSONParser.parse(m, maxDepth: 8)) } catch {
                        throw RewindError(.internal, "event \(version) of \(doc) has meta that does not parse: \(error)")
                    }
                }
                /// Why this row's content did not open, said of its entry: a change the
                /// chain shows (the row does not chain to the one before it in the page)
                /// as the chain break it is (`breaks`); else the sealed text does not
                /// belong here (moved from another entry, and the chain re-sealed).
                func unopened(_ error: RewindError) -> (error: RewindError, breaks: Bool) {
                    if !out.isEmpty, seq == before.seq + 1 {
                        let row = LogRow(doc: doc, seq: seq, version: version, entry: entry, id: id, userID: user, client: client, kind: kind,
                                         group: grp, action: r.text(9), tx: tx, txDigest: digest, base: base, ops: opsText, inverse: invText,
                                         refers: r.text(15), meta: metaText, time: time, hash: hash)
                        if row.chained(after: before.hash) != hash { return (DocumentLedger.chainBreak(doc: doc, row), true) }
                    }
                    return (about(error, seq: seq, version: version), false)
                }
                let ops: [Op], inverse: [Op], plainOps: String
                if DocumentCipher.isSealed(opsText), let cipher, invText == DocumentCipher.inverseInOps {
                    // Parsed from the opened bytes themselves: no text made of them but the ops' (for the wire).
                    // Opened at this row's place: sealed text moved here from another entry does not open.
                    let bytes: [UInt8], nl: Int
                    do { (bytes, nl) = try cipher.openEntryBytes(opsText, seq: seq, id: id) } catch {
                        let why = unopened(error)
                        // Checking links, a break is handed over as any other is, the page ending before it.
                        guard why.breaks, links != nil, linking else { throw why.error }
                        links!.linked = out.count
                        links!.broken = why.error
                        return out
                    }
                    (ops, inverse) = try bytes.withUnsafeBufferPointer { (b) throws(RewindError) -> ([Op], [Op]) in
                        (try parseOps(UnsafeBufferPointer(rebasing: b[..<nl]), doc: doc, version: version),
                         try parseOps(UnsafeBufferPointer(rebasing: b[(nl + 1)...]), doc: doc, version: version))
                    }
                    plainOps = String(decoding: bytes[..<nl], as: UTF8.self)
                } else {
                    let plain: (ops: String, inverse: String)
                    do { plain = try DocumentCipher.plain(ops: opsText, inverse: invText, cipher: cipher, doc: doc, seq: seq, id: id) } catch {
                        throw unopened(error).error
                    }
                    (ops, inverse, plainOps) = (try parseOps(plain.ops, doc: doc, version: version),
                                                try parseOps(plain.inverse, doc: doc, version: version), plain.ops)
                }
                let event = Event(doc: doc, version: version, id: id, tx: tx, txDigest: digest, userID: user, userName: name,
                                  client: client, group: grp, kind: k, action: r.text(9), base: base, ops: ops, inverse: inverse,
                                  refers: r.text(15), time: time, meta: meta, seq: seq, hash: hash,
                                  stored: .init(ops: opsText, inverse: invText, meta: metaText, plainOps: plainOps))
                link(seq, hash, expected: { event.chainHash(after: $0) }, entry: { .event(event) })
                out.append(.event(event))
            } else {
                guard let k = GroupMark.Kind(rawValue: kind) else { throw RewindError(.internal, "malformed mark \(seq) in \(doc)") }
                var scope: Key?
                var selection: Selection?
                let metaText = r.text(16)
                if let m = metaText {
                    do {
                        let o = try JSONParser.parse(m, maxDepth: 8).objectValue
                        scope = o?["scope"]?.stringValue.map { Key($0) }
                        selection = try Selection.parse(o?["selection"])
                    } catch {
                        throw RewindError(.internal, "mark \(seq) of \(doc) has meta that does not parse: \(error)")
                    }
                }
                var mark = GroupMark(n: seq - version, afterVersion: version, id: id, userID: user, client: client, kind: k,
                                     group: r.text(8), scope: scope, action: r.text(9), selection: selection, tx: r.text(10), time: time)
                mark.hash = hash
                mark.storedMeta = metaText
                link(seq, hash, expected: { mark.row(doc: doc).chained(after: $0) }, entry: { .mark(mark) })
                out.append(.mark(mark))
            }
        }
        return out
    }

    /// `error` with the entry it is about (details `seq`, `version`): a page
    /// fails as a whole, and `verify` names the entry from these.
    private static func about(_ error: RewindError, seq: Int64, version: Int64) -> RewindError {
        var members = error.details?.objectValue?.members.filter { $0.key != "seq" && $0.key != "version" } ?? []
        members += [(key: "seq", value: .int(seq)), (key: "version", value: .int(version))]
        return RewindError(error.code, error.message, details: .object(JSONObject(members)))
    }

    /// `\x0123…` (bytea in text form) as bytes.
    static func bytea(_ s: String) -> [UInt8]? {
        guard s.hasPrefix("\\x") else { return nil }
        return Hex.bytes(s, from: 2)
    }

    /// The same as bytes, for a reader that needs no String of them.
    static func openSnapshotBytes(_ stored: String, doc: String, cipher: DocumentCipher?) throws(RewindError) -> [UInt8] {
        guard DocumentCipher.isSealed(stored) else { return Array(stored.utf8) }
        guard let cipher else { throw DocumentCipher.contentWithoutKey(doc) }
        return try cipher.openSnapshotBytes(stored)
    }

    /// Whether a snapshot's stored text is the one its digest was taken of (hashed in place).
    static func matches(_ stored: String, digest: [UInt8]) -> Bool {
        var stored = stored
        return stored.withUTF8 { SHA256.hash(UnsafeRawBufferPointer($0)) } == digest
    }

    /// A snapshot's stored text as plain JSON text (opened when sealed).
    static func openSnapshot(_ stored: String, doc: String, cipher: DocumentCipher?) throws(RewindError) -> String {
        guard DocumentCipher.isSealed(stored) else { return stored }
        guard let cipher else { throw DocumentCipher.contentWithoutKey(doc) }
        return try cipher.open(stored, .snapshot)
    }

    private static func parseOps(_ bytes: UnsafeBufferPointer<UInt8>, doc: String, version: Int64) throws(RewindError) -> [Op] {
        if let ops = Op.readCanonicalList(bytes, limits: .unbounded) { return ops }
        do {
            return try Op.parseList(try JSONParser.parse(bytes, maxDepth: Limits.unbounded.maxJSONDepth), limits: .unbounded)
        } catch {
            throw RewindError(.internal, "event \(version) of \(doc) holds ops that do not parse: \(error)")
        }
    }

    private static func parseOps(_ text: String, doc: String, version: Int64) throws(RewindError) -> [Op] {
        var text = text
        return try text.withUTF8 { bytes in Result { () throws(RewindError) in try parseOps(bytes, doc: doc, version: version) } }.get()
    }

    // MARK: Appending

    /// One document's part of a batch: its head before and after, and its entries in order.
    struct Claim {
        var doc: String
        var expectedSeq: Int64
        /// The hash of the entry the first row follows (empty at the start of the log).
        var expectedHash: [UInt8]
        var rows: [LogRow] = []
        /// Also look for these transactions in the log: the writer's ledger
        /// cannot tell a new one from a repeat it has forgotten, or the
        /// unique indexes refused the batch (`appendCheckedSQL`).
        var checkDuplicates = false
        /// Users whose edits of `doc` in this batch its writer notes in
        /// `document_editors` (`EditorNotes`), with the time of their edit.
        var editors: [(user: Int64, timeMs: Int64)] = []
    }

    /// Appends the entries of many documents in one statement: each
    /// document's head is claimed (`seq` and `head_hash` still what the writer saw); only the
    /// entries of claimed documents are inserted. Answers one row per
    /// document — `doc, claimed, seq` (the head as the statement found it;
    /// null: no such document).
    ///
    /// This is the writers' prepared statement, kept to its generic plan
    /// (`writerSettings`: planning it for each batch was a large share of a
    /// busy document's time), and it reads no table itself: a generic plan is
    /// made once, on a new database while every table is a page or two, and
    /// kept however they grow. A lookup in `log` planned then was a
    /// sequential scan (issue 44: 870 ms a batch at 150,000 entries); the
    /// heads are claimed by `rewind_claim_heads` (schema/017), whose plans
    /// can only probe `documents` by key. The unique indexes on `(doc,
    /// user_id, tx)` (schema/008) still refuse a transaction appended twice;
    /// a batch they refuse is sent again as `appendCheckedSQL`, which finds
    /// and reports the repeat.
    ///
    /// Each row's position (schema/021) is written here rather than by the
    /// column's default — the transaction's id and the row's rank in the
    /// batch's arrays (`WITH ORDINALITY`), which hold each document's rows
    /// together and in `seq` order (`append(_:)`), so that a document's
    /// positions grow with its seq without a sort — one INSERT a transaction.
    ///
    /// The rows are inserted without joining them to the claims when every
    /// document was claimed, which is nearly always (a claim fails only when
    /// another instance moved the head): `bool_and` is computed once, and
    /// the claimed documents are hashed only when one was not. Joined to
    /// the claims (a semi-join) the generic plan hashed every row, ops and
    /// all, for each batch (`pgwork --one-doc --per 25`: 4.6 % of an entry's
    /// instructions).
    ///
    /// `$26`–`$28`: the editors the writer notes with this batch (`notedSQL`,
    /// schema/025). A batch that notes none — a busy writer's usual batch,
    /// each pair being noted once in 5 seconds — is sent as
    /// `appendWithoutNotesSQL`: an empty upsert still costs its setting-up
    /// (its table, its indexes, its arbiter) every time.
    static let appendSQL = appendSQL(noting: true)
    static let appendWithoutNotesSQL = appendSQL(noting: false)

    private static func appendSQL(noting: Bool) -> String {
        """
        WITH rows AS (
            SELECT * FROM unnest($7::text[], $8::bigint[], $9::bigint[], $10::text[], $11::uuid[], $12::bigint[], $13::text[],
                                 $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::bigint[], $20::text[],
                                 $21::text[], $22::text[], $23::text[], $24::bigint[], $25::bytea[]) WITH ORDINALITY
                AS r(doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse,
                     refers, meta, time_ms, hash, rank)
        ), claim AS (
            SELECT * FROM rewind_claim_heads($1::text[], $2::bigint[], $3::bytea[], $4::bigint[], $5::bigint[], $6::bytea[])
        ), ins AS (
            INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops,
                             inverse, refers, meta, time, hash, position)
            SELECT r.doc, r.seq, r.version, r.entry, r.id, r.user_id, r.client, r.kind, r.grp, r.action, r.tx, r.tx_digest,
                   r.base, r.ops, r.inverse, r.refers, r.meta, 'epoch'::timestamptz + r.time_ms * interval '1 millisecond', r.hash,
                   ((pg_current_xact_id()::text::bigint + (SELECT base FROM log_position_base)) << 20) | r.rank
            FROM rows r
            WHERE CASE WHEN (SELECT bool_and(claim.claimed) FROM claim) THEN true
                       ELSE r.doc IN (SELECT claim.doc FROM claim WHERE claim.claimed) END
        )\(noting ? noted : "")
        SELECT claim.doc, claim.claimed, claim.seq, NULL::bigint, NULL::text FROM claim
        """
    }

    private static let noted = """
        , noted AS (
            \(notedSQL(claimed: "SELECT claim.doc FROM claim WHERE claim.claimed", from: 26))
        )
        """

    /// The editors a batch notes (schema/025): arrays `$from` (doc),
    /// `$from+1` (user) and `$from+2` (time, ms) — one row per pair at most
    /// (`EditorNotes`; `DISTINCT ON` keeps the latest should a batch ever hold
    /// two) — of documents `claimed` lists, upserted in (doc, user) order so
    /// that two instances noting the same pairs cannot deadlock, `last_edit`
    /// never moved back, each row written announced on `rewind_editors`.
    /// Its RETURNING runs with the statement, whether or not it is read.
    static func notedSQL(claimed: String, from n: Int) -> String {
        """
        INSERT INTO document_editors AS e (doc, user_id, last_edit)
            SELECT DISTINCT ON (x.doc, x.user_id) x.doc, x.user_id, 'epoch'::timestamptz + x.time_ms * interval '1 millisecond'
            FROM unnest($\(n)::text[], $\(n + 1)::bigint[], $\(n + 2)::bigint[]) AS x(doc, user_id, time_ms)
            WHERE x.doc IN (\(claimed))
            ORDER BY x.doc, x.user_id, x.time_ms DESC
            ON CONFLICT (doc, user_id) DO UPDATE SET last_edit = greatest(e.last_edit, EXCLUDED.last_edit)
            RETURNING pg_notify('rewind_editors', e.user_id || ' ' || e.doc)
        """
    }

    /// What a writer's session is set to, on every (re)connect: the append
    /// statement keeps its generic plan (without this PostgreSQL judged it
    /// dearer than plans made for each batch's own arrays, and planned every
    /// batch: auto_explain, one busy document, 2,053 plans for 2,053
    /// batches). The statement triggers' PL/pgSQL plans are kept from their
    /// first run too; theirs price sequential scans out (schema/015).
    static let writerSettings = ["SET plan_cache_mode = force_generic_plan"]

    /// The same, also looking each flagged row's transaction up in the log
    /// (`Claim.checkDuplicates`): a document one of whose transactions the
    /// log already holds is not claimed, and the answer has one more row per
    /// such entry — `doc, false, seq` of the entry, `version` and `digest` of
    /// the one already in the log.
    ///
    /// Sent unnamed, so planned for each batch with the log's size as it is
    /// then; it is rare (an undo retried by `tx` after its ledger forgot it,
    /// a batch the unique indexes refused), so the planning costs little.
    /// Each lookup is a probe that can only go by the row's own values
    /// (`LATERAL … LIMIT 1`) and names the entry kind as a constant, once
    /// per kind: only then can the planner prove the partial indexes'
    /// predicates (`log_event_tx`, `log_mark_tx`, schema/008) — joined on
    /// `l.entry = r.entry` it could use neither and read the document's
    /// whole log through the primary key.
    static let appendCheckedSQL = """
        WITH rows AS (
            SELECT * FROM unnest($7::text[], $8::bigint[], $9::bigint[], $10::text[], $11::uuid[], $12::bigint[], $13::text[],
                                 $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::bigint[], $20::text[],
                                 $21::text[], $22::text[], $23::text[], $24::bigint[], $25::bytea[], $29::bool[]) WITH ORDINALITY
                AS r(doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse,
                     refers, meta, time_ms, hash, check_dup, rank)
        ), dup AS (
            SELECT r.doc, r.seq, l.version, l.tx_digest FROM rows r
            CROSS JOIN LATERAL (SELECT l.version, l.tx_digest FROM log l
                                WHERE l.doc = r.doc AND l.user_id = r.user_id AND l.tx = r.tx AND l.entry = 'event' LIMIT 1) l
            WHERE r.check_dup AND r.entry = 'event' AND r.tx IS NOT NULL
            UNION ALL
            SELECT r.doc, r.seq, l.version, l.tx_digest FROM rows r
            CROSS JOIN LATERAL (SELECT l.version, l.tx_digest FROM log l
                                WHERE l.doc = r.doc AND l.user_id = r.user_id AND l.tx = r.tx AND l.entry = 'mark' AND l.tx IS NOT NULL
                                LIMIT 1) l
            WHERE r.check_dup AND r.entry = 'mark' AND r.tx IS NOT NULL
        ), claim AS (
            UPDATE documents d SET seq = c.last_seq, head = c.last_version, head_hash = c.last_hash
            FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bigint[], $5::bigint[], $6::bytea[])
                AS c(doc, expected, expected_hash, last_seq, last_version, last_hash)
            WHERE d.id = c.doc AND d.seq = c.expected AND d.head_hash = c.expected_hash
              AND NOT EXISTS (SELECT 1 FROM dup WHERE dup.doc = c.doc)
            RETURNING d.id, pg_notify('rewind_log', d.seq || ' ' || d.head || ' ' || d.id)
        ), ins AS (
            INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops,
                             inverse, refers, meta, time, hash, position)
            SELECT r.doc, r.seq, r.version, r.entry, r.id, r.user_id, r.client, r.kind, r.grp, r.action, r.tx, r.tx_digest,
                   r.base, r.ops, r.inverse, r.refers, r.meta, 'epoch'::timestamptz + r.time_ms * interval '1 millisecond', r.hash,
                   ((pg_current_xact_id()::text::bigint + (SELECT base FROM log_position_base)) << 20) | r.rank
            FROM rows r WHERE r.doc IN (SELECT id FROM claim)
        ), noted AS (
            \(notedSQL(claimed: "SELECT id FROM claim", from: 26))
        )
        SELECT c.doc, c.doc IN (SELECT id FROM claim), d.seq, NULL::bigint, NULL::text
        FROM unnest($1::text[]) AS c(doc) LEFT JOIN documents d ON d.id = c.doc
        UNION ALL
        SELECT dup.doc, false, dup.seq, dup.version, dup.tx_digest FROM dup
        """

    /// The names `appendSQL` and `appendWithoutNotesSQL` are prepared under
    /// on every writer connection.
    static let appendName = "rewind_append_batch"
    static let appendWithoutNotesName = "rewind_append_batch_quiet"

    /// The unique indexes that refuse a transaction appended twice (schema/008).
    static func refusedARepeatedTransaction(_ f: SQLFailure) -> Bool {
        f.isUniqueViolation(of: "log_event_tx") || f.isUniqueViolation(of: "log_mark_tx")
    }

    /// The batch statement for `claims`: the writers' prepared one, or —
    /// when a claim asks for it — the one that looks transactions up.
    static func append(_ claims: [Claim]) -> PipelineConnection.Statement {
        let lookup = claims.contains { $0.checkDuplicates }
        let n = claims.reduce(0) { $0 + $1.rows.count }
        var cDoc = BinaryArray(.text), cExpected = BinaryArray(.int8), cSeq = BinaryArray(.int8), cVersion = BinaryArray(.int8)
        var cExpectedHash = BinaryArray(.bytea), cHash = BinaryArray(.bytea)
        var doc = BinaryArray(.text, capacity: n * 16), seq = BinaryArray(.int8, capacity: n * 12), version = BinaryArray(.int8, capacity: n * 12)
        var entry = BinaryArray(.text), id = BinaryArray(.uuid, capacity: n * 20), user = BinaryArray(.int8, capacity: n * 12)
        var client = BinaryArray(.text), kind = BinaryArray(.text), grp = BinaryArray(.text, capacity: n * 40)
        var action = BinaryArray(.text), tx = BinaryArray(.text), digest = BinaryArray(.text), base = BinaryArray(.int8)
        var ops = BinaryArray(.text, capacity: n * 64), inverse = BinaryArray(.text, capacity: n * 64), refers = BinaryArray(.text)
        var meta = BinaryArray(.text), time = BinaryArray(.int8), hash = BinaryArray(.bytea, capacity: n * 36)
        var eDoc = BinaryArray(.text), eUser = BinaryArray(.int8), eTime = BinaryArray(.int8)
        var check = [UInt8]()
        if lookup { check.reserveCapacity(n * 5) }
        var checkCount = 0
        // Rows are read where their arrays hold them: `for r in c.rows` (and
        // `c.rows.last`) copied each row, retaining and releasing every one of
        // its strings (callgrind: ~1,400 instructions a row).
        for c in claims {
            c.rows.withUnsafeBufferPointer { rows in
                guard !rows.isEmpty else { return }
                let last = rows.count - 1
                cDoc.append(c.doc)
                cExpected.append(c.expectedSeq)
                cExpectedHash.append(bytes: c.expectedHash)
                cSeq.append(rows[last].seq)
                cVersion.append(rows[last].version)
                cHash.append(bytes: rows[last].hash)
                for e in c.editors { eDoc.append(c.doc); eUser.append(e.user); eTime.append(e.timeMs) }
                for i in rows.indices {
                    doc.append(rows[i].doc); seq.append(rows[i].seq); version.append(rows[i].version); entry.append(rows[i].entry)
                    id.append(uuid: rows[i].id); user.append(rows[i].userID); client.append(rows[i].client); kind.append(rows[i].kind)
                    grp.append(rows[i].group); action.append(rows[i].action); tx.append(rows[i].tx); digest.append(rows[i].txDigest)
                    base.append(rows[i].base); ops.append(rows[i].ops); inverse.append(rows[i].inverse); refers.append(rows[i].refers)
                    meta.append(rows[i].meta); time.append(rows[i].time); hash.append(bytes: rows[i].hash)
                    if lookup {
                        check.append(0); check.append(0); check.append(0); check.append(1)  // length 1 (a literal array here is allocated per row)
                        check.append(c.checkDuplicates ? 1 : 0)
                        checkCount += 1
                    }
                }
            }
        }
        let arrays = [cDoc.finish(), cExpected.finish(), cExpectedHash.finish(), cSeq.finish(), cVersion.finish(), cHash.finish(),
                      doc.finish(), seq.finish(), version.finish(), entry.finish(), id.finish(), user.finish(), client.finish(), kind.finish(),
                      grp.finish(), action.finish(), tx.finish(), digest.finish(), base.finish(), ops.finish(), inverse.finish(),
                      refers.finish(), meta.finish(), time.finish(), hash.finish(), eDoc.finish(), eUser.finish(), eTime.finish()]
        guard lookup else {
            guard eDoc.isEmpty else {
                var s = PipelineConnection.Statement(appendSQL, values: arrays.map { .binary($0) })
                s.prepared = appendName
                return s
            }
            var s = PipelineConnection.Statement(appendWithoutNotesSQL, values: arrays.prefix(25).map { .binary($0) })
            s.prepared = appendWithoutNotesName
            return s
        }
        // bool[]: built by hand (element type 16, one byte per element).
        var checks: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 16]
        let k = UInt32(checkCount)
        checks += [UInt8(k >> 24), UInt8(truncatingIfNeeded: k >> 16), UInt8(truncatingIfNeeded: k >> 8), UInt8(truncatingIfNeeded: k), 0, 0, 0, 1]
        checks += check
        return PipelineConnection.Statement(appendCheckedSQL, values: arrays.map { .binary($0) } + [.binary(checks)])
    }

    /// The outcome of `append`, per document: claimed, or the head it found,
    /// plus the duplicates it found (by the seq of the entry that repeated one).
    struct Outcome {
        var claimed: Set<String> = []
        var heads: [String: Int64?] = [:]
        var duplicates: [String: [Int64: (version: Int64, digest: String?)]] = [:]
    }

    static func outcome(_ rows: Rows) -> Outcome {
        var o = Outcome()
        for r in rows.values {
            guard let doc = r[0] else { continue }
            if let v = r[3].flatMap({ Int64($0) }), let seq = r[2].flatMap({ Int64($0) }) {
                o.duplicates[doc, default: [:]][seq] = (version: v, digest: r[4])
            } else if r[1] == "t" {
                o.claimed.insert(doc)
            } else {
                o.heads[doc] = .some(r[2].flatMap { Int64($0) })
            }
        }
        return o
    }
}

/// A row of `LogRows.select`'s columns as `LogRows.decode` reads it: cells
/// as text (`Rows`), or read in place from the result (`ResultRows`).
protocol LogCells {
    func text(_ column: Int) -> String?
    func int(_ column: Int) -> Int64?
    /// A `bytea` cell (`\x0123…`) as bytes.
    func hash(_ column: Int) -> [UInt8]?
}

extension Array: LogCells where Element == String? {
    func text(_ column: Int) -> String? { self[column] }
    func int(_ column: Int) -> Int64? { self[column].flatMap { Int64($0) } }
    func hash(_ column: Int) -> [UInt8]? { self[column].flatMap(LogRows.bytea) }
}

extension ResultRows.Row: LogCells {
    func text(_ column: Int) -> String? { withBytes(column) { String(decoding: $0, as: UTF8.self) } }
    func int(_ column: Int) -> Int64? { withBytes(column) { Bytes.decimal($0) } ?? nil }
    func hash(_ column: Int) -> [UInt8]? {
        withBytes(column) { b in b.count >= 2 && b[0] == UInt8(ascii: "\\") && b[1] == UInt8(ascii: "x") ? Hex.bytes(b, from: 2) : nil } ?? nil
    }
}
