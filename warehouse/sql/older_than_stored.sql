-- Is the staged refresh older than what is stored for its provider? Yes when the newest
-- incoming observation predates the newest stored one (an old archive replayed after a newer
-- one), or when an offer's incoming observation predates that same offer's stored one. A
-- refresh whose sources were captured at different times (AWS: price list and spot feed)
-- passes as long as neither holds. Returns (incoming, stored) of a violation. Reads the pairs
-- of merge_match: every staged offer and every open version of the provider.
WITH whole AS (
    SELECT max(observed_at) AS incoming, max(last_seen_at) AS stored FROM merge_match
), per_offer AS (
    SELECT min(observed_at) AS incoming, max(last_seen_at) AS stored
    FROM merge_match
    WHERE observed_at < last_seen_at
)
SELECT incoming, stored FROM whole WHERE incoming < stored
UNION ALL
SELECT incoming, stored FROM per_offer WHERE incoming IS NOT NULL
LIMIT 1;
