-- Documents placed on several PostgreSQL clusters (SPEC section 17;
-- docs/scaling.md). The database a server is started with is the catalog:
-- it holds users, tokens, API keys, the shards and where each document
-- lives, and it is itself the shard `home`, which keeps every document not
-- placed elsewhere. A database that was never sharded is `home` alone, with
-- nothing to copy: no document has a placement, so each is on `home`.

-- The shards, `home` first. conninfo is libpq's (multi-host as for the
-- catalog); `home`'s is empty: it is this database.
-- accepting: takes new documents; closed: keeps its documents, takes no new
-- ones; draining: its documents are to move off (`shard drain`).
CREATE TABLE shards (
    name      text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,31}$'),
    conninfo  text NOT NULL,
    state     text NOT NULL DEFAULT 'accepting' CHECK (state IN ('accepting', 'closed', 'draining')),
    added_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((name = 'home') = (conninfo = ''))
);
INSERT INTO shards (name, conninfo) VALUES ('home', '');

-- Where a document lives. Written when a document is made while there are
-- shards besides `home` (on `home` too: the key keeps ids unique over all
-- shards) and by a move. No row: `home` (a document made before).
CREATE TABLE placements (
    doc        text PRIMARY KEY CHECK (doc <> '' AND octet_length(doc) <= 256),
    shard      text NOT NULL REFERENCES shards (name),
    placed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX placements_shard ON placements (shard);
-- A move under way (`rewind admin shard move`): where to. While it is set,
-- instances answer the document's requests `unavailable` and the mover may
-- resume or abort it; the flip sets `shard` and clears it in one statement.
ALTER TABLE placements ADD COLUMN moving_to text REFERENCES shards (name);

-- On the shard a document leaves: where it went (or is going). The mover
-- sets it with `head_hash` changed (a byte put before it), in one statement:
-- no claim matches the head from then on (the fence), and a server reading
-- the head refuses it. A copy left behind is purged once the catalog says
-- the document is on the other shard.
ALTER TABLE documents ADD COLUMN moved_to text;

-- How new documents are placed (`PlacementPolicy`: rules `prefix -> shard`,
-- then least-loaded), as the text an operator writes. No row: least-loaded.
CREATE TABLE placement_policy (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    policy  text NOT NULL,
    set_at  timestamptz NOT NULL DEFAULT now()
);

-- Every instance rereads the shards and the policy when they change.
CREATE FUNCTION rewind_notify_shards_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rewind_access', 'shards');
    RETURN NULL;
END $$;
CREATE TRIGGER shards_changed AFTER INSERT OR UPDATE OR DELETE ON shards
    FOR EACH STATEMENT EXECUTE FUNCTION rewind_notify_shards_changed();
CREATE TRIGGER placement_policy_changed AFTER INSERT OR UPDATE OR DELETE ON placement_policy
    FOR EACH STATEMENT EXECUTE FUNCTION rewind_notify_shards_changed();

-- On a shard other than `home`: its name, written by `rewind admin shard
-- add`. A database with this row is not a catalog.
CREATE TABLE shard_identity (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    name  text NOT NULL
);

-- A shard's rows name users (the log's user_id, roles, editors), whose
-- accounts live in the catalog: the server copies the id and the names of
-- each user it writes for into the shard first. Only on a shard: in the
-- catalog users are made by `rewind admin user add` and by signed tokens
-- (schema/018), never by this.
CREATE FUNCTION rewind_user_copy(p_id bigint, p_name text, p_display_name text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM shard_identity) THEN
        RAISE EXCEPTION 'rewind_user_copy: this database is a catalog, not a shard; its users are its own'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO users (id, name, display_name) VALUES (p_id, p_name, p_display_name)
    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, display_name = EXCLUDED.display_name
        WHERE users.name IS DISTINCT FROM EXCLUDED.name OR users.display_name IS DISTINCT FROM EXCLUDED.display_name;
END $$;
REVOKE ALL ON FUNCTION rewind_user_copy(bigint, text, text) FROM PUBLIC;
