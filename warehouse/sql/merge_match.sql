-- Pair every staged offer with the provider's open version of it, once: the statements that
-- follow close, touch and insert through these pairs (version rowids, stage rows) instead of
-- each joining the staged offers with the history again by their text keys. A full join: an
-- open version no staged offer pairs with (stage_row NULL) has vanished from the refresh.
-- version_id: the open version's rowid, NULL for a new offer. unchanged: NULL new or vanished,
-- false the hash changed, true the same hash. state_moved: unchanged, but its current state
-- (stock, provider data, source, converted price; the terms, order and market columns of
-- migration 0009, compared by their hash) differs from the open version's.
-- $1 = provider.
CREATE OR REPLACE TEMP TABLE merge_match AS
SELECT
    s.stage_row,
    v.version_id,
    s.observed_at,
    v.last_seen_at,
    v.row_hash = s.row_hash AS unchanged,
    v.row_hash = s.row_hash
        AND (v.availability IS DISTINCT FROM s.availability
             OR v.available_count IS DISTINCT FROM s.available_count
             OR v.provider_data IS DISTINCT FROM s.provider_data
             OR v.source_url IS DISTINCT FROM s.source_url
             OR v.price_usd_per_hour IS DISTINCT FROM s.price_usd_per_hour
             OR v.price_usd_per_gpu_hour IS DISTINCT FROM s.price_usd_per_gpu_hour
             OR v.sold_hash <> hash(
                 s.gpu_variant_assumed, s.term_kind, s.min_term, s.min_term_unit,
                 s.min_term_hours, s.term_payment, s.term_source, s.gpus_per_machine,
                 s.machines_min, s.machines_max, s.nvlink_domain_gpus, s.order_source,
                 s.ask_count, s.ask_median_usd_per_hour, s.ask_max_usd_per_hour, s.host_id,
                 s.host_reliability, s.host_verified)) AS state_moved
FROM stage s
FULL JOIN (
    SELECT rowid AS version_id, offer_key, row_hash, last_seen_at, availability, available_count,
           provider_data, source_url, price_usd_per_hour, price_usd_per_gpu_hour,
           hash(gpu_variant_assumed, term_kind, min_term, min_term_unit, min_term_hours,
                term_payment, term_source, gpus_per_machine, machines_min, machines_max,
                nvlink_domain_gpus, order_source, ask_count, ask_median_usd_per_hour,
                ask_max_usd_per_hour, host_id, host_reliability, host_verified) AS sold_hash
    FROM recent_versions
    WHERE provider = $1 AND valid_to IS NULL
) v USING (offer_key);
