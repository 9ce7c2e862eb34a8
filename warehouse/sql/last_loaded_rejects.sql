-- The rows quarantined by the provider's last refresh that loaded. $1 = provider.
SELECT offer_key, reason FROM quarantine
WHERE provider = $1 AND run_id = (
    SELECT run_id FROM refresh_run_log
    WHERE provider = $1 AND status = 'ok'
    ORDER BY started_at DESC LIMIT 1
);
