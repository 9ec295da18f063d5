-- `document_editors` (schema/010) is kept by the statements that append, no
-- longer by a trigger on the log (issue 51). The trigger looked each appended
-- row's (document, user) up in `document_editors` to skip the ones written in
-- the last 5 seconds: one index probe per row for a table that a busy writer
-- rewrites once per 5 seconds at most. Under callgrind (a single-user backend,
-- 300 batches of ~29 documents, one entry each) it was 14 % of the
-- instructions PostgreSQL spent appending, ~53,000 a row; in the commit
-- benchmark (500 terminals) 5.6 µs of the ~53 µs of backend CPU a row.
--
-- Each writer now knows which (document, user) it noted less than 5 seconds
-- ago (RewindCore's EditorNotes) and sends only the others, in three arrays
-- beside the batch's rows (LogRows.appendSQL, appendCheckedSQL; ImportRows
-- notes every user of an imported batch). The rows are written and announced
-- on `rewind_editors` exactly as the trigger did: one upsert per statement,
-- rows locked in (doc, user) order, `last_edit` never moved back.
--
-- What changes: a row is rewritten when this writer has not noted the pair
-- for 5 seconds, not when the table says so, so several instances writing one
-- document each note it (one row write per instance per 5 s, at most), and a
-- direct INSERT into `log` (an operator's, by hand) is not noted. The log's
-- own guarantees (append-only, gapless, heads, one transaction per user and
-- document) never depended on this table.
DROP TRIGGER log_note_editors ON log;
DROP FUNCTION rewind_note_editors();

-- A batch with an entry of a user that does not exist is refused by the log's
-- check ("no user N"), as before; the editors' upsert in the same statement
-- would otherwise be refused first by this key, with a message that names a
-- table instead of the user. Checked at commit now, after the log's check.
ALTER TABLE document_editors ALTER CONSTRAINT document_editors_user_id_fkey DEFERRABLE INITIALLY DEFERRED;
