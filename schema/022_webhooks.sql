-- Webhooks (issue 47; PROTOCOL.md, "Following the log"): endpoints an
-- operator adds with `rewind admin webhook add`, each POSTed the log's
-- entries in position order, signed as the Standard Webhooks specification
-- says. A row is an endpoint and its delivery state:
--   position       everything up to it was delivered (or was not for it): a
--                  restart, or another instance taking over, resumes after it;
--   lease_owner,   which server instance delivers it, until when: one at a
--   lease_until    time across instances; the owner renews the lease well
--                  before it ends and stops posting well before it could end
--                  (RewindServer/Webhooks), and every write of its position
--                  is fenced by the lease and the generation;
--   generation     bumped by every operator's change (replay, enable,
--                  disable): an instance delivering the old generation stops.
-- The secret is kept as given to the receiver (the server signs with it).
CREATE TABLE webhooks (
    id               bigserial PRIMARY KEY,
    url              text NOT NULL CHECK (url ~ '^https?://' AND octet_length(url) <= 2048),
    secret           text NOT NULL CHECK (secret LIKE 'whsec\_%'),
    -- Entry kinds delivered (NULL: all); entries of other kinds move the position on.
    kinds            text[] CHECK (kinds IS NULL OR cardinality(kinds) > 0),
    doc_prefix       text CHECK (doc_prefix IS NULL OR doc_prefix <> ''),
    -- Whether deliveries carry the entries' ops (decrypted with the master key).
    with_ops         boolean NOT NULL DEFAULT true,
    position         bigint NOT NULL CHECK (position >= 0),
    enabled          boolean NOT NULL DEFAULT true,
    disabled_reason  text,
    generation       integer NOT NULL DEFAULT 1,
    lease_owner      text,
    lease_until      timestamptz,
    delivered        bigint NOT NULL DEFAULT 0,
    last_delivered_at timestamptz,
    failing_since    timestamptz,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now()
);
