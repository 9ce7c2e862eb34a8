-- Close every open offer of a provider that no longer sells (see pipeline/lifecycle.py).
-- $1 = provider, $2 = run id, $3 = when.
UPDATE recent_versions
SET valid_to = $3, closed_by_run = $2
WHERE provider = $1 AND valid_to IS NULL;
