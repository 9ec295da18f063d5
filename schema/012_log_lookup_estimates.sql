-- How many entries PostgreSQL expects per document decides how it looks an
-- entry up. Analyzed while the log was young (many documents of an entry or
-- two), `log.doc` looks unique: an equality on `doc` alone is then estimated
-- at one row, and the append statement's duplicate check probed
-- `log_event_version` by `doc` and filtered on (user_id, tx), reading a
-- busy document's whole history for every entry of every batch (issue 25:
-- seconds per batch once a document had ~100,000 entries). Fixing the
-- estimate at about a thousand entries per document (n_distinct as a
-- fraction of the rows) makes the unique (doc, user_id, tx) index the
-- cheaper probe at every size, so a plan made once, on a young log, stays
-- right as the log grows (PlanStabilityTests). Planning the statement per
-- batch instead (force_custom_plan) was tried: it cost a third of the
-- commits at 50 terminals (scripts/bench/commit, 7,075 → 4,703 c/s).
ALTER TABLE log ALTER COLUMN doc SET (n_distinct = -0.001);
ANALYZE log;
