-- `gpuscout providers`: per provider, its offers now, its last (successful) refresh, whether
-- its data is stale, and the GPU labels its last refresh could not resolve.
WITH last_run AS (
    SELECT provider, arg_max(unknown_labels, started_at) AS unknown_labels,
           arg_max(error, started_at) AS last_error
    FROM refresh_runs GROUP BY provider
)
SELECT
    s.provider,
    (SELECT count(*) FROM recent_versions o
      WHERE o.provider = s.provider AND o.valid_to IS NULL)   AS offers,
    (SELECT count(*) FROM recent_versions o
      WHERE o.provider = s.provider AND o.valid_to IS NULL
        AND o.pricing_model = 'spot')                          AS spot_offers,
    s.last_status,
    s.last_success_at,
    s.stale,
    coalesce(r.unknown_labels, [])                             AS unknown_labels,
    r.last_error
FROM provider_status s
LEFT JOIN last_run r USING (provider)
ORDER BY s.provider;
