-- Unchanged offers: refresh their current state in place where it moved (stock, provider data,
-- the converted price); no new version. Rows whose state is the same are not written, so an
-- unchanged night costs no update of these wide columns. $1 = provider.
UPDATE offer_versions AS v
SET availability = s.availability,
    available_count = s.available_count,
    provider_data = s.provider_data,
    source_url = s.source_url,
    price_usd_per_hour = s.price_usd_per_hour,
    price_usd_per_gpu_hour = s.price_usd_per_gpu_hour
FROM stage s
WHERE v.provider = $1 AND v.valid_to IS NULL
  AND v.offer_key = s.offer_key AND v.row_hash = s.row_hash
  AND (v.availability IS DISTINCT FROM s.availability
       OR v.available_count IS DISTINCT FROM s.available_count
       OR v.provider_data IS DISTINCT FROM s.provider_data
       OR v.source_url IS DISTINCT FROM s.source_url
       OR v.price_usd_per_hour IS DISTINCT FROM s.price_usd_per_hour
       OR v.price_usd_per_gpu_hour IS DISTINCT FROM s.price_usd_per_gpu_hour);
