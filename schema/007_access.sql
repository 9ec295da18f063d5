-- Access to documents (PROTOCOL.md "Access").
--
-- A document's owner is `documents.owner` (its creator; that role never
-- changes). Everyone else it is shared with has one row here, as an editor
-- or a viewer. A user with no role on a document is told it does not exist.
CREATE TABLE access (
    doc         text NOT NULL REFERENCES documents(id),
    user_id     bigint NOT NULL REFERENCES users(id),
    role        text NOT NULL CHECK (role IN ('editor', 'viewer')),
    granted_by  bigint REFERENCES users(id),   -- null: an operator (`rewind admin grant`)
    granted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (doc, user_id)
);
CREATE INDEX access_user ON access(user_id);

-- Revoked tokens stay (for the record) but no longer authenticate.
ALTER TABLE tokens ADD COLUMN revoked_at timestamptz;

-- Every server instance LISTENs on `rewind_access` and applies a change at
-- once: `doc:<id>` when a document's roles changed, `user:<id>` when a user's
-- tokens were revoked. The triggers notify for any writer (a server's
-- `share`, `rewind admin`, or SQL typed by an operator), in the same
-- transaction, so the notice never precedes the change.
CREATE FUNCTION rewind_notify_access() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'access' THEN
        IF TG_OP = 'DELETE' THEN
            PERFORM pg_notify('rewind_access', 'doc:' || OLD.doc);
        ELSE
            PERFORM pg_notify('rewind_access', 'doc:' || NEW.doc);
            IF TG_OP = 'UPDATE' AND OLD.doc <> NEW.doc THEN
                PERFORM pg_notify('rewind_access', 'doc:' || OLD.doc);
            END IF;
        END IF;
    ELSIF NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL THEN
        PERFORM pg_notify('rewind_access', 'user:' || NEW.user_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER access_notify
    AFTER INSERT OR UPDATE OR DELETE ON access
    FOR EACH ROW EXECUTE FUNCTION rewind_notify_access();

CREATE TRIGGER tokens_notify_revoked
    AFTER UPDATE OF revoked_at ON tokens
    FOR EACH ROW EXECUTE FUNCTION rewind_notify_access();
