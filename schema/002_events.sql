-- The event log: one row per committed transaction, append-only.
--
-- Versions run 1, 2, 3, … per document with no gap. `ops` and `inverse` are
-- kept as text exactly as the server encoded (and hashed) them: jsonb would
-- reorder keys and normalise numbers. `hash` chains each event to the previous
-- one of its document (see rewind_event_hash).
CREATE TABLE events (
    position    bigserial NOT NULL UNIQUE,
    doc         text NOT NULL REFERENCES documents(id),
    version     bigint NOT NULL CHECK (version > 0),
    event_id    uuid NOT NULL UNIQUE,
    tx          text NOT NULL CHECK (tx <> ''),
    tx_digest   text NOT NULL,
    user_id     bigint NOT NULL REFERENCES users(id),
    client      text NOT NULL,
    grp         text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('edit', 'undo', 'redo', 'restore')),
    action      text,
    base        bigint NOT NULL CHECK (base >= 0 AND base < version),
    ops         text NOT NULL,
    inverse     text NOT NULL,
    refers      text,
    time        timestamptz NOT NULL,
    hash        bytea NOT NULL,
    PRIMARY KEY (doc, version),
    -- Resubmitting a transaction never appends it twice.
    UNIQUE (doc, user_id, tx)
);

-- Append-only: the database itself refuses to change or remove history.
CREATE FUNCTION rewind_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER events_append_only
    BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION rewind_refuse_change();

CREATE TRIGGER events_no_truncate
    BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION rewind_refuse_change();

-- Gapless: a new event must be exactly one past the document's newest.
CREATE FUNCTION rewind_check_gapless() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    newest bigint;
BEGIN
    SELECT coalesce(max(version), 0) INTO newest FROM events WHERE doc = NEW.doc;
    IF NEW.version <> newest + 1 THEN
        RAISE EXCEPTION 'version % of % would leave a gap after %', NEW.version, NEW.doc, newest
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER events_gapless
    BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION rewind_check_gapless();
