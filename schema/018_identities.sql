-- Identity from the app (issue 46): users an application's signed tokens
-- (JWT) name. The first valid token for (issuer, subject) makes the user —
-- with no stored secret: its tokens are the app's — and later tokens find it.
-- Roles, sharing and erasure then work for it as for a user made by the CLI.
CREATE TABLE identities (
    issuer      text NOT NULL,  -- the token's `iss`, '' when it has none
    subject     text NOT NULL CHECK (subject <> '' AND octet_length(subject) <= 255),
    user_id     bigint NOT NULL UNIQUE REFERENCES users(id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);

-- The name shown for a user in presence and events (a token's `name`),
-- beside `name`, the unique handle `share` and `hello` take (for a token's
-- user: its subject). Null: the handle is shown.
ALTER TABLE users ADD COLUMN display_name text
    CHECK (display_name IS NULL OR (display_name <> '' AND octet_length(display_name) <= 64));

-- The user of (iss, sub), made on first sight, its display name updated when
-- the token's differs. SECURITY DEFINER: the server's role may make users
-- only this way, never write `users` itself (deploy/roles.sql). The handle
-- is the subject, or — when a user already has that name (one made by the
-- CLI, or another issuer's subject) — the subject's first 44 bytes, `~` and
-- the new id. Two instances meeting the same new subject at once: one
-- insert wins, the other removes its own user and answers the winner's.
CREATE FUNCTION rewind_user_for_identity(iss text, sub text, display text)
RETURNS TABLE (id bigint, name text, display_name text, made boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
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

-- Only the roles granted it (deploy/roles.sql: rewind_server) may make users this way.
REVOKE ALL ON FUNCTION rewind_user_for_identity(text, text, text) FROM PUBLIC;
