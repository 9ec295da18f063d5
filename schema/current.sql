-- The schema as it stands after every migration in this folder, in one place
-- to read: `pg_dump --schema-only --no-owner --no-privileges` of a database
-- migrated from empty (`rewind admin migrate`), without pg_dump's session
-- settings. Never applied: the numbered files are what migrates a database,
-- and SchemaDocumentTests proves this file equal to what they produce (it
-- fails, printing the difference, when a migration changes the schema and
-- this file is not regenerated). To regenerate:
--   createdb probe && rewind admin migrate --database dbname=probe
--   scripts/schema-dump probe > schema/current.sql
--
--




--
-- Name: rewind_claim_heads(text[], bigint[], bytea[], bigint[], bigint[], bytea[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_claim_heads(docs text[], expected bigint[], expected_hash bytea[], last_seq bigint[], last_version bigint[], last_hash bytea[]) RETURNS TABLE(doc text, claimed boolean, seq bigint)
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET jit TO 'off'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH c AS (
        SELECT * FROM unnest(docs, expected, expected_hash, last_seq, last_version, last_hash)
            AS c(doc, expected, expected_hash, last_seq, last_version, last_hash)
    ), up AS (
        UPDATE documents d SET seq = c.last_seq, head = c.last_version, head_hash = c.last_hash
        FROM c WHERE d.id = c.doc AND d.seq = c.expected AND d.head_hash = c.expected_hash
        RETURNING d.id, pg_notify('rewind_log', d.seq || ' ' || d.head || ' ' || d.id)
    )
    SELECT c.doc, c.doc IN (SELECT up.id FROM up), d.seq FROM c LEFT JOIN documents d ON d.id = c.doc;
END $$;


--
-- Name: rewind_entry_hash(bytea, text, bigint, bigint, text, uuid, bigint, text, text, text, text, text, text, bigint, text, text, text, text, bigint); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_entry_hash(prev bytea, doc text, seq bigint, version bigint, entry text, id uuid, user_id bigint, client text, kind text, grp text, action text, tx text, tx_digest text, base bigint, ops text, inverse text, refers text, meta text, time_ms bigint) RETURNS bytea
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT sha256(coalesce(prev, ''::bytea)
        || rewind_hash_field(doc) || rewind_hash_field(seq::text) || rewind_hash_field(version::text)
        || rewind_hash_field(entry) || rewind_hash_field(id::text) || rewind_hash_field(user_id::text)
        || rewind_hash_field(client) || rewind_hash_field(kind) || rewind_hash_field(grp)
        || rewind_hash_field(action) || rewind_hash_field(tx) || rewind_hash_field(tx_digest)
        || rewind_hash_field(base::text) || rewind_hash_field(ops) || rewind_hash_field(inverse)
        || rewind_hash_field(refers) || rewind_hash_field(meta) || rewind_hash_field(time_ms::text))
$$;


--
-- Name: rewind_followable_below(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_followable_below() RETURNS bigint
    LANGUAGE sql STABLE
    AS $$
    SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::bigint + (SELECT base FROM log_position_base)) << 20
$$;


--
-- Name: rewind_hash_field(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_hash_field(x text) RETURNS bytea
    LANGUAGE sql IMMUTABLE
    AS $$
    SELECT CASE WHEN x IS NULL THEN int8send(-1)
                ELSE int8send(octet_length(x)::bigint) || convert_to(x, 'UTF8') END
$$;


--
-- Name: rewind_log_check(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_log_check() RETURNS trigger
    LANGUAGE plpgsql
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    bad text;
    bad_seq bigint;
    malformed boolean;
BEGIN
    SELECT n.doc, n.seq, n.ill_formed INTO bad, bad_seq, malformed FROM (
        SELECT o.*, CASE WHEN o.prev_seq IS NULL AND o.seq > 1
                         THEN (SELECT p.version FROM log p WHERE p.doc = o.doc AND p.seq = o.seq - 1) END AS stored_version
        FROM (SELECT doc, seq, version, entry, ill_formed, lag(seq) OVER w AS prev_seq, lag(version) OVER w AS prev_version
              FROM (SELECT doc, seq, version, entry,
                           NOT coalesce(seq > 0 AND version >= 0 AND entry IN ('event', 'mark') AND octet_length(hash) = 32
                               AND (entry = 'mark' OR (version > 0 AND kind IN ('edit', 'undo', 'redo', 'restore')
                                    AND grp IS NOT NULL AND tx <> '' AND tx_digest IS NOT NULL AND base >= 0 AND base < version
                                    AND ops IS NOT NULL AND inverse IS NOT NULL))
                               AND (entry = 'event' OR (kind IN ('close', 'rename', 'clear', 'levels')
                                    AND base IS NULL AND ops IS NULL)),
                               true) AS ill_formed
                    FROM new_rows OFFSET 0) r
              WINDOW w AS (PARTITION BY doc ORDER BY seq)) o
        OFFSET 0) n
    WHERE n.ill_formed OR CASE WHEN n.prev_seq IS NULL
               THEN (n.seq > 1 AND n.stored_version IS NULL)
                    OR n.version <> coalesce(n.stored_version, 0) + (n.entry = 'event')::int
               ELSE n.seq <> n.prev_seq + 1 OR n.version <> n.prev_version + (n.entry = 'event')::int END
    LIMIT 1;
    IF malformed THEN
        RAISE EXCEPTION 'entry % of % is not a well-formed log entry (its seq, version, entry, kind, hash or the columns its kind requires)',
            bad_seq, bad USING ERRCODE = 'check_violation';
    END IF;
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


--
-- Name: rewind_log_position(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_log_position() RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    n bigint := coalesce(nullif(current_setting('rewind.log_position', true), ''), '0')::bigint + 1;
BEGIN
    IF n >= 1048576 THEN
        RAISE EXCEPTION 'one transaction appends at most 1048575 entries to the log (their positions)';
    END IF;
    PERFORM set_config('rewind.log_position', n::text, true);
    RETURN ((pg_current_xact_id()::text::bigint + (SELECT base FROM log_position_base)) << 20) | n;
END $$;


--
-- Name: rewind_log_positions_repair(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_log_positions_repair() RETURNS boolean
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (SELECT coalesce(max(position), 0) FROM log) < rewind_followable_below() THEN
        RETURN false;
    END IF;
    LOCK TABLE log IN EXCLUSIVE MODE;
    UPDATE log_position_base
    SET base = greatest(base, ((SELECT max(position) FROM log) >> 20) + 1 - pg_current_xact_id()::text::bigint);
    RETURN true;
END $$;


--
-- Name: rewind_notify_access(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_notify_access() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_TABLE_NAME = 'access' THEN
        IF TG_OP = 'DELETE' THEN
            PERFORM pg_notify('rewind_access', 'doc:' || OLD.doc);
        ELSE
            PERFORM pg_notify('rewind_access', 'doc:' || NEW.doc);
            IF TG_OP = 'UPDATE' AND OLD.doc <> NEW.doc THEN
                PERFORM pg_notify('rewind_access', 'doc:' || OLD.doc);
            END IF;
        END IF;
    ELSIF NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL THEN
        PERFORM pg_notify('rewind_access', 'user:' || NEW.user_id);
    END IF;
    RETURN NULL;
END $$;


--
-- Name: rewind_notify_document_deleted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_notify_document_deleted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('rewind_access', 'doc:' || NEW.id);
    RETURN NULL;
END $$;


--
-- Name: rewind_notify_document_renamed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_notify_document_renamed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('rewind_access', 'title:' || NEW.id);
    RETURN NULL;
END $$;


--
-- Name: rewind_notify_shards_changed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_notify_shards_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('rewind_access', 'shards');
    RETURN NULL;
END $$;


--
-- Name: rewind_notify_token_denial(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_notify_token_denial() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM pg_notify('rewind_access', 'denied:' || json_build_object(
        'issuer', NEW.issuer, 'subject', NEW.subject, 'token_id', NEW.token_id)::text);
    RETURN NULL;
END $$;


--
-- Name: rewind_refuse_change(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'restrict_violation';
END $$;


--
-- Name: rewind_token_denied(text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_token_denied(iss text, sub text, jti text) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
    SELECT EXISTS (
        SELECT 1 FROM token_denials d
        WHERE (d.until IS NULL OR d.until > now())
          AND (d.issuer IS NULL OR d.issuer = iss)
          AND (d.subject = sub OR d.token_id = jti))
$$;


--
-- Name: rewind_user_copy(bigint, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_user_copy(p_id bigint, p_name text, p_display_name text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM shard_identity) THEN
        RAISE EXCEPTION 'rewind_user_copy: this database is a catalog, not a shard; its users are its own'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO users (id, name, display_name) VALUES (p_id, p_name, p_display_name)
    ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, display_name = EXCLUDED.display_name
        WHERE users.name IS DISTINCT FROM EXCLUDED.name OR users.display_name IS DISTINCT FROM EXCLUDED.display_name;
END $$;


--
-- Name: rewind_user_for_identity(text, text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rewind_user_for_identity(iss text, sub text, display text) RETURNS TABLE(id bigint, name text, display_name text, made boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public'
    AS $$
DECLARE
    uid bigint;
    handle text;
    fresh boolean := false;
BEGIN
    SELECT i.user_id INTO uid FROM identities i WHERE i.issuer = iss AND i.subject = sub;
    IF uid IS NULL THEN
        uid := nextval(pg_get_serial_sequence('users', 'id'));
        handle := sub;
        IF octet_length(handle) > 64 OR EXISTS (SELECT 1 FROM users u WHERE u.name = handle) THEN
            handle := convert_from(substring(convert_to(sub, 'UTF8') FROM 1 FOR 44), 'UTF8') || '~' || uid;
        END IF;
        INSERT INTO users (id, name, display_name) VALUES (uid, handle, display);
        INSERT INTO identities (issuer, subject, user_id) VALUES (iss, sub, uid) ON CONFLICT (issuer, subject) DO NOTHING;
        IF FOUND THEN
            fresh := true;
        ELSE
            DELETE FROM users u WHERE u.id = uid;
            SELECT i.user_id INTO uid FROM identities i WHERE i.issuer = iss AND i.subject = sub;
        END IF;
    ELSIF display IS NOT NULL THEN
        UPDATE users u SET display_name = display WHERE u.id = uid AND u.display_name IS DISTINCT FROM display AND u.erased_at IS NULL;
    END IF;
    RETURN QUERY SELECT u.id, u.name, u.display_name, fresh FROM users u WHERE u.id = uid;
END
$$;




--
-- Name: access; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.access (
    doc text NOT NULL,
    user_id bigint NOT NULL,
    role text NOT NULL,
    granted_by bigint,
    granted_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT access_role_check CHECK ((role = ANY (ARRAY['editor'::text, 'viewer'::text])))
);


--
-- Name: api_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_keys (
    id bigint NOT NULL,
    name text NOT NULL,
    key_hash bytea NOT NULL,
    scopes text[] NOT NULL,
    service_user bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_key_hash_check CHECK ((octet_length(key_hash) = 32)),
    CONSTRAINT api_keys_name_check CHECK ((name ~ '^[A-Za-z0-9._-]{1,60}$'::text)),
    CONSTRAINT api_keys_scopes_check CHECK (((cardinality(scopes) > 0) AND (scopes <@ ARRAY['docs:read'::text, 'docs:write'::text, 'access:write'::text, 'events:read'::text])))
);


--
-- Name: api_keys_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.api_keys_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: api_keys_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.api_keys_id_seq OWNED BY public.api_keys.id;


--
-- Name: document_editors; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.document_editors (
    doc text NOT NULL,
    user_id bigint NOT NULL,
    last_edit timestamp with time zone NOT NULL
);


--
-- Name: document_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.document_keys (
    doc text NOT NULL,
    key_id text NOT NULL,
    master_key_id text NOT NULL,
    wrapped bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT document_keys_wrapped_check CHECK ((octet_length(wrapped) = 60))
);


--
-- Name: documents; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.documents (
    id text NOT NULL,
    title text,
    owner bigint NOT NULL,
    head bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    seq bigint DEFAULT 0 NOT NULL,
    head_hash bytea DEFAULT '\x'::bytea NOT NULL,
    deleted_at timestamp with time zone,
    purged_at timestamp with time zone,
    moved_to text,
    CONSTRAINT documents_head_check CHECK ((head >= 0)),
    CONSTRAINT documents_id_check CHECK (((id <> ''::text) AND (octet_length(id) <= 256))),
    CONSTRAINT documents_purged_deleted CHECK (((purged_at IS NULL) OR (deleted_at IS NOT NULL))),
    CONSTRAINT documents_seq_check CHECK ((seq >= 0))
);


--
-- Name: log; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.log (
    doc text NOT NULL,
    seq bigint NOT NULL,
    version bigint NOT NULL,
    entry text NOT NULL,
    id uuid NOT NULL,
    user_id bigint NOT NULL,
    client text NOT NULL,
    kind text NOT NULL,
    grp text,
    action text,
    tx text,
    tx_digest text,
    base bigint,
    ops text,
    inverse text,
    refers text,
    meta text,
    "time" timestamp with time zone NOT NULL,
    hash bytea NOT NULL,
    "position" bigint DEFAULT public.rewind_log_position() NOT NULL
);
ALTER TABLE ONLY public.log ALTER COLUMN doc SET (n_distinct=-0.001);


--
-- Name: events; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.events AS
 SELECT log.doc,
    log.version,
    log.seq,
    log.id AS event_id,
    log.tx,
    log.tx_digest,
    log.user_id,
    log.client,
    log.grp,
    log.kind,
    log.action,
    log.base,
    log.ops,
    log.inverse,
    log.refers,
    log.meta,
    log."time",
    log.hash
   FROM public.log
  WHERE (log.entry = 'event'::text);


--
-- Name: identities; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.identities (
    issuer text NOT NULL,
    subject text NOT NULL,
    user_id bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT identities_subject_check CHECK (((subject <> ''::text) AND (octet_length(subject) <= 255)))
);


--
-- Name: log_position_base; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.log_position_base (
    one boolean DEFAULT true NOT NULL,
    base bigint DEFAULT 0 NOT NULL,
    CONSTRAINT log_position_base_base_check CHECK ((base >= 0)),
    CONSTRAINT log_position_base_one_check CHECK (one)
);


--
-- Name: master_key; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.master_key (
    one boolean DEFAULT true NOT NULL,
    key_id text NOT NULL,
    set_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT master_key_one_check CHECK (one)
);


--
-- Name: placement_policy; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.placement_policy (
    one boolean DEFAULT true NOT NULL,
    policy text NOT NULL,
    set_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT placement_policy_one_check CHECK (one)
);


--
-- Name: placements; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.placements (
    doc text NOT NULL,
    shard text NOT NULL,
    placed_at timestamp with time zone DEFAULT now() NOT NULL,
    moving_to text,
    CONSTRAINT placements_doc_check CHECK (((doc <> ''::text) AND (octet_length(doc) <= 256)))
);


--
-- Name: prompt_counters; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.prompt_counters (
    doc text NOT NULL,
    last bigint NOT NULL
);


--
-- Name: prompts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.prompts (
    id text NOT NULL,
    doc text NOT NULL,
    user_id bigint NOT NULL,
    client text NOT NULL,
    cause jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    answered_at timestamp with time zone,
    answered text,
    answered_by integer
);


--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: shard_identity; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shard_identity (
    one boolean DEFAULT true NOT NULL,
    name text NOT NULL,
    CONSTRAINT shard_identity_one_check CHECK (one)
);


--
-- Name: shards; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shards (
    name text NOT NULL,
    conninfo text NOT NULL,
    state text DEFAULT 'accepting'::text NOT NULL,
    added_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT shards_check CHECK (((name = 'home'::text) = (conninfo = ''::text))),
    CONSTRAINT shards_name_check CHECK ((name ~ '^[a-z0-9][a-z0-9_-]{0,31}$'::text)),
    CONSTRAINT shards_state_check CHECK ((state = ANY (ARRAY['accepting'::text, 'closed'::text, 'draining'::text])))
);


--
-- Name: snapshots; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.snapshots (
    doc text NOT NULL,
    version bigint NOT NULL,
    state text NOT NULL,
    created timestamp with time zone DEFAULT now() NOT NULL,
    seq bigint NOT NULL,
    hash bytea NOT NULL,
    digest bytea NOT NULL,
    CONSTRAINT snapshots_digest_check CHECK ((octet_length(digest) = 32)),
    CONSTRAINT snapshots_hash_check CHECK ((octet_length(hash) = 32)),
    CONSTRAINT snapshots_seq_check CHECK ((seq > 0)),
    CONSTRAINT snapshots_version_check CHECK ((version > 0))
);


--
-- Name: token_denials; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.token_denials (
    id bigint NOT NULL,
    issuer text,
    subject text,
    token_id text,
    until timestamp with time zone,
    reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT token_denials_check CHECK (((subject IS NULL) <> (token_id IS NULL))),
    CONSTRAINT token_denials_issuer_check CHECK ((octet_length(issuer) <= 255)),
    CONSTRAINT token_denials_reason_check CHECK ((octet_length(reason) <= 200)),
    CONSTRAINT token_denials_subject_check CHECK (((subject <> ''::text) AND (octet_length(subject) <= 255))),
    CONSTRAINT token_denials_token_id_check CHECK (((token_id <> ''::text) AND (octet_length(token_id) <= 255)))
);


--
-- Name: token_denials_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.token_denials_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: token_denials_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.token_denials_id_seq OWNED BY public.token_denials.id;


--
-- Name: tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tokens (
    token_hash bytea NOT NULL,
    user_id bigint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT tokens_token_hash_check CHECK ((octet_length(token_hash) = 32))
);


--
-- Name: users; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.users (
    id bigint NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    erased_at timestamp with time zone,
    display_name text,
    CONSTRAINT users_display_name_check CHECK (((display_name IS NULL) OR ((display_name <> ''::text) AND (octet_length(display_name) <= 64)))),
    CONSTRAINT users_name_check CHECK (((name <> ''::text) AND (octet_length(name) <= 64)))
);


--
-- Name: users_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.users_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: users_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.users_id_seq OWNED BY public.users.id;


--
-- Name: webhooks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhooks (
    id bigint NOT NULL,
    url text NOT NULL,
    secret text NOT NULL,
    kinds text[],
    doc_prefix text,
    with_ops boolean DEFAULT true NOT NULL,
    "position" bigint NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    disabled_reason text,
    generation integer DEFAULT 1 NOT NULL,
    lease_owner text,
    lease_until timestamp with time zone,
    delivered bigint DEFAULT 0 NOT NULL,
    last_delivered_at timestamp with time zone,
    failing_since timestamp with time zone,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT webhooks_doc_prefix_check CHECK (((doc_prefix IS NULL) OR (doc_prefix <> ''::text))),
    CONSTRAINT webhooks_kinds_check CHECK (((kinds IS NULL) OR (cardinality(kinds) > 0))),
    CONSTRAINT webhooks_position_check CHECK (("position" >= 0)),
    CONSTRAINT webhooks_secret_check CHECK ((secret ~~ 'whsec\_%'::text)),
    CONSTRAINT webhooks_url_check CHECK (((url ~ '^https?://'::text) AND (octet_length(url) <= 2048)))
);


--
-- Name: webhooks_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.webhooks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: webhooks_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.webhooks_id_seq OWNED BY public.webhooks.id;


--
-- Name: api_keys id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys ALTER COLUMN id SET DEFAULT nextval('public.api_keys_id_seq'::regclass);


--
-- Name: token_denials id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.token_denials ALTER COLUMN id SET DEFAULT nextval('public.token_denials_id_seq'::regclass);


--
-- Name: users id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.users ALTER COLUMN id SET DEFAULT nextval('public.users_id_seq'::regclass);


--
-- Name: webhooks id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhooks ALTER COLUMN id SET DEFAULT nextval('public.webhooks_id_seq'::regclass);


--
-- Name: access access_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.access
    ADD CONSTRAINT access_pkey PRIMARY KEY (doc, user_id);


--
-- Name: api_keys api_keys_key_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);


--
-- Name: api_keys api_keys_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_name_key UNIQUE (name);


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);


--
-- Name: api_keys api_keys_service_user_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_service_user_key UNIQUE (service_user);


--
-- Name: document_editors document_editors_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.document_editors
    ADD CONSTRAINT document_editors_pkey PRIMARY KEY (doc, user_id);


--
-- Name: document_keys document_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.document_keys
    ADD CONSTRAINT document_keys_pkey PRIMARY KEY (doc);


--
-- Name: documents documents_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_pkey PRIMARY KEY (id);


--
-- Name: identities identities_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identities
    ADD CONSTRAINT identities_pkey PRIMARY KEY (issuer, subject);


--
-- Name: identities identities_user_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identities
    ADD CONSTRAINT identities_user_id_key UNIQUE (user_id);


--
-- Name: log log_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.log
    ADD CONSTRAINT log_id_key UNIQUE (id);


--
-- Name: log log_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.log
    ADD CONSTRAINT log_pkey PRIMARY KEY (doc, seq);


--
-- Name: log_position_base log_position_base_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.log_position_base
    ADD CONSTRAINT log_position_base_pkey PRIMARY KEY (one);


--
-- Name: master_key master_key_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.master_key
    ADD CONSTRAINT master_key_pkey PRIMARY KEY (one);


--
-- Name: placement_policy placement_policy_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.placement_policy
    ADD CONSTRAINT placement_policy_pkey PRIMARY KEY (one);


--
-- Name: placements placements_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.placements
    ADD CONSTRAINT placements_pkey PRIMARY KEY (doc);


--
-- Name: prompt_counters prompt_counters_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prompt_counters
    ADD CONSTRAINT prompt_counters_pkey PRIMARY KEY (doc);


--
-- Name: prompts prompts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prompts
    ADD CONSTRAINT prompts_pkey PRIMARY KEY (id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: shard_identity shard_identity_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shard_identity
    ADD CONSTRAINT shard_identity_pkey PRIMARY KEY (one);


--
-- Name: shards shards_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shards
    ADD CONSTRAINT shards_pkey PRIMARY KEY (name);


--
-- Name: snapshots snapshots_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.snapshots
    ADD CONSTRAINT snapshots_pkey PRIMARY KEY (doc, seq);


--
-- Name: token_denials token_denials_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.token_denials
    ADD CONSTRAINT token_denials_pkey PRIMARY KEY (id);


--
-- Name: tokens tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tokens
    ADD CONSTRAINT tokens_pkey PRIMARY KEY (token_hash);


--
-- Name: users users_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_name_key UNIQUE (name);


--
-- Name: users users_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);


--
-- Name: webhooks webhooks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhooks
    ADD CONSTRAINT webhooks_pkey PRIMARY KEY (id);


--
-- Name: access_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX access_user ON public.access USING btree (user_id);


--
-- Name: document_editors_doc; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX document_editors_doc ON public.document_editors USING btree (doc, last_edit DESC);


--
-- Name: document_editors_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX document_editors_user ON public.document_editors USING btree (user_id, last_edit DESC);


--
-- Name: documents_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX documents_owner ON public.documents USING btree (owner);


--
-- Name: log_event_tx; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX log_event_tx ON public.log USING btree (doc, user_id, tx) WHERE (entry = 'event'::text);


--
-- Name: log_event_version; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX log_event_version ON public.log USING btree (doc, version) WHERE (entry = 'event'::text);


--
-- Name: log_mark_tx; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX log_mark_tx ON public.log USING btree (doc, user_id, tx) WHERE ((entry = 'mark'::text) AND (tx IS NOT NULL));


--
-- Name: log_position; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX log_position ON public.log USING btree ("position");


--
-- Name: placements_shard; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX placements_shard ON public.placements USING btree (shard);


--
-- Name: prompts_ended; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX prompts_ended ON public.prompts USING btree (COALESCE(answered_at, expires_at));


--
-- Name: prompts_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX prompts_open ON public.prompts USING btree (doc, user_id, client) WHERE (answered_at IS NULL);


--
-- Name: token_denials_subject; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX token_denials_subject ON public.token_denials USING btree (subject) WHERE (subject IS NOT NULL);


--
-- Name: token_denials_token_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX token_denials_token_id ON public.token_denials USING btree (token_id) WHERE (token_id IS NOT NULL);


--
-- Name: tokens_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tokens_user ON public.tokens USING btree (user_id);


--
-- Name: access access_notify; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER access_notify AFTER INSERT OR DELETE OR UPDATE ON public.access FOR EACH ROW EXECUTE FUNCTION public.rewind_notify_access();


--
-- Name: documents documents_deleted; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER documents_deleted AFTER UPDATE OF deleted_at ON public.documents FOR EACH ROW WHEN ((old.deleted_at IS DISTINCT FROM new.deleted_at)) EXECUTE FUNCTION public.rewind_notify_document_deleted();


--
-- Name: documents documents_renamed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER documents_renamed AFTER UPDATE OF title ON public.documents FOR EACH ROW WHEN (((old.title IS DISTINCT FROM new.title) AND (new.purged_at IS NULL))) EXECUTE FUNCTION public.rewind_notify_document_renamed();


--
-- Name: log log_append_only; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER log_append_only BEFORE DELETE OR UPDATE ON public.log FOR EACH ROW EXECUTE FUNCTION public.rewind_refuse_change();


--
-- Name: log log_gapless; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER log_gapless AFTER INSERT ON public.log REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.rewind_log_check();


--
-- Name: log log_no_truncate; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER log_no_truncate BEFORE TRUNCATE ON public.log FOR EACH STATEMENT EXECUTE FUNCTION public.rewind_refuse_change();


--
-- Name: placement_policy placement_policy_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER placement_policy_changed AFTER INSERT OR DELETE OR UPDATE ON public.placement_policy FOR EACH STATEMENT EXECUTE FUNCTION public.rewind_notify_shards_changed();


--
-- Name: shards shards_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER shards_changed AFTER INSERT OR DELETE OR UPDATE ON public.shards FOR EACH STATEMENT EXECUTE FUNCTION public.rewind_notify_shards_changed();


--
-- Name: token_denials token_denials_notify; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER token_denials_notify AFTER INSERT ON public.token_denials FOR EACH ROW EXECUTE FUNCTION public.rewind_notify_token_denial();


--
-- Name: tokens tokens_notify_revoked; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER tokens_notify_revoked AFTER UPDATE OF revoked_at ON public.tokens FOR EACH ROW EXECUTE FUNCTION public.rewind_notify_access();


--
-- Name: access access_doc_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.access
    ADD CONSTRAINT access_doc_fkey FOREIGN KEY (doc) REFERENCES public.documents(id);


--
-- Name: access access_granted_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.access
    ADD CONSTRAINT access_granted_by_fkey FOREIGN KEY (granted_by) REFERENCES public.users(id);


--
-- Name: access access_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.access
    ADD CONSTRAINT access_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);


--
-- Name: api_keys api_keys_service_user_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_service_user_fkey FOREIGN KEY (service_user) REFERENCES public.users(id);


--
-- Name: document_editors document_editors_doc_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.document_editors
    ADD CONSTRAINT document_editors_doc_fkey FOREIGN KEY (doc) REFERENCES public.documents(id);


--
-- Name: document_editors document_editors_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.document_editors
    ADD CONSTRAINT document_editors_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) DEFERRABLE INITIALLY DEFERRED;


--
-- Name: document_keys document_keys_doc_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.document_keys
    ADD CONSTRAINT document_keys_doc_fkey FOREIGN KEY (doc) REFERENCES public.documents(id);


--
-- Name: documents documents_owner_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_owner_fkey FOREIGN KEY (owner) REFERENCES public.users(id);


--
-- Name: identities identities_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.identities
    ADD CONSTRAINT identities_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);


--
-- Name: placements placements_moving_to_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.placements
    ADD CONSTRAINT placements_moving_to_fkey FOREIGN KEY (moving_to) REFERENCES public.shards(name);


--
-- Name: placements placements_shard_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.placements
    ADD CONSTRAINT placements_shard_fkey FOREIGN KEY (shard) REFERENCES public.shards(name);


--
-- Name: prompts prompts_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prompts
    ADD CONSTRAINT prompts_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);


--
-- Name: snapshots snapshots_doc_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.snapshots
    ADD CONSTRAINT snapshots_doc_fkey FOREIGN KEY (doc) REFERENCES public.documents(id);


--
-- Name: tokens tokens_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tokens
    ADD CONSTRAINT tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);


--
--


