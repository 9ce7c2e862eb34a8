-- Open a version for every staged offer that has no open version now: new, or its version
-- was just closed as changed (merge_match.unchanged NULL or false). Returns how many.
-- $1 = run id.
INSERT INTO recent_versions BY NAME
SELECT
    s.* EXCLUDE (stage_row),
    s.observed_at AS valid_from,
    NULL          AS valid_to,
    s.observed_at AS last_seen_at,
    $1            AS opened_by_run,
    NULL          AS closed_by_run
FROM stage s
WHERE s.stage_row IN (SELECT stage_row FROM merge_match
                      WHERE stage_row IS NOT NULL AND unchanged IS NOT TRUE);
