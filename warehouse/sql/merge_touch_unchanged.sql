-- Unchanged offers: refresh their current state in place where it moved (stock, provider data,
-- the converted price); no new version. Rows whose state is the same (merge_match.state_moved
-- false) are not written, so an unchanged night costs no update of these wide columns.
UPDATE recent_versions AS v
SET availability = s.availability,
    available_count = s.available_count,
    provider_data = s.provider_data,
    source_url = s.source_url,
    price_usd_per_hour = s.price_usd_per_hour,
    price_usd_per_gpu_hour = s.price_usd_per_gpu_hour
FROM merge_match m
JOIN stage s USING (stage_row)
WHERE v.rowid = m.version_id AND m.state_moved AND v.valid_to IS NULL;
