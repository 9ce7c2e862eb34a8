-- Close offers a complete refresh did not see: open versions no staged offer was paired with
-- (merge_match). Only called when every page was read; offers that were read but held back
-- (temp table keep_open) are not closed. Returns how many were closed.
-- $1 = run id, $2 = observation time of the refresh.
UPDATE recent_versions AS v
SET valid_to = $2, closed_by_run = $1
FROM merge_match m
WHERE v.rowid = m.version_id AND m.stage_row IS NULL
  AND v.offer_key NOT IN (SELECT offer_key FROM keep_open);
