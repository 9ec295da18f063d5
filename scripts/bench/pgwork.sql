-- What scripts/bench/pgwork loads into its throwaway database, after the
-- migrations: users, documents, the batch maker, and the baseline's table.

INSERT INTO users (name) SELECT 'u' || i FROM generate_series(0, 9) i;
INSERT INTO documents (id, owner)
SELECT 'doc-' || lpad(i::text, 6, '0') || '-' || md5(i::text), (SELECT min(id) FROM users)
FROM generate_series(0, :docs - 1) i;

-- The baseline: the same rows stored as plainly as an application could, one
-- table shaped like `log` (same columns and types) with its primary key and
-- nothing else, filled by one INSERT a batch.
CREATE TABLE plain_log (LIKE log INCLUDING DEFAULTS);
ALTER TABLE plain_log ALTER COLUMN position DROP DEFAULT;
ALTER TABLE plain_log ADD PRIMARY KEY (doc, seq);
CREATE SEQUENCE plain_seq;

-- The heads as the batch maker knows them, apart from `documents`: reading
-- `documents` (whose rows the claims keep rewriting) would cost the making
-- more when the measured statement appends than when it does not, and the
-- subtraction would be wrong. Updating this table costs the same in every run.
CREATE TABLE bench_heads (i int PRIMARY KEY, doc text NOT NULL, seq bigint NOT NULL, head bigint NOT NULL, hash bytea NOT NULL);
INSERT INTO bench_heads SELECT i, 'doc-' || lpad(i::text, 6, '0') || '-' || md5(i::text), 0, 0, '\x' FROM generate_series(0, :docs - 1) i;

-- One batch as a writer sends it: `per` documents drawn at random among the
-- first `ndocs`, one `set` entry each (the commit benchmark's op: ~200
-- characters of sealed ops), following each document's head. For the
-- baseline (`plain`) the seq comes from a sequence: nothing claims a head.
-- Arrays $1-$28 of LogRows.appendSQL as a1-a28; the editors (a26-a28) are
-- empty, as in a busy writer's batches (each pair noted once in 5 seconds).
CREATE FUNCTION bench_make(per int, ndocs int, plain boolean,
  OUT a1 text[], OUT a2 bigint[], OUT a3 bytea[], OUT a4 bigint[], OUT a5 bigint[], OUT a6 bytea[],
  OUT a7 text[], OUT a8 bigint[], OUT a9 bigint[], OUT a10 text[], OUT a11 uuid[], OUT a12 bigint[], OUT a13 text[],
  OUT a14 text[], OUT a15 text[], OUT a16 text[], OUT a17 text[], OUT a18 text[], OUT a19 bigint[], OUT a20 text[],
  OUT a21 text[], OUT a22 text[], OUT a23 text[], OUT a24 bigint[], OUT a25 bytea[],
  OUT a26 text[], OUT a27 bigint[], OUT a28 bigint[]) LANGUAGE plpgsql
  SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
  r record; h bytea; u bigint; s bigint;
BEGIN
  u := (SELECT min(id) FROM users);
  a26 := '{}'; a27 := '{}'; a28 := '{}';
  FOR r IN SELECT b.i, b.doc AS id, b.seq, b.head, b.hash AS head_hash FROM bench_heads b
           WHERE b.i = ANY (ARRAY(SELECT DISTINCT floor(random() * ndocs)::int FROM generate_series(1, per)))
           ORDER BY b.doc
  LOOP
    h := sha256(gen_random_uuid()::text::bytea);
    s := CASE WHEN plain THEN nextval('plain_seq') ELSE r.seq + 1 END;
    a1 := a1 || r.id; a2 := a2 || r.seq; a3 := a3 || r.head_hash; a4 := a4 || s; a5 := a5 || (r.head + 1); a6 := a6 || h;
    a7 := a7 || r.id; a8 := a8 || s; a9 := a9 || (r.head + 1); a10 := a10 || 'event'::text; a11 := a11 || gen_random_uuid();
    a12 := a12 || u; a13 := a13 || 'c1'::text; a14 := a14 || 'edit'::text; a15 := a15 || ('g' || s);
    a16 := a16 || NULL::text; a17 := a17 || ('tx-' || s); a18 := a18 || left(md5(r.id || s), 16);
    a19 := a19 || r.head; a20 := a20 || ('~177109d80611.2:' || repeat('x', 190)); a21 := a21 || '~'::text; a22 := a22 || NULL::text;
    a23 := a23 || NULL::text; a24 := a24 || (extract(epoch from clock_timestamp()) * 1000)::bigint; a25 := a25 || h;
    UPDATE bench_heads SET seq = r.seq + 1, head = r.head + 1, hash = h WHERE i = r.i;
  END LOOP;
