-- Prompts that outlive a server (issue 49): an undo prompt (a shake's, a
-- conflict's) shown to a terminal is a row here until it is answered,
-- cancelled or expires, so that the terminal (user and `client`) sees it
-- again on whichever instance it opens the document next, and so that the
-- first answer wins across instances (an answer is an UPDATE of a row still
-- open; the others find it taken). `cause` is what the prompt is about
-- (RewindCore's PromptCause): the prompt is rebuilt from it, in the locale of
-- the terminal that shows it. Rows are deleted an hour after they end.
CREATE TABLE prompts (
    id          text PRIMARY KEY,                 -- DOC:pN, N counted in prompt_counters
    doc         text NOT NULL,
    user_id     bigint NOT NULL REFERENCES users(id),
    client      text NOT NULL,                    -- the terminal, as its hello named it
    cause       jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    answered_at timestamptz,                      -- answered or cancelled
    answered    text,                             -- the action chosen ("cancel" when cancelled)
    answered_by integer                           -- the instance that took the answer
);
CREATE INDEX prompts_open ON prompts (doc, user_id, client) WHERE answered_at IS NULL;
CREATE INDEX prompts_ended ON prompts (coalesce(answered_at, expires_at));

-- A document's prompt ids are never given twice, across instances and restarts:
-- the first prompt of a document is DOC:p1 (the README's session answers it by name).
CREATE TABLE prompt_counters (
    doc  text PRIMARY KEY,
    last bigint NOT NULL
);
