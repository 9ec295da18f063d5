-- Following the log (issue 47; PROTOCOL.md, "Following the log"): every
-- entry has a position, an integer that only grows in the order entries
-- become visible, so that a follower that has seen position P and asks for
-- what is after P gets every entry committed after it — none twice, none
-- skipped, even when two writers commit out of order.
--
-- A position is the appending transaction's id (`pg_current_xact_id()`, 64
-- bits, never reused) shifted left 20 bits, plus the entry's rank in its
-- transaction (1, 2, …; at most 2^20 - 1 a transaction). A follower reads
-- only below `pg_snapshot_xmin(pg_current_snapshot()) << 20`: every
-- transaction with an id below that horizon has ended, and every one still
-- running — or yet to start — has a larger id, so whatever it commits later
-- lands after what the follower has seen (`rewind_followable_below`, and
-- the follow query of Sources/RewindStore/Follow.swift). A transaction left
-- open anywhere in the cluster holds followers back until it ends, as it
-- holds back vacuum.
--
-- Transaction ids belong to the cluster, not the database: a database
-- restored from a dump into a new cluster (pg_dump, pg_restore) meets ids
-- smaller than the ones its positions were made of. So they are offset by
-- `log_position_base.base`, which `rewind_log_positions_repair()` raises when
-- the log's newest position is not below what new transactions would make —
-- `rewind admin migrate` runs it every time, and a server refuses to start
-- until it has (Migrations.positionsCheckSQL).
--
-- The server's append statement (LogRows.appendSQL) writes positions itself
-- (its one INSERT a transaction ranks the batch's rows); any other writer —
-- `rewind admin import`, an operator's SQL — gets them from the column's
-- default, counted per transaction.
CREATE TABLE log_position_base (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),  -- one row
    base  bigint NOT NULL DEFAULT 0 CHECK (base >= 0)
);
INSERT INTO log_position_base DEFAULT VALUES;

CREATE FUNCTION rewind_log_position() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    n bigint := coalesce(nullif(current_setting('rewind.log_position', true), ''), '0')::bigint + 1;
BEGIN
    IF n >= 1048576 THEN
        RAISE EXCEPTION 'one transaction appends at most 1048575 entries to the log (their positions)';
    END IF;
    PERFORM set_config('rewind.log_position', n::text, true);
    RETURN ((pg_current_xact_id()::text::bigint + (SELECT base FROM log_position_base)) << 20) | n;
END $$;

-- Below this, every entry there will ever be is in the log now.
CREATE FUNCTION rewind_followable_below() RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::bigint + (SELECT base FROM log_position_base)) << 20
$$;

-- After a restore into another cluster: positions made from now on start
-- above every one in the log. Waits for transactions appending now (the lock
-- conflicts with their inserts), so no entry is in flight with the old base;
-- followers read on meanwhile. Answers whether it had to.
CREATE FUNCTION rewind_log_positions_repair() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT coalesce(max(position), 0) FROM log) < rewind_followable_below() THEN
        RETURN false;
    END IF;
    LOCK TABLE log IN EXCLUSIVE MODE;
    UPDATE log_position_base
    SET base = greatest(base, ((SELECT max(position) FROM log) >> 20) + 1 - pg_current_xact_id()::text::bigint);
    RETURN true;
END $$;

-- Entries appended before this migration: positions 1, 2, … by document and
-- seq (all committed long ago; every later position is larger).
ALTER TABLE log ADD COLUMN position bigint;
ALTER TABLE log DISABLE TRIGGER USER;  -- the append-only triggers refuse UPDATE; this one fills a new column
UPDATE log l SET position = o.n
FROM (SELECT doc, seq, row_number() OVER (ORDER BY doc, seq) AS n FROM log) o
WHERE l.doc = o.doc AND l.seq = o.seq;
ALTER TABLE log ENABLE TRIGGER USER;
DO $$ BEGIN
    IF (SELECT coalesce(max(position), 0) FROM log) >= pg_current_xact_id()::text::bigint << 20 THEN
        RAISE EXCEPTION 'too many entries for the positions of those before this migration';
    END IF;
END $$;
ALTER TABLE log ALTER COLUMN position SET DEFAULT rewind_log_position(),
                ALTER COLUMN position SET NOT NULL;
CREATE UNIQUE INDEX log_position ON log (position);
