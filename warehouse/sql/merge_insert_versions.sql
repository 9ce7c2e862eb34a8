-- Open a version for every staged offer that has no open version now (new or just closed).
-- $1 = provider, $2 = run id.
INSERT INTO offer_versions BY NAME
SELECT
    s.*,
    s.observed_at AS valid_from,
    NULL          AS valid_to,
    s.observed_at AS last_seen_at,
    $2            AS opened_by_run,
    NULL          AS closed_by_run
FROM stage s
WHERE NOT EXISTS (
    SELECT 1 FROM offer_versions v
    WHERE v.provider = $1 AND v.valid_to IS NULL AND v.offer_key = s.offer_key
);
