-- Who edited which document last, one row per (document, user): what the
-- quick actions of PROTOCOL.md ("open_document" items: the documents a user
-- edited most recently, and who else edited each last) read at `hello`
-- with one indexed query instead of a scan of the log. Derived data, kept by
-- a trigger on the log so that every writer (any instance, an import) counts.
CREATE TABLE document_editors (
    doc        text NOT NULL REFERENCES documents(id),
    user_id    bigint NOT NULL REFERENCES users(id),
    last_edit  timestamptz NOT NULL,
    PRIMARY KEY (doc, user_id)
);
CREATE INDEX document_editors_user ON document_editors (user_id, last_edit DESC);
CREATE INDEX document_editors_doc ON document_editors (doc, last_edit DESC);

-- One upsert per append statement, rows locked in (doc, user) order so that
-- two instances appending to the same documents cannot deadlock here. Each
-- (doc, user) pair is announced on `rewind_editors` ("<user> <doc>") for the
-- instances that keep quick actions of connected users up to date.
CREATE FUNCTION rewind_note_editors() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        INSERT INTO document_editors AS e (doc, user_id, last_edit)
        SELECT doc, user_id, max(time) FROM new_rows WHERE entry = 'event' GROUP BY doc, user_id ORDER BY doc, user_id
        ON CONFLICT (doc, user_id) DO UPDATE SET last_edit = greatest(e.last_edit, EXCLUDED.last_edit)
        RETURNING e.doc, e.user_id
    LOOP
        PERFORM pg_notify('rewind_editors', r.user_id || ' ' || r.doc);
    END LOOP;
    RETURN NULL;
END $$;

CREATE TRIGGER log_note_editors
    AFTER INSERT ON log REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rewind_note_editors();

INSERT INTO document_editors (doc, user_id, last_edit)
SELECT doc, user_id, max(time) FROM log WHERE entry = 'event' GROUP BY doc, user_id;
