-- Offers loaded by the provider's last successful refresh. $1 = provider.
SELECT offers_loaded FROM refresh_run_log
WHERE provider = $1 AND status = 'ok'
ORDER BY started_at DESC LIMIT 1;
