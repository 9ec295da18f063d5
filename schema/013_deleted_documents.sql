-- Deleting a document (PROTOCOL "delete_doc", SPEC section 15): the owner
-- hides it at once from everyone; its id stays taken and its log is left as
-- it is (append-only). `rewind admin undelete` clears the mark within the
-- retention period. Every place that finds documents for a user (roles,
-- quick actions, share) reads only rows without the mark.
ALTER TABLE documents ADD COLUMN deleted_at timestamptz;

-- Every instance LISTENs on `rewind_access`: a deletion (or an undelete)
-- reaches them as a change of the document's roles, in the same
-- transaction, whoever made it (a server, `rewind admin`, SQL by hand).
CREATE FUNCTION rewind_notify_document_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rewind_access', 'doc:' || NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER documents_deleted AFTER UPDATE OF deleted_at ON documents
    FOR EACH ROW WHEN (OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
    EXECUTE FUNCTION rewind_notify_document_deleted();
