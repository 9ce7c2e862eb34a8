-- Unchanged offers were seen again: advance last_seen_at (one timestamp column, every night).
-- $1 = provider.
UPDATE offer_versions AS v
SET last_seen_at = s.observed_at
FROM stage s
WHERE v.provider = $1 AND v.valid_to IS NULL
  AND v.offer_key = s.offer_key AND v.row_hash = s.row_hash;
