-- Unchanged offers: refresh their current state in place; no new version. $1 = provider.
UPDATE offer_versions AS v
SET last_seen_at = s.observed_at,
    availability = s.availability,
    available_count = s.available_count,
    provider_data = s.provider_data,
    source_url = s.source_url,
    price_usd_per_hour = s.price_usd_per_hour,
    price_usd_per_gpu_hour = s.price_usd_per_gpu_hour
FROM stage s
WHERE v.provider = $1 AND v.valid_to IS NULL
  AND v.offer_key = s.offer_key AND v.row_hash = s.row_hash;
