-- One log stream per document (SPEC section 3), written set-based.
--
-- Events and group marks become entries of one table, `log`, numbered
-- 1, 2, 3, … per document with no gap (`seq`), so one head check orders
-- both and one hash chain covers both. `version` is the number of events at
-- or before an entry: an event's own version (what the protocol shows), or,
-- for a mark, the version of the event it follows.
--
-- The server computes versions and hashes (it holds the head in memory) and
-- appends a whole batch of many documents' entries with one statement: the
-- head of each document is claimed with `UPDATE documents … WHERE seq =
-- expected` and only the entries of documents it claimed are inserted (see
-- `LogRows.appendSQL` in Sources/RewindStore). The database still refuses
-- what must never be: a gap, a duplicate `(doc, seq)`, a second event with
-- the same version or transaction, an entry past an unclaimed head, and any
-- UPDATE, DELETE or TRUNCATE. Those checks run once per statement, over the
-- statement's new rows, not once per row.
--
-- Existing logs are moved over: entries in their order, re-chained with the
-- unambiguous hash (the old one joined fields with newlines), and checked by
-- the same trigger.

CREATE TABLE log (
    doc        text NOT NULL,            -- a document (checked per statement: its head was claimed)
    seq        bigint NOT NULL CHECK (seq > 0),
    version    bigint NOT NULL CHECK (version >= 0),
    entry      text NOT NULL CHECK (entry IN ('event', 'mark')),
    id         uuid NOT NULL UNIQUE,
    user_id    bigint NOT NULL,          -- a user (checked per statement)
    client     text NOT NULL,
    kind       text NOT NULL,
    grp        text,
    action     text,
    tx         text,
    tx_digest  text,
    base       bigint,
    ops        text,
    inverse    text,
    refers     text,
    meta       text,
    time       timestamptz NOT NULL,
    hash       bytea NOT NULL CHECK (octet_length(hash) = 32),
    PRIMARY KEY (doc, seq),
    CHECK (entry = 'mark' OR (version > 0 AND kind IN ('edit', 'undo', 'redo', 'restore') AND grp IS NOT NULL
                              AND tx <> '' AND tx_digest IS NOT NULL AND base >= 0 AND base < version
                              AND ops IS NOT NULL AND inverse IS NOT NULL)),
    CHECK (entry = 'event' OR (kind IN ('close', 'rename', 'clear') AND base IS NULL AND ops IS NULL))
);
-- The protocol's (doc, version) of events, and resubmissions never appended twice.
CREATE UNIQUE INDEX log_event_version ON log (doc, version) WHERE entry = 'event';
CREATE UNIQUE INDEX log_event_tx ON log (doc, user_id, tx) WHERE entry = 'event';
CREATE UNIQUE INDEX log_mark_tx ON log (doc, user_id, tx) WHERE entry = 'mark' AND tx IS NOT NULL;

-- A document's head: the number of entries (`seq`, with `head` still the
-- number of events) and the hash of the newest entry. A writer claims the
-- head it built on — both — so an entry computed on top of one that never
-- committed can never enter the log, even when the count happens to match.
ALTER TABLE documents ADD COLUMN seq bigint NOT NULL DEFAULT 0 CHECK (seq >= 0);
ALTER TABLE documents ADD COLUMN head_hash bytea NOT NULL DEFAULT ''::bytea;

-- One field of the hash input: its length in bytes (8 bytes, big-endian;
-- -1 for null), then its UTF-8 bytes.
CREATE FUNCTION rewind_hash_field(x text) RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN x IS NULL THEN int8send(-1)
                ELSE int8send(octet_length(x)::bigint) || convert_to(x, 'UTF8') END
$$;

-- The hash of an entry: SHA-256 of the previous entry's hash (empty for the
-- first) and every field, in this order. The server computes the same
-- (`LogRow.chained` in Sources/RewindCore); anyone can recompute it here.
CREATE FUNCTION rewind_entry_hash(prev bytea, doc text, seq bigint, version bigint, entry text, id uuid,
                                  user_id bigint, client text, kind text, grp text, action text, tx text,
                                  tx_digest text, base bigint, ops text, inverse text, refers text, meta text,
                                  time_ms bigint)
RETURNS bytea LANGUAGE sql IMMUTABLE AS $$
    SELECT sha256(coalesce(prev, ''::bytea)
        || rewind_hash_field(doc) || rewind_hash_field(seq::text) || rewind_hash_field(version::text)
        || rewind_hash_field(entry) || rewind_hash_field(id::text) || rewind_hash_field(user_id::text)
        || rewind_hash_field(client) || rewind_hash_field(kind) || rewind_hash_field(grp)
        || rewind_hash_field(action) || rewind_hash_field(tx) || rewind_hash_field(tx_digest)
        || rewind_hash_field(base::text) || rewind_hash_field(ops) || rewind_hash_field(inverse)
        || rewind_hash_field(refers) || rewind_hash_field(meta) || rewind_hash_field(time_ms::text))
$$;

CREATE TRIGGER log_append_only
    BEFORE UPDATE OR DELETE ON log
    FOR EACH ROW EXECUTE FUNCTION rewind_refuse_change();

CREATE TRIGGER log_no_truncate
    BEFORE TRUNCATE ON log
    FOR EACH STATEMENT EXECUTE FUNCTION rewind_refuse_change();

