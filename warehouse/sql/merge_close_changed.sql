-- Close the open version of every offer whose hash changed; returns how many (the changed
-- offers). $1 = run id.
UPDATE recent_versions AS v
SET valid_to = m.observed_at, closed_by_run = $1
FROM merge_match m
WHERE v.rowid = m.version_id AND NOT m.unchanged;
