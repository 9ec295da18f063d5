-- The log's row checks move from CHECK constraints into the append's
-- statement trigger (issue 44). PostgreSQL reads a table's CHECK constraints
-- from their stored text and plans them again for every statement that
-- writes it (ExecRelCheck: stringToNode, then expression_planner); the log's
-- six, ~7,700 characters of stored expression, cost ~190,000 instructions a
-- batch whatever its size — a busy document's batch of 25 entries paid
-- ~7,400 instructions an entry for them (`scripts/bench/pgwork --one-doc`).
-- A PL/pgSQL trigger's queries are planned once per session. The checks are
-- the same conditions, tested on each new row of the statement (its
-- transition table) in the query that already reads them all for gaps and
-- versions, in a subquery below its window so that the rows it sorts stay
-- narrow; a row passes where its CHECK passed (a condition that is null, not
-- false, passes: `coalesce(…, true)`). Every INSERT into `log` fires the
-- trigger, as every INSERT checked the constraints; what the constraints
-- held and the trigger does not: rows written with `session_replication_role
-- = replica` (a superuser's, or a logical replica's apply), which skip
-- triggers. An UPDATE, DELETE or TRUNCATE is refused by log_append_only and
-- log_no_truncate, as before. DurabilityTests.testTheLogRefusesMalformedEntries.
ALTER TABLE log DROP CONSTRAINT log_check, DROP CONSTRAINT log_mark_kind, DROP CONSTRAINT log_entry_check,
    DROP CONSTRAINT log_hash_check, DROP CONSTRAINT log_seq_check, DROP CONSTRAINT log_version_check;

CREATE OR REPLACE FUNCTION rewind_log_check() RETURNS trigger LANGUAGE plpgsql
SET enable_seqscan = off AS $$
DECLARE
    bad text;
    bad_seq bigint;
    malformed boolean;
BEGIN
    SELECT n.doc, n.seq, n.ill_formed INTO bad, bad_seq, malformed FROM (
        SELECT o.*, CASE WHEN o.prev_seq IS NULL AND o.seq > 1
                         THEN (SELECT p.version FROM log p WHERE p.doc = o.doc AND p.seq = o.seq - 1) END AS stored_version
        FROM (SELECT doc, seq, version, entry, ill_formed, lag(seq) OVER w AS prev_seq, lag(version) OVER w AS prev_version
              FROM (SELECT doc, seq, version, entry,
                           NOT coalesce(seq > 0 AND version >= 0 AND entry IN ('event', 'mark') AND octet_length(hash) = 32
                               AND (entry = 'mark' OR (version > 0 AND kind IN ('edit', 'undo', 'redo', 'restore')
                                    AND grp IS NOT NULL AND tx <> '' AND tx_digest IS NOT NULL AND base >= 0 AND base < version
                                    AND ops IS NOT NULL AND inverse IS NOT NULL))
                               AND (entry = 'event' OR (kind IN ('close', 'rename', 'clear', 'levels')
                                    AND base IS NULL AND ops IS NULL)),
                               true) AS ill_formed
                    FROM new_rows OFFSET 0) r
              WINDOW w AS (PARTITION BY doc ORDER BY seq)) o
        OFFSET 0) n
    WHERE n.ill_formed OR CASE WHEN n.prev_seq IS NULL
               THEN (n.seq > 1 AND n.stored_version IS NULL)
                    OR n.version <> coalesce(n.stored_version, 0) + (n.entry = 'event')::int
               ELSE n.seq <> n.prev_seq + 1 OR n.version <> n.prev_version + (n.entry = 'event')::int END
    LIMIT 1;
    IF malformed THEN
        RAISE EXCEPTION 'entry % of % is not a well-formed log entry (its seq, version, entry, kind, hash or the columns its kind requires)',
            bad_seq, bad USING ERRCODE = 'check_violation';
    END IF;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'the log of % would have a gap or miscounted versions', bad USING ERRCODE = 'check_violation';
    END IF;
    SELECT m.doc INTO bad FROM (SELECT DISTINCT ON (doc) doc, seq, version, hash FROM new_rows ORDER BY doc, seq DESC) m
    LEFT JOIN documents d ON d.id = m.doc
    WHERE d.seq IS DISTINCT FROM m.seq OR d.head IS DISTINCT FROM m.version OR d.head_hash IS DISTINCT FROM m.hash
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'entries of % were appended past its claimed head', bad USING ERRCODE = 'check_violation';
    END IF;
    SELECT n.user_id::text INTO bad FROM (SELECT DISTINCT user_id FROM new_rows) n
    WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = n.user_id) LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'no user %', bad USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END $$;