-- Per statement: each document's new entries follow on from its stored ones
-- with no gap, versions count events exactly, the document's head was
-- claimed up to the last of them (seq and head) in the same transaction, and
-- every user exists. (These stand in for foreign keys, which would check
-- every row on its own.)
CREATE FUNCTION rewind_log_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad text;
BEGIN
    SELECT n.doc INTO bad FROM (
        SELECT doc, seq, version, entry, lag(seq) OVER w AS prev_seq, lag(version) OVER w AS prev_version
        FROM new_rows WINDOW w AS (PARTITION BY doc ORDER BY seq)) n
    LEFT JOIN log p ON n.prev_seq IS NULL AND p.doc = n.doc AND p.seq = n.seq - 1
    WHERE CASE WHEN n.prev_seq IS NULL
               THEN (n.seq > 1 AND p.seq IS NULL) OR n.version <> coalesce(p.version, 0) + (n.entry = 'event')::int
               ELSE n.seq <> n.prev_seq + 1 OR n.version <> n.prev_version + (n.entry = 'event')::int END
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'the log of % would have a gap or miscounted versions', bad USING ERRCODE = 'check_violation';
    END IF;
    SELECT m.doc INTO bad FROM (SELECT DISTINCT ON (doc) doc, seq, version, hash FROM new_rows ORDER BY doc, seq DESC) m
    LEFT JOIN documents d ON d.id = m.doc
    WHERE d.seq IS DISTINCT FROM m.seq OR d.head IS DISTINCT FROM m.version OR d.head_hash IS DISTINCT FROM m.hash
    LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'entries of % were appended past its claimed head', bad USING ERRCODE = 'check_violation';
    END IF;
    SELECT n.user_id::text INTO bad FROM (SELECT DISTINCT user_id FROM new_rows) n
    WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = n.user_id) LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'no user %', bad USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER log_gapless
    AFTER INSERT ON log REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rewind_log_check();

-- Move the existing logs over, in order, re-chained.
CREATE TEMPORARY TABLE moved ON COMMIT DROP AS
SELECT e.doc, e.version + (SELECT count(*) FROM group_marks m WHERE m.doc = e.doc AND m.after_version < e.version) AS seq,
       e.version, 'event'::text AS entry, e.event_id AS id, e.user_id, e.client, e.kind, e.grp, e.action, e.tx, e.tx_digest,
       e.base, e.ops, e.inverse, e.refers, e.meta, e.time, NULL::bytea AS hash
FROM events e
UNION ALL
SELECT m.doc, m.after_version + m.n, m.after_version, 'mark', m.mark_id, m.user_id, m.client, m.kind, m.grp, m.action, m.tx,
       NULL, NULL, NULL, NULL, NULL,
       CASE WHEN m.scope IS NULL AND m.selection IS NULL THEN NULL
            ELSE '{' || concat_ws(',', CASE WHEN m.scope IS NOT NULL THEN '"scope":' || to_json(m.scope)::text END,
                                       CASE WHEN m.selection IS NOT NULL THEN '"selection":' || m.selection END) || '}' END,
       m.time, NULL
FROM group_marks m;

CREATE INDEX ON moved (doc, seq);

DO $$
DECLARE
    r record;
    prev bytea;
    cur text;
BEGIN
    FOR r IN SELECT * FROM moved ORDER BY doc, seq LOOP
        IF cur IS DISTINCT FROM r.doc THEN cur := r.doc; prev := ''::bytea; END IF;
        prev := rewind_entry_hash(prev, r.doc, r.seq, r.version, r.entry, r.id, r.user_id, r.client, r.kind, r.grp, r.action,
                                  r.tx, r.tx_digest, r.base, r.ops, r.inverse, r.refers, r.meta,
                                  (extract(epoch FROM r.time) * 1000)::bigint);
        UPDATE moved SET hash = prev WHERE moved.doc = r.doc AND moved.seq = r.seq;
    END LOOP;
END $$;

UPDATE documents d SET seq = d.head + d.marks,
    head_hash = coalesce((SELECT m.hash FROM moved m WHERE m.doc = d.id ORDER BY m.seq DESC LIMIT 1), ''::bytea);
INSERT INTO log (doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse,
                 refers, meta, time, hash)
SELECT doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse, refers, meta,
       time, hash
FROM moved ORDER BY doc, seq;

-- The old tables and functions go; `events` stays readable as a view.
DROP FUNCTION rewind_append(text, bigint, uuid, text, text, bigint, text, text, text, text, bigint,
                            text, text, text, bigint, uuid, text, bigint);
DROP FUNCTION rewind_mark(text, bigint, bigint, uuid, bigint, text, text, text, text, text, text, text, bigint);
DROP FUNCTION rewind_event_hash(bytea, text, bigint, uuid, text, bigint, text, text, text, text, bigint, text, text, text, bigint, text);
DROP FUNCTION rewind_event_hash(bytea, text, bigint, uuid, text, bigint, text, text, text, text, bigint, text, text, text, bigint);
DROP TABLE events;
DROP FUNCTION rewind_check_gapless();
DROP TABLE group_marks;
ALTER TABLE documents DROP COLUMN marks;

CREATE VIEW events AS
    SELECT doc, version, seq, id AS event_id, tx, tx_digest, user_id, client, grp, kind, action, base, ops, inverse, refers,
           meta, time, hash
    FROM log WHERE entry = 'event';

-- Snapshots now name the entry they were taken at and its hash, and carry a
-- digest of their own text; older ones (without) are derived data and go.
DELETE FROM snapshots;
ALTER TABLE snapshots DROP CONSTRAINT snapshots_pkey;
ALTER TABLE snapshots DROP COLUMN marks;
ALTER TABLE snapshots ADD COLUMN seq bigint NOT NULL CHECK (seq > 0);
ALTER TABLE snapshots ADD COLUMN hash bytea NOT NULL CHECK (octet_length(hash) = 32);
ALTER TABLE snapshots ADD COLUMN digest bytea NOT NULL CHECK (octet_length(digest) = 32);
ALTER TABLE snapshots ADD PRIMARY KEY (doc, seq);
