-- A least-privilege role for rewind-server. Run as the schema owner after
-- `rewind admin migrate`, then give the server `user=rewind_server`.
-- The server appends to the log and reads everything it serves; it cannot
-- UPDATE or DELETE log entries (the append-only triggers refuse that even
-- for the owner), change users or tokens, or alter the schema. It shares
-- documents on behalf of their owners (`share`), so it writes `access`.
-- Admin commands (`rewind admin`) run as the schema owner.
DO $$ BEGIN
    CREATE ROLE rewind_server LOGIN;
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;

GRANT USAGE ON SCHEMA public TO rewind_server;
GRANT SELECT ON users, tokens, schema_migrations, events TO rewind_server;
GRANT SELECT, INSERT ON documents TO rewind_server;
GRANT UPDATE (head, seq, head_hash, deleted_at, title) ON documents TO rewind_server;
GRANT SELECT, INSERT, UPDATE, DELETE ON access TO rewind_server;
GRANT SELECT, INSERT ON log TO rewind_server;
GRANT SELECT, INSERT ON snapshots TO rewind_server;
GRANT SELECT, INSERT ON document_keys, master_key TO rewind_server;
-- Quick actions: who edited which document last, kept by a trigger on `log`
-- (schema/010) that runs as the role appending, and read at `hello`.
GRANT SELECT, INSERT, UPDATE ON document_editors TO rewind_server;
-- Identity from the app: a signed token's user is found, or made on first
-- sight, only through this function (schema/018); the server never writes `users`.
GRANT EXECUTE ON FUNCTION rewind_user_for_identity(text, text, text) TO rewind_server;
-- and refused when an operator denied it (`rewind admin token deny`, schema/019).
GRANT SELECT ON token_denials TO rewind_server;
-- The server API authenticates its callers by key (schema/020); keys are made by `rewind admin api-key`.
GRANT SELECT ON api_keys TO rewind_server;
-- Positions of log entries are offset by log_position_base (schema/021), read with each append.
GRANT SELECT ON log_position_base TO rewind_server;
-- Webhooks (schema/022) are added by `rewind admin webhook`; the server takes an
-- endpoint's lease and records how far it delivered.
GRANT SELECT ON webhooks TO rewind_server;
GRANT UPDATE (position, lease_owner, lease_until, delivered, last_delivered_at, failing_since, last_error, enabled, disabled_reason)
    ON webhooks TO rewind_server;
-- Prompts (schema/024): the server stores the undo prompts it shows, numbers
-- them per document, records the first answer and deletes rows an hour after they end.
GRANT SELECT, INSERT, UPDATE (answered_at, answered, answered_by), DELETE ON prompts TO rewind_server;
GRANT SELECT, INSERT, UPDATE ON prompt_counters TO rewind_server;
-- Shards (schema/028): the server reads the catalog's shards and policy, and
-- places new documents (a placement it made is taken back when the document
-- could not be made on its shard). On a shard, it copies the accounts of the
-- users it writes for from the catalog, only through this function. Run this
-- file on every shard too.
GRANT SELECT ON shards, placement_policy, shard_identity TO rewind_server;
GRANT SELECT, INSERT, DELETE ON placements TO rewind_server;
GRANT EXECUTE ON FUNCTION rewind_user_copy(bigint, text, text) TO rewind_server;
-- Every table the server touches is granted above; DeployRoleTests runs the
-- server as this role through every request type, so a table added without
-- its grant fails a test rather than a deployment.
