-- The heads a writer's batch claims, by a function whose every plan probes
-- `documents` by key. The writers' append statement (LogRows.appendSQL) is
-- prepared once per connection; PostgreSQL judged its generic plan dearer
-- than a plan made for each batch's own arrays (a generic plan assumes 100
-- rows an array), so it planned the statement again for every batch —
-- auto_explain during the commit benchmark, one busy document: 2,053 batches,
-- 2,053 plans, each with the arrays' real lengths. Told to keep its generic
-- plan (the writers' sessions now set plan_cache_mode = force_generic_plan),
-- the statement would have joined `documents` as planned on a new database:
-- a hash join over a sequential scan, every batch, however many documents
-- there are later. So the statement reads no table itself any more; its
-- claim is this function, planned with sequential scans, hash and merge
-- joins priced out: one index probe of `documents` per document of the
-- batch, whatever the plan and whenever it was made.
--
-- Answers one row per document of the batch: whether its head was claimed
-- (`seq` and `head_hash` still what the writer saw, then set to the batch's
-- last entry), and `seq` as the statement found it (null: no such document).
CREATE FUNCTION rewind_claim_heads(docs text[], expected bigint[], expected_hash bytea[],
                                   last_seq bigint[], last_version bigint[], last_hash bytea[])
    RETURNS TABLE (doc text, claimed boolean, seq bigint)
    LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    -- Priced out, not removed: a plan with nothing else costs over jit_above_cost,
    -- and a just-in-time compilation (~140 ms) per batch is what that would add.
    SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH c AS (
        SELECT * FROM unnest(docs, expected, expected_hash, last_seq, last_version, last_hash)
            AS c(doc, expected, expected_hash, last_seq, last_version, last_hash)
    ), up AS (
        UPDATE documents d SET seq = c.last_seq, head = c.last_version, head_hash = c.last_hash
        FROM c WHERE d.id = c.doc AND d.seq = c.expected AND d.head_hash = c.expected_hash
        RETURNING d.id
    )
    SELECT c.doc, c.doc IN (SELECT up.id FROM up), d.seq FROM c LEFT JOIN documents d ON d.id = c.doc;
END $$;

-- Settings made by a function's SET clauses hold for the triggers its
-- statements fire: the UPDATE above fires `documents_notify_log`, whose join
-- of the transition tables already prices nested loops out (schema/016).
-- With hash and merge joins priced out as well, every way to join cost over
-- jit_above_cost and each batch paid a just-in-time compilation (~140 ms:
-- 233 commits/s where 10,000 were made). It names the ways it joins by.
ALTER FUNCTION rewind_notify_log() SET enable_hashjoin = on;
ALTER FUNCTION rewind_notify_log() SET enable_mergejoin = on;
ALTER FUNCTION rewind_notify_log() SET jit = off;
