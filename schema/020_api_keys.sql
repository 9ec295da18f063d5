-- The server API's keys (issue 47: `rewind admin api-key`). An application's
-- backend calls the API (`--api ADDR`) with `Authorization: Bearer <key>`.
-- Only a SHA-256 of each key is stored (it is shown once, when made); a
-- revoked key stays, for the record, and no longer authenticates. Each key
-- has scopes — what it may do — and a service user: who its edits are by
-- when a request names no user (a user like any other, `api:<name>`, with
-- no token of its own).
CREATE TABLE api_keys (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9._-]{1,60}$'),
    key_hash      bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    scopes        text[] NOT NULL CHECK (cardinality(scopes) > 0
                      AND scopes <@ ARRAY['docs:read', 'docs:write', 'access:write', 'events:read']),
    service_user  bigint NOT NULL UNIQUE REFERENCES users(id),
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);
