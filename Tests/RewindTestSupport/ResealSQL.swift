/// SQL that re-seals `doc`'s chain from the entry at seq `from` (an SQL
/// expression) on, as a superuser who knows the encoding would: the tamper
/// tests of the server and integration targets change an entry, then run this.
public func resealSQL(doc: String, from: String) -> String {
    """
    ALTER TABLE log DISABLE TRIGGER USER;
    DO $$ DECLARE r record; prev bytea; BEGIN
        SELECT hash INTO prev FROM log WHERE doc = '\(doc)' AND seq = \(from) - 1;
        FOR r IN SELECT * FROM log WHERE doc = '\(doc)' AND seq >= \(from) ORDER BY seq LOOP
            prev := rewind_entry_hash(prev, r.doc, r.seq, r.version, r.entry, r.id, r.user_id, r.client, r.kind, r.grp,
                r.action, r.tx, r.tx_digest, r.base, r.ops, r.inverse, r.refers, r.meta, (extract(epoch FROM r.time) * 1000)::bigint);
            UPDATE log SET hash = prev WHERE doc = '\(doc)' AND seq = r.seq;
        END LOOP;
        UPDATE documents SET head_hash = prev WHERE id = '\(doc)';
    END $$;
    ALTER TABLE log ENABLE TRIGGER USER;
    """
}
