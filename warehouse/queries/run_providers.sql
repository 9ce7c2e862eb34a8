-- One run's per-provider outcome, for summaries. $run_id = the run.
SELECT provider, status, complete, offers_loaded, new_offers, changed_offers,
       unchanged_offers, closed_offers, quarantined, unknown_labels, round(duration_s, 2) AS duration_s,
       error
FROM refresh_runs
WHERE run_id = $run_id
ORDER BY provider;
