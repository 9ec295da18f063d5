-- The append functions run in the server's long-lived session. PL/pgSQL caches
-- their plans; a generic plan made while `events` is still empty (a new
-- database) may look events up by `doc` alone through the (doc, user_id, tx)
-- index, reading the document's whole history on every append until the
-- table is analyzed. Plans made for the actual values always take the right
-- index (found by scripts/bench/commit: ~3,300 → ~500 commits/s in 20 s).
ALTER FUNCTION rewind_append(text, bigint, uuid, text, text, bigint, text, text, text, text, bigint,
                             text, text, text, bigint, uuid, text, bigint)
    SET plan_cache_mode = force_custom_plan;
ALTER FUNCTION rewind_mark(text, bigint, bigint, uuid, bigint, text, text, text, text, text, text, text, bigint)
    SET plan_cache_mode = force_custom_plan;
ALTER FUNCTION rewind_check_gapless() SET plan_cache_mode = force_custom_plan;
