-- Pair every staged offer with the provider's open version of it, once: the statements that
-- follow close, touch and insert through these pairs (version rowids, stage rows) instead of
-- each joining the staged offers with the history again by their text keys. A full join: an
-- open version no staged offer pairs with (stage_row NULL) has vanished from the refresh.
-- version_id: the open version's rowid, NULL for a new offer. unchanged: NULL new or vanished,
-- false the hash changed, true the same hash. state_moved: unchanged, but its current state
-- (stock, provider data, source, converted price) differs from the open version's.
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
             OR v.price_usd_per_gpu_hour IS DISTINCT FROM s.price_usd_per_gpu_hour) AS state_moved
FROM stage s
FULL JOIN (
    SELECT rowid AS version_id, offer_key, row_hash, last_seen_at, availability, available_count,
           provider_data, source_url, price_usd_per_hour, price_usd_per_gpu_hour
    FROM recent_versions
    WHERE provider = $1 AND valid_to IS NULL
) v USING (offer_key);