END $$;

-- One batch of one busy document (issue 44's shape): `per` entries of the
-- first document, each following the last, as a writer sends a document that
-- 50 terminals edit at once (ndocs is not used). For the baseline the seqs
-- come from the sequence. `pgwork --one-doc` makes it bench_make.
CREATE FUNCTION bench_make_one(per int, ndocs int, plain boolean,
  OUT a1 text[], OUT a2 bigint[], OUT a3 bytea[], OUT a4 bigint[], OUT a5 bigint[], OUT a6 bytea[],
  OUT a7 text[], OUT a8 bigint[], OUT a9 bigint[], OUT a10 text[], OUT a11 uuid[], OUT a12 bigint[], OUT a13 text[],
  OUT a14 text[], OUT a15 text[], OUT a16 text[], OUT a17 text[], OUT a18 text[], OUT a19 bigint[], OUT a20 text[],
  OUT a21 text[], OUT a22 text[], OUT a23 text[], OUT a24 bigint[], OUT a25 bytea[],
  OUT a26 text[], OUT a27 bigint[], OUT a28 bigint[]) LANGUAGE plpgsql AS $$
DECLARE
  r record; h bytea; u bigint; s bigint; v bigint;
BEGIN
  u := (SELECT min(id) FROM users);
  a26 := '{}'; a27 := '{}'; a28 := '{}';
  SELECT b.doc AS id, b.seq, b.head, b.hash AS head_hash INTO r FROM bench_heads b WHERE b.i = 0;
  h := r.head_hash; s := r.seq; v := r.head;
  FOR k IN 1 .. per LOOP
    h := sha256(gen_random_uuid()::text::bytea);
    s := CASE WHEN plain THEN nextval('plain_seq') ELSE s + 1 END;
    v := v + 1;
    a7 := a7 || r.id; a8 := a8 || s; a9 := a9 || v; a10 := a10 || 'event'::text; a11 := a11 || gen_random_uuid();
    a12 := a12 || u; a13 := a13 || ('c' || k); a14 := a14 || 'edit'::text; a15 := a15 || ('g' || s);
    a16 := a16 || NULL::text; a17 := a17 || ('tx-' || s); a18 := a18 || left(md5(r.id || s), 16);
    a19 := a19 || (v - 1); a20 := a20 || ('~177109d80611.2:' || repeat('x', 190)); a21 := a21 || '~'::text; a22 := a22 || NULL::text;
    a23 := a23 || NULL::text; a24 := a24 || (extract(epoch from clock_timestamp()) * 1000)::bigint; a25 := a25 || h;
  END LOOP;
  a1 := ARRAY[r.id]; a2 := ARRAY[r.seq]; a3 := ARRAY[r.head_hash]; a4 := ARRAY[s]; a5 := ARRAY[v]; a6 := ARRAY[h];
  UPDATE bench_heads SET seq = s, head = v, hash = h WHERE i = 0;
END $$;

-- Making a batch and storing nothing: subtracted from both measurements.
CREATE FUNCTION bench_make_only(per int, ndocs int, plain boolean) RETURNS int LANGUAGE plpgsql AS $$
DECLARE m record;
BEGIN
  SELECT * INTO m FROM bench_make(per, ndocs, plain);
  RETURN cardinality(m.a1);
END $$;

-- The baseline's batch: the same rows, one INSERT.
CREATE FUNCTION bench_plain(per int, ndocs int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE m record; n int;
BEGIN
  SELECT * INTO m FROM bench_make(per, ndocs, true);
  INSERT INTO plain_log (doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops,
                         inverse, refers, meta, time, hash, position)
  SELECT r.doc, r.seq, r.version, r.entry, r.id, r.user_id, r.client, r.kind, r.grp, r.action, r.tx, r.tx_digest,
         r.base, r.ops, r.inverse, r.refers, r.meta, 'epoch'::timestamptz + r.time_ms * interval '1 millisecond', r.hash, r.seq
  FROM unnest(m.a7, m.a8, m.a9, m.a10, m.a11, m.a12, m.a13, m.a14, m.a15, m.a16, m.a17, m.a18, m.a19, m.a20,
              m.a21, m.a22, m.a23, m.a24, m.a25)
       AS r(doc, seq, version, entry, id, user_id, client, kind, grp, action, tx, tx_digest, base, ops, inverse,
            refers, meta, time_ms, hash);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END $$;
