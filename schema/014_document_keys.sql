-- Content encrypted per document (SPEC section 15). Each document has a
-- data key, created the first time it is needed and stored only wrapped by
-- the master key (AES-256-GCM), which lives in a file beside the server and
-- never in the database. Events' ops and inverse, and snapshots, are stored
-- sealed with the data key (`DocumentCipher`: "~<key id>:<base64>"), and the
-- hash chain covers that text. Purging a document deletes its wrapped key,
-- its snapshots, editors and title: its log rows stay, verifiable, and can
-- no longer be read by anyone.

-- The master key the data keys are wrapped with, by its id (a fingerprint,
-- not the key): a server given another key refuses to start.
CREATE TABLE master_key (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    key_id  text NOT NULL,
    set_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE document_keys (
    doc            text PRIMARY KEY REFERENCES documents(id),
    key_id         text NOT NULL,
    master_key_id  text NOT NULL,
    wrapped        bytea NOT NULL CHECK (octet_length(wrapped) = 60),  -- nonce 12 + key 32 + tag 16
    created_at     timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE documents ADD COLUMN purged_at timestamptz;
ALTER TABLE documents ADD CONSTRAINT documents_purged_deleted CHECK (purged_at IS NULL OR deleted_at IS NOT NULL);

-- `rewind admin user erase`: the name is replaced by a pseudonym, the id stays.
ALTER TABLE users ADD COLUMN erased_at timestamptz;
