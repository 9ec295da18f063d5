import RewindCore

/// The statement `rewind admin import` appends a batch of one document's
/// entries with: the head is claimed first — `seq` and `head_hash` still
/// what this import left them, as `LogRows.appendSQL` claims them for the
/// server — and the rows are inserted only if it was, so the log's
/// per-statement trigger (`rewind_log_check`) finds the head at the last of
/// them. The time goes in to the microsecond, as it was stored at the source.
/// Every user with an event in the batch is noted as an editor of the
/// document at their last one (schema/025: the writers note editors, no
/// trigger does).
enum ImportRows {
    static let appendSQL = """
        WITH claim AS (
            UPDATE documents SET seq = $2, head = $3, head_hash = $4
            WHERE id = $1 AND seq = $5 AND head_hash = $6
            RETURNING id, pg_notify('rewind_log', seq || ' ' || head || ' ' || id)
        ), rows AS (
            SELECT * FROM unnest($7::bigint[], $8::bigint[], $9::text[], $10::uuid[], $11::bigint[], $12::text[], $13::text[], $14::text[],
                                 $15::text[], $16::text[], $17::text[], $18::bigint[], $19::text[], $20::text[], $21::text[], $22::text[],
                                 $23::bigint[], $24::bytea[])
                AS r(seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse, refers, meta,
                     time_us, hash)
        ), ins AS (
            INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse,
                             refers, meta, time, hash)
            SELECT $1, r.seq, r.version, r.entry, r.id, r.user_id, r.client, r.kind, r.grp, r.action, r.tx, r.tx_digest, r.base,
                   r.ops, r.inverse, r.refers, r.meta, 'epoch'::timestamptz + r.time_us * interval '1 microsecond', r.hash
            FROM rows r
            WHERE EXISTS (SELECT 1 FROM claim)
            RETURNING 1
        ), noted AS (
            INSERT INTO document_editors AS e (doc, user_id, last_edit)
            SELECT $1, r.user_id, max('epoch'::timestamptz + r.time_us * interval '1 microsecond') FROM rows r
            WHERE r.entry = 'event' AND EXISTS (SELECT 1 FROM claim)
            GROUP BY r.user_id ORDER BY r.user_id
            ON CONFLICT (doc, user_id) DO UPDATE SET last_edit = greatest(e.last_edit, EXCLUDED.last_edit)
            RETURNING pg_notify('rewind_editors', e.user_id || ' ' || e.doc)
        )
        SELECT (SELECT count(*) FROM claim), (SELECT count(*) FROM ins)
        """

    /// Answers one row: documents claimed (1 or 0) and entries inserted.
    static func append(doc: String, expectedSeq: Int64, expectedHash: [UInt8], _ entries: [LogExport.Entry]) -> PipelineConnection.Statement {
        let n = entries.count
        var seq = BinaryArray(.int8), version = BinaryArray(.int8), entry = BinaryArray(.text), id = BinaryArray(.uuid, capacity: n * 20)
        var user = BinaryArray(.int8), client = BinaryArray(.text), kind = BinaryArray(.text), grp = BinaryArray(.text, capacity: n * 40)
        var action = BinaryArray(.text), tx = BinaryArray(.text), digest = BinaryArray(.text), base = BinaryArray(.int8)
        var ops = BinaryArray(.text, capacity: n * 64), inverse = BinaryArray(.text, capacity: n * 64), refers = BinaryArray(.text)
        var meta = BinaryArray(.text), time = BinaryArray(.int8), hash = BinaryArray(.bytea, capacity: n * 36)
        for e in entries {
            let r = e.row
            seq.append(r.seq); version.append(r.version); entry.append(r.entry); id.append(uuid: r.id); user.append(r.userID)
            client.append(r.client); kind.append(r.kind); grp.append(r.group); action.append(r.action); tx.append(r.tx)
            digest.append(r.txDigest); base.append(r.base); ops.append(r.ops); inverse.append(r.inverse); refers.append(r.refers)
            meta.append(r.meta); time.append(e.timeMicros); hash.append(bytes: r.hash)
        }
        let last = entries.last?.row
        let head: [PipelineConnection.Statement.Param] = [
            .text(doc), .text(String(last?.seq ?? expectedSeq)), .text(String(last?.version ?? 0)),
            .text("\\x" + Hex.string(last?.hash ?? expectedHash)), .text(String(expectedSeq)), .text("\\x" + Hex.string(expectedHash)),
        ]
        let arrays = [seq.finish(), version.finish(), entry.finish(), id.finish(), user.finish(), client.finish(), kind.finish(),
                      grp.finish(), action.finish(), tx.finish(), digest.finish(), base.finish(), ops.finish(), inverse.finish(),
                      refers.finish(), meta.finish(), time.finish(), hash.finish()]
        return PipelineConnection.Statement(appendSQL, values: head + arrays.map { .binary($0) })
    }
}
