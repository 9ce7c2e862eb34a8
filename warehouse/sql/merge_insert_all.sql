-- A first load: the provider has no open version, so every staged offer opens one; no join
-- against the history is needed. The same rows as merge_insert_versions writes. $1 = run id.
INSERT INTO recent_versions BY NAME
SELECT
    s.* EXCLUDE (stage_row),
    s.observed_at AS valid_from,
    NULL          AS valid_to,
    s.observed_at AS last_seen_at,
    $1            AS opened_by_run,
    NULL          AS closed_by_run
FROM stage s;
