-- Close the open version of every offer whose hash changed. $1 = provider, $2 = run id.
UPDATE offer_versions AS v
SET valid_to = s.observed_at, closed_by_run = $2
FROM stage s
WHERE v.provider = $1 AND v.valid_to IS NULL
  AND v.offer_key = s.offer_key AND v.row_hash <> s.row_hash;
