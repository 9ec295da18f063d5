-- Signed tokens denied by an operator (issue 46: `rewind admin token deny`).
-- A signed token is the app's word and lives until its `exp`; this is how an
-- operator takes that word back before then: every token of a subject (of
-- one issuer, or of any), or one token by its `jti`, for ever or until a
-- time. Denied tokens are refused at `hello` and `refresh`
-- (`rewind_token_denied`), and the open connections they made end on every
-- instance (the notice below).
CREATE TABLE token_denials (
    id          bigserial PRIMARY KEY,
    issuer      text CHECK (octet_length(issuer) <= 255),  -- null: any issuer ('' is a token without `iss`)
    subject     text CHECK (subject <> '' AND octet_length(subject) <= 255),
    token_id    text CHECK (token_id <> '' AND octet_length(token_id) <= 255),
    until       timestamptz,                     -- null: for ever
    reason      text CHECK (octet_length(reason) <= 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((subject IS NULL) <> (token_id IS NULL))  -- a subject or one token, never both
);
CREATE INDEX token_denials_subject ON token_denials(subject) WHERE subject IS NOT NULL;
CREATE INDEX token_denials_token_id ON token_denials(token_id) WHERE token_id IS NOT NULL;

-- Whether a token of (iss, sub, jti) is denied now. `iss` is '' for a token
-- without one; `jti` null for a token without one.
CREATE FUNCTION rewind_token_denied(iss text, sub text, jti text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM token_denials d
        WHERE (d.until IS NULL OR d.until > now())
          AND (d.issuer IS NULL OR d.issuer = iss)
          AND (d.subject = sub OR d.token_id = jti))
$$;

-- Every instance hears a new denial on `rewind_access` (as revoked tokens,
-- schema/007) and ends the connections it covers: `denied:` and the row as
-- JSON ({issuer, subject, token_id}), in the denying transaction.
CREATE FUNCTION rewind_notify_token_denial() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rewind_access', 'denied:' || json_build_object(
        'issuer', NEW.issuer, 'subject', NEW.subject, 'token_id', NEW.token_id)::text);
    RETURN NULL;
END $$;
CREATE TRIGGER token_denials_notify AFTER INSERT ON token_denials
    FOR EACH ROW EXECUTE FUNCTION rewind_notify_token_denial();
