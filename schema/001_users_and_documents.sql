-- Users authenticate with tokens; only a SHA-256 of each token is stored.
CREATE TABLE users (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> '' AND octet_length(name) <= 64),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tokens (
    token_hash  bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
    user_id     bigint NOT NULL REFERENCES users(id),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tokens_user ON tokens(user_id);

-- A document's head is the version of its newest event. Appends lock this row,
-- which orders the appends of one document across connections and servers.
CREATE TABLE documents (
    id          text PRIMARY KEY CHECK (id <> '' AND octet_length(id) <= 256),
    title       text,
    owner       bigint NOT NULL REFERENCES users(id),
    head        bigint NOT NULL DEFAULT 0 CHECK (head >= 0),
    created_at  timestamptz NOT NULL DEFAULT now()
);
