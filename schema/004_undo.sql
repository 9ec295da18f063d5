-- Undo history as a projection of the log (SPEC section 4).
--
-- Events gain `meta` (JSON text: undo scope, whether the edit joined a group
-- its terminal holds open, the selection), covered by the hash when present.
-- Changes to the undo history that are not edits (a group closing, a rename,
-- clear_history) are rows of `group_marks`, append-only like events, numbered
-- 1, 2, 3, … per document with no gap, each placed after an event version.
-- Both counts live on `documents`, so a writer that has not seen a mark
-- another server wrote is refused (clash) and catches up, as for events.

ALTER TABLE events ADD COLUMN meta text;
ALTER TABLE documents ADD COLUMN marks bigint NOT NULL DEFAULT 0;

CREATE TABLE group_marks (
    doc           text NOT NULL REFERENCES documents(id),
    n             bigint NOT NULL CHECK (n > 0),
    after_version bigint NOT NULL CHECK (after_version >= 0),
    mark_id       uuid NOT NULL UNIQUE,
    user_id       bigint NOT NULL REFERENCES users(id),
    client        text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('close', 'rename', 'clear')),
    grp           text,
    scope         text,
    action        text,
    selection     text,
    tx            text,
    time          timestamptz NOT NULL,
    PRIMARY KEY (doc, n),
    UNIQUE (doc, user_id, tx)
);

CREATE TRIGGER group_marks_append_only
    BEFORE UPDATE OR DELETE ON group_marks
    FOR EACH ROW EXECUTE FUNCTION rewind_refuse_change();

CREATE TRIGGER group_marks_no_truncate
    BEFORE TRUNCATE ON group_marks
    FOR EACH STATEMENT EXECUTE FUNCTION rewind_refuse_change();

-- The hash of an event with meta: the 003 hash input followed by the meta and
-- a newline. Events without meta hash exactly as before.
CREATE FUNCTION rewind_event_hash(prev bytea, doc text, version bigint, event_id uuid, tx text,
                                  user_id bigint, client text, grp text, kind text, action text,
                                  base bigint, ops text, inverse text, refers text, time_ms bigint,
                                  meta text)
RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN meta IS NULL
        THEN rewind_event_hash(prev, doc, version, event_id, tx, user_id, client, grp, kind, action,
                               base, ops, inverse, refers, time_ms)
        ELSE sha256(coalesce(prev, ''::bytea) || convert_to(
            doc || E'\n' || version || E'\n' || event_id || E'\n' || tx || E'\n' || user_id || E'\n' ||
            client || E'\n' || grp || E'\n' || kind || E'\n' || coalesce(action, '') || E'\n' ||
            base || E'\n' || ops || E'\n' || inverse || E'\n' || coalesce(refers, '') || E'\n' ||
            time_ms || E'\n' || meta || E'\n', 'UTF8'))
    END
$$;

DROP FUNCTION rewind_append(text, bigint, uuid, text, text, bigint, text, text, text, text, bigint,
                            text, text, text, bigint, uuid);

-- As in 003, plus `p_meta`, and `p_marks`: the number of marks the writer has
-- seen, which must be the document's (else `clash`).
CREATE FUNCTION rewind_append(
    p_doc text, p_version bigint, p_event_id uuid, p_tx text, p_tx_digest text, p_user bigint,
    p_client text, p_grp text, p_kind text, p_action text, p_base bigint, p_ops text,
    p_inverse text, p_refers text, p_time_ms bigint, p_prev_id uuid, p_meta text, p_marks bigint,
    OUT status text, OUT version bigint, OUT hash bytea)
LANGUAGE plpgsql AS $$
DECLARE
    seen record;
    head bigint;
    marks bigint;
    prev bytea;
    prev_id uuid;
BEGIN
    SELECT e.version, e.tx_digest INTO seen FROM events e
        WHERE e.doc = p_doc AND e.user_id = p_user AND e.tx = p_tx;
    IF FOUND THEN
        status := CASE WHEN seen.tx_digest = p_tx_digest THEN 'duplicate' ELSE 'tx_conflict' END;
        version := seen.version;
        RETURN;
    END IF;

    SELECT d.head, d.marks INTO head, marks FROM documents d WHERE d.id = p_doc FOR UPDATE;
    IF NOT FOUND THEN status := 'no_document'; RETURN; END IF;
    IF head <> p_version - 1 OR marks <> p_marks THEN status := 'clash'; version := head; RETURN; END IF;

    SELECT e.hash, e.event_id INTO prev, prev_id FROM events e WHERE e.doc = p_doc AND e.version = head;
    IF prev_id IS DISTINCT FROM p_prev_id THEN status := 'clash'; version := head; RETURN; END IF;
    hash := rewind_event_hash(prev, p_doc, p_version, p_event_id, p_tx, p_user, p_client, p_grp,
                              p_kind, p_action, p_base, p_ops, p_inverse, p_refers, p_time_ms, p_meta);
    INSERT INTO events (doc, version, event_id, tx, tx_digest, user_id, client, grp, kind, action,
                        base, ops, inverse, refers, time, hash, meta)
    VALUES (p_doc, p_version, p_event_id, p_tx, p_tx_digest, p_user, p_client, p_grp, p_kind,
            p_action, p_base, p_ops, p_inverse, p_refers,
            'epoch'::timestamptz + p_time_ms * interval '1 millisecond', hash, p_meta);
    UPDATE documents SET head = p_version WHERE id = p_doc;
    status := 'ok';
    version := p_version;
END $$;

-- Appends mark `p_n` after event `p_after`. Statuses as rewind_append:
-- ok, duplicate (this user's `p_tx` is already a mark: `version` is its n),
-- clash (the head is not `p_after` or the marks are not `p_n - 1`), no_document.
CREATE FUNCTION rewind_mark(
    p_doc text, p_n bigint, p_after bigint, p_mark_id uuid, p_user bigint, p_client text,
    p_kind text, p_grp text, p_scope text, p_action text, p_selection text, p_tx text, p_time_ms bigint,
    OUT status text, OUT version bigint)
LANGUAGE plpgsql AS $$
DECLARE
    seen bigint;
    head bigint;
    marks bigint;
BEGIN
    IF p_tx IS NOT NULL THEN
        SELECT m.n INTO seen FROM group_marks m WHERE m.doc = p_doc AND m.user_id = p_user AND m.tx = p_tx;
        IF FOUND THEN status := 'duplicate'; version := seen; RETURN; END IF;
    END IF;
    SELECT d.head, d.marks INTO head, marks FROM documents d WHERE d.id = p_doc FOR UPDATE;
    IF NOT FOUND THEN status := 'no_document'; RETURN; END IF;
    IF head <> p_after OR marks <> p_n - 1 THEN status := 'clash'; version := head; RETURN; END IF;
    INSERT INTO group_marks (doc, n, after_version, mark_id, user_id, client, kind, grp, scope, action,
                             selection, tx, time)
    VALUES (p_doc, p_n, p_after, p_mark_id, p_user, p_client, p_kind, p_grp, p_scope, p_action,
            p_selection, p_tx, 'epoch'::timestamptz + p_time_ms * interval '1 millisecond');
    UPDATE documents SET marks = p_n WHERE id = p_doc;
    status := 'ok';
    version := p_n;
END $$;
