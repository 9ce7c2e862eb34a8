-- The newest observation already stored for a provider. $1 = provider.
SELECT max(last_seen_at) FROM offer_versions WHERE provider = $1;
