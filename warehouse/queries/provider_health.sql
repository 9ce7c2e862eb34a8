-- `gpuscout providers` (pipeline/health.py): per provider that has run, its offers now, its
-- last run and last success, whether its data is stale, the GPU labels its last refresh could
-- not resolve, its last problem (the newest run that failed, was refused, drifted or was
-- skipped) and why, and how old its newest current price is at $now.
WITH runs AS (
    SELECT provider,
           arg_max(unknown_labels, started_at)                       AS unknown_labels,
           arg_max(error, started_at)                                AS last_error,
           max(started_at) FILTER (WHERE status IN ('failed', 'refused', 'drift', 'skipped'))
                                                                     AS last_problem_at,
           arg_max(status, started_at)
               FILTER (WHERE status IN ('failed', 'refused', 'drift', 'skipped'))
                                                                     AS last_problem_status,
           arg_max(error, started_at)
               FILTER (WHERE status IN ('failed', 'refused', 'drift', 'skipped'))
                                                                     AS last_problem_error
    FROM refresh_runs GROUP BY provider
), open_offers AS (
    SELECT provider, count(*) AS offers,
           count(*) FILTER (WHERE pricing_model = 'spot') AS spot_offers,
           max(observed_at) AS newest_observed_at
    FROM recent_versions WHERE valid_to IS NULL
    GROUP BY provider
)
SELECT
    s.provider,
    coalesce(o.offers, 0)                                      AS offers,
    coalesce(o.spot_offers, 0)                                 AS spot_offers,
    s.last_status,
    s.last_run_at,
    s.last_success_at,
    s.stale,
    coalesce(r.unknown_labels, [])                             AS unknown_labels,
    r.last_error,
    r.last_problem_status,
    r.last_problem_at,
    r.last_problem_error,
    o.newest_observed_at,
    date_diff('minute', o.newest_observed_at, CAST($now AS TIMESTAMPTZ)) / 1440.0
                                                               AS price_age_days
FROM provider_status s
LEFT JOIN runs r USING (provider)
LEFT JOIN open_offers o USING (provider)
ORDER BY s.provider;
