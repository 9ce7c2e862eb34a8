-- Is the staged refresh older than what is stored for its provider? $1 = provider.
-- Yes when the newest incoming observation predates the newest stored one (an old archive
-- replayed after a newer one), or when an offer's incoming observation predates that same
-- offer's stored one. A refresh whose sources were captured at different times (AWS: price list
-- and spot feed) passes as long as neither holds. Returns (incoming, stored) of a violation.
WITH stored AS (
    SELECT offer_key, last_seen_at FROM offer_versions WHERE provider = $1 AND valid_to IS NULL
), whole AS (
    SELECT (SELECT max(observed_at) FROM stage) AS incoming,
           (SELECT max(last_seen_at) FROM stored) AS stored
), per_offer AS (
    SELECT min(s.observed_at) AS incoming, max(o.last_seen_at) AS stored
    FROM stage s JOIN stored o USING (offer_key)
    WHERE s.observed_at < o.last_seen_at
)
SELECT incoming, stored FROM whole WHERE incoming < stored
UNION ALL
SELECT incoming, stored FROM per_offer WHERE incoming IS NOT NULL
LIMIT 1;
