-- The append's statement triggers (schema/008, 010, 011) look rows up by
-- key: the entry before a document's first new one (primary key (doc, seq)),
-- the document's head, a (doc, user) row of `document_editors`. PL/pgSQL
-- plans each of their queries once per session, the first time the trigger
-- fires; on a young database those tables are a page or two and a scan is
-- the cheaper plan, so that is the plan a writer session kept until
-- autovacuum next analyzed the table — and each batch read the whole of
-- `log` twice per document in it, and all of `document_editors` into a
-- hash. auto_explain during scripts/bench/commit: on a 5,000-entry log the
-- check took 3.6–13 ms a batch, its subplans each discarding up to 4,878
-- rows (schema/011's "one index probe per document per statement, whatever
-- the plan" held for the plan it meant, not for the one PostgreSQL made).
-- With sequential scans priced out inside these two functions, their plans
-- are index probes whenever they are made (new rows still come from the
-- transition table). PlanStabilityTests.testTheAppendTriggersProbeByKeyOnceTheLogHasGrown.
--
-- And the lookup ran twice per document: its result is tested twice in the
-- WHERE clause, and with the subquery flattened each test carried its own
-- copy (SubPlan 1 and SubPlan 2, 396 probes for a batch of 198 documents).
-- OFFSET 0 keeps the subquery whole, so it is looked up once.
ALTER FUNCTION rewind_note_editors() SET enable_seqscan = off;

CREATE OR REPLACE FUNCTION rewind_log_check() RETURNS trigger LANGUAGE plpgsql
SET enable_seqscan = off AS $$
DECLARE
    bad text;
BEGIN
    SELECT n.doc INTO bad FROM (
        SELECT o.*, CASE WHEN o.prev_seq IS NULL AND o.seq > 1
                         THEN (SELECT p.version FROM log p WHERE p.doc = o.doc AND p.seq = o.seq - 1) END AS stored_version
        FROM (SELECT doc, seq, version, entry, lag(seq) OVER w AS prev_seq, lag(version) OVER w AS prev_version
              FROM new_rows WINDOW w AS (PARTITION BY doc ORDER BY seq)) o
        OFFSET 0) n
    WHERE CASE WHEN n.prev_seq IS NULL
               THEN (n.seq > 1 AND n.stored_version IS NULL)
                    OR n.version <> coalesce(n.stored_version, 0) + (n.entry = 'event')::int
               ELSE n.seq <> n.prev_seq + 1 OR n.version <> n.prev_version + (n.entry = 'event')::int END
    LIMIT 1;
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
