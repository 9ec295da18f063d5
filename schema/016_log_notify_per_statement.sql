-- The `rewind_log` notices (009) are sent by one trigger call per statement
-- instead of one per document row: a batch of the server's appends claims the
-- heads of up to hundreds of documents in one UPDATE, and a PL/pgSQL call per
-- row was ~12 % of the backend's time for each batch at 500 terminals on
-- their own documents (`track_functions`: ~6 µs a call). Commit benchmark, 500
-- terminals: ~49 → ~42.5 µs of backend CPU a row, +9 % commits/s. The notices are the
-- same: one per document whose `seq` changed, "<seq> <version> <doc>", on
-- `rewind_log`, in the same transaction (an instance of an older release reads
-- them as before). A statement trigger with transition tables cannot name a
-- column (`UPDATE OF seq`): it runs for every UPDATE of `documents`, and the
-- rows whose `seq` did not change (a title, a deletion) announce nothing.
DROP TRIGGER documents_notify_log ON documents;

CREATE OR REPLACE FUNCTION rewind_notify_log() RETURNS trigger LANGUAGE plpgsql
    -- Transition tables have no statistics: without this a batch's hundreds
    -- of rows could be paired by a nested loop (every old row for every new one).
    SET enable_nestloop TO off
    AS $$
BEGIN
    PERFORM pg_notify('rewind_log', n.seq || ' ' || n.head || ' ' || n.id)
    FROM new_docs n JOIN old_docs o ON o.id = n.id
    WHERE n.seq IS DISTINCT FROM o.seq;
    RETURN NULL;
END $$;

CREATE TRIGGER documents_notify_log
    AFTER UPDATE ON documents
    REFERENCING OLD TABLE AS old_docs NEW TABLE AS new_docs
    FOR EACH STATEMENT EXECUTE FUNCTION rewind_notify_log();
