-- How many entries PostgreSQL expects per document decides how it looks an
-- entry up. Analyzed while the log was young (many documents of an entry or
-- two), `log.doc` looks unique: an equality on `doc` alone is then estimated
-- at one row, and the append statement's duplicate check probed
-- `log_event_version` by `doc` and filtered on (user_id, tx), reading a
-- busy document's whole history for every entry of every batch (issue 25:
-- seconds per batch once a document had ~100,000 entries). Fixing the
-- estimate at about a thousand entries per document (n_distinct as a
-- fraction of the rows) makes the unique (doc, user_id, tx) index the
-- cheaper probe at every size; the writers also plan the statement per batch
-- (`plan_cache_mode = force_custom_plan`), so the log's current size is
-- always the one planned for. PlanStabilityTests keeps both.
ALTER TABLE log ALTER COLUMN doc SET (n_distinct = -0.001);
ANALYZE log;
