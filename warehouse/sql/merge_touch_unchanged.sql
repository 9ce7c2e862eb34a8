-- Unchanged offers: refresh their current state in place where it moved (stock, provider data,
-- the converted price, how it is sold, its order and market); no new version. Rows whose state
-- is the same (merge_match.state_moved false) are not written, so an unchanged night costs no
-- update of these wide columns.
UPDATE recent_versions AS v
SET availability = s.availability,
    available_count = s.available_count,
    provider_data = s.provider_data,
    source_url = s.source_url,
    price_usd_per_hour = s.price_usd_per_hour,
    price_usd_per_gpu_hour = s.price_usd_per_gpu_hour,
    gpu_variant_assumed = s.gpu_variant_assumed,
    term_kind = s.term_kind,
    min_term = s.min_term,
    min_term_unit = s.min_term_unit,
    min_term_hours = s.min_term_hours,
    term_payment = s.term_payment,
    term_source = s.term_source,
    gpus_per_machine = s.gpus_per_machine,
    machines_min = s.machines_min,
    machines_max = s.machines_max,
    nvlink_domain_gpus = s.nvlink_domain_gpus,
    order_source = s.order_source,
    ask_count = s.ask_count,
    ask_median_usd_per_hour = s.ask_median_usd_per_hour,
    ask_max_usd_per_hour = s.ask_max_usd_per_hour,
    host_id = s.host_id,
    host_reliability = s.host_reliability,
    host_verified = s.host_verified
FROM merge_match m
JOIN stage s USING (stage_row)
WHERE v.rowid = m.version_id AND m.state_moved AND v.valid_to IS NULL;
