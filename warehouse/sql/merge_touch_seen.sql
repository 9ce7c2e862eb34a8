-- Unchanged offers were seen again: advance last_seen_at (one timestamp column, every night).
-- Only on an open version: a closed one is history and is never written again.
UPDATE recent_versions AS v
SET last_seen_at = m.observed_at
FROM merge_match m
WHERE v.rowid = m.version_id AND m.unchanged AND v.valid_to IS NULL;
