-- Snapshots: a document's state and undo history at some version, so that
-- opening a long document does not replay its whole log. Derived data: any
-- snapshot can be dropped and rebuilt from the log (`rewind admin replay`
-- never uses them).
CREATE TABLE snapshots (
    doc      text NOT NULL REFERENCES documents(id),
    version  bigint NOT NULL CHECK (version > 0),
    marks    bigint NOT NULL CHECK (marks >= 0),
    state    text NOT NULL,
    created  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (doc, version, marks)
);
