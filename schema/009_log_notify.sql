-- Every committed change of a document's head is announced on `rewind_log`,
-- in the same transaction as the entries (so a notice never arrives before
-- what it points at is visible, and a rolled-back append announces nothing).
-- The payload is a pointer, never the entries (which may exceed NOTIFY's
-- 8000 bytes): "<seq> <version> <doc>", the head after the change. Instances
-- that have the document loaded read the entries after their own head from
-- the log. A trigger, not the append statement, so any writer (another
-- instance, `rewind admin import`) is heard the same way.
CREATE FUNCTION rewind_notify_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rewind_log', NEW.seq || ' ' || NEW.head || ' ' || NEW.id);
    RETURN NULL;
END $$;

CREATE TRIGGER documents_notify_log
    AFTER UPDATE OF seq ON documents
    FOR EACH ROW WHEN (NEW.seq IS DISTINCT FROM OLD.seq)
    EXECUTE FUNCTION rewind_notify_log();
