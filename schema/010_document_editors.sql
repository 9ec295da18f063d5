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
-- two instances appending to the same documents cannot deadlock here. A row
-- is written only when it is new or more than 5 seconds old: someone typing
-- into one document rewrites its row every 5 s, not with every commit (the
-- order of a user's documents is exact to within those 5 s). Each row written
-- is announced on `rewind_editors` ("<user> <doc>") for the instances that
-- keep quick actions of connected users up to date.
CREATE FUNCTION rewind_note_editors() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        INSERT INTO document_editors AS e (doc, user_id, last_edit)
        SELECT n.doc, n.user_id, max(n.time) FROM new_rows n
        WHERE n.entry = 'event' AND NOT EXISTS (
            SELECT 1 FROM document_editors x
            WHERE x.doc = n.doc AND x.user_id = n.user_id AND x.last_edit > n.time - interval '5 seconds')
        GROUP BY n.doc, n.user_id ORDER BY n.doc, n.user_id
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
