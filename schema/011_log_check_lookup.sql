-- The per-statement check of schema/008 looked up each document's stored
-- entry before its first new one with a join. Its plan is cached per session
-- and, made while the log was small, merge-joined on `doc` alone: every new
-- row was then compared with every stored entry of its document, so appending
-- batch after batch of one long document in one transaction cost the square
-- of its length (an import of 20,000 entries: 55 s instead of 2). The lookup
-- is now a subquery on the primary key (doc, seq), run only for a
-- document's first new row: one index probe per document per statement,
-- whatever the plan. The checks themselves are unchanged.
CREATE OR REPLACE FUNCTION rewind_log_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad text;
BEGIN
    SELECT n.doc INTO bad FROM (
        SELECT o.*, CASE WHEN o.prev_seq IS NULL AND o.seq > 1
                         THEN (SELECT p.version FROM log p WHERE p.doc = o.doc AND p.seq = o.seq - 1) END AS stored_version
        FROM (SELECT doc, seq, version, entry, lag(seq) OVER w AS prev_seq, lag(version) OVER w AS prev_version
              FROM new_rows WINDOW w AS (PARTITION BY doc ORDER BY seq)) o) n
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
