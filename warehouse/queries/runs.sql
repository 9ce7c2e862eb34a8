-- The newest refresh run log rows, for `gpuscout runs`.
SELECT run_id, provider, mode, started_at, status, complete, offers_loaded, new_offers,
       changed_offers, unchanged_offers, closed_offers, quarantined,
       len(unknown_labels) AS unknown_labels, round(duration_s, 2) AS duration_s, error
FROM refresh_runs
ORDER BY started_at DESC, provider
LIMIT $limit;
