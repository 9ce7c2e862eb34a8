-- The provider's last successful refresh: offers loaded, and its field coverage as a list of
-- (field, share) (empty for a run logged before coverage was recorded). $1 = provider.
WITH last AS (
    SELECT run_id, offers_loaded FROM refresh_run_log
    WHERE provider = $1 AND status = 'ok'
    ORDER BY started_at DESC LIMIT 1
)
SELECT l.offers_loaded,
       list({'field': c.field, 'share': c.share} ORDER BY c.field)
           FILTER (WHERE c.field IS NOT NULL) AS coverage
FROM last l
LEFT JOIN refresh_field_coverage c ON c.run_id = l.run_id AND c.provider = $1
GROUP BY l.offers_loaded;
