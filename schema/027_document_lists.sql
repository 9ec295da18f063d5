-- A user's documents, listed (PROTOCOL.md `list_docs`, `list_deleted`; the
-- web editor's home page): the ones they own are found by this index, the
-- ones shared with them by `access_user`. `owner` never changes, so the
-- claims' updates of `documents` stay HOT (no index they touch).
CREATE INDEX documents_owner ON documents (owner);

-- A document's title changed (`rename`): every instance pushes `renamed` to
-- the terminals that have it open there, and lists it again in quick
-- actions. Sent by the trigger, whoever renames (a server, SQL by hand), in
-- the same transaction.
CREATE FUNCTION rewind_notify_document_renamed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rewind_access', 'title:' || NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER documents_renamed AFTER UPDATE OF title ON documents
    FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title AND NEW.purged_at IS NULL)
    EXECUTE FUNCTION rewind_notify_document_renamed();
