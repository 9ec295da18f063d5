-- The hash of an event: SHA-256 over the previous event's hash (empty for the
-- first) and the event's fields, each followed by a newline, in this order.
-- Anyone can recompute it from the row to verify the chain.
CREATE FUNCTION rewind_event_hash(prev bytea, doc text, version bigint, event_id uuid, tx text,
                                  user_id bigint, client text, grp text, kind text, action text,
                                  base bigint, ops text, inverse text, refers text, time_ms bigint)
RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
    SELECT sha256(coalesce(prev, ''::bytea) || convert_to(
        doc || E'\n' || version || E'\n' || event_id || E'\n' || tx || E'\n' || user_id || E'\n' ||
        client || E'\n' || grp || E'\n' || kind || E'\n' || coalesce(action, '') || E'\n' ||
        base || E'\n' || ops || E'\n' || inverse || E'\n' || coalesce(refers, '') || E'\n' ||
        time_ms || E'\n', 'UTF8'))
$$;

-- Appends one event and says how it went, without raising for the expected
-- cases, so that one refused row never aborts the other rows committed with
-- it in the same pipeline batch:
--   ok          appended; `version` and `hash` are the new event's
--   duplicate   this user already appended this tx with the same content at `version`
--   tx_conflict this user already used this tx, with other content, at `version`
--   clash       the document's head is not `p_version - 1`, or the event there
--               is not `p_prev_id` (another writer got there first, so this
--               event was computed against a state that never was); `version`
--               is the current head
--   no_document no such document
CREATE FUNCTION rewind_append(
    p_doc text, p_version bigint, p_event_id uuid, p_tx text, p_tx_digest text, p_user bigint,
    p_client text, p_grp text, p_kind text, p_action text, p_base bigint, p_ops text,
    p_inverse text, p_refers text, p_time_ms bigint, p_prev_id uuid,
    OUT status text, OUT version bigint, OUT hash bytea)
LANGUAGE plpgsql AS $$
DECLARE
    seen record;
    head bigint;
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

    -- The row lock orders appends to one document; waiting writers then see the new head.
    SELECT d.head INTO head FROM documents d WHERE d.id = p_doc FOR UPDATE;
    IF NOT FOUND THEN status := 'no_document'; RETURN; END IF;
    IF head <> p_version - 1 THEN status := 'clash'; version := head; RETURN; END IF;

    SELECT e.hash, e.event_id INTO prev, prev_id FROM events e WHERE e.doc = p_doc AND e.version = head;
    IF prev_id IS DISTINCT FROM p_prev_id THEN status := 'clash'; version := head; RETURN; END IF;
    hash := rewind_event_hash(prev, p_doc, p_version, p_event_id, p_tx, p_user, p_client, p_grp,
                              p_kind, p_action, p_base, p_ops, p_inverse, p_refers, p_time_ms);
    INSERT INTO events (doc, version, event_id, tx, tx_digest, user_id, client, grp, kind, action,
                        base, ops, inverse, refers, time, hash)
    VALUES (p_doc, p_version, p_event_id, p_tx, p_tx_digest, p_user, p_client, p_grp, p_kind,
            p_action, p_base, p_ops, p_inverse, p_refers,
            'epoch'::timestamptz + p_time_ms * interval '1 millisecond', hash);
    UPDATE documents SET head = p_version WHERE id = p_doc;
    status := 'ok';
    version := p_version;
END $$;
