-- Freshness of each provider: its last refresh and last success, and how old its newest
-- current price is at $now (a replayed archive keeps the archive's observation time).
WITH offers AS (
    SELECT provider, count(*) AS offers, max(observed_at) AS newest_observed_at
    FROM current_offers
    GROUP BY provider
)
SELECT s.provider, s.last_status, s.last_run_at, s.last_success_at, s.stale, s.last_error,
       coalesce(o.offers, 0) AS offers, o.newest_observed_at,
       date_diff('minute', o.newest_observed_at, CAST($now AS TIMESTAMPTZ)) / 1440.0
           AS price_age_days,
       date_diff('minute', s.last_success_at, CAST($now AS TIMESTAMPTZ)) / 1440.0
           AS since_success_days
FROM provider_status s
LEFT JOIN offers o USING (provider)
ORDER BY price_age_days NULLS LAST, s.provider;
