-- The `rewind_log` notices ("<seq> <version> <doc>", one per document whose
-- head moved, in the moving transaction) are sent by the claims that move the
-- heads, from their UPDATE's RETURNING, no longer by a statement trigger on
-- `documents` (schema/016; issue 51). The trigger kept every updated row
-- twice (its old and new transition tables) and joined them to find the rows
-- whose `seq` changed: 11,287 instructions an appended entry of ~292,000
-- (`scripts/bench/pgwork --split`). A claim knows its rows moved.
--
-- The claims are: `rewind_claim_heads` (the writers' batches), the writers'
-- statement that also looks transactions up (LogRows.appendCheckedSQL), and
-- `rewind admin import` (ImportRows); each says so in its RETURNING. What
-- changes: a head moved by hand (an UPDATE of `documents.seq` outside these)
-- is no longer announced; running instances learn of it at the next notice
-- of that document, or when it is next opened.
DROP TRIGGER documents_notify_log ON documents;
DROP FUNCTION rewind_notify_log();

CREATE OR REPLACE FUNCTION rewind_claim_heads(docs text[], expected bigint[], expected_hash bytea[],
                                              last_seq bigint[], last_version bigint[], last_hash bytea[])
    RETURNS TABLE (doc text, claimed boolean, seq bigint)
    LANGUAGE plpgsql
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
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
        RETURNING d.id, pg_notify('rewind_log', d.seq || ' ' || d.head || ' ' || d.id)
    )
    SELECT c.doc, c.doc IN (SELECT up.id FROM up), d.seq FROM c LEFT JOIN documents d ON d.id = c.doc;
END $$;
