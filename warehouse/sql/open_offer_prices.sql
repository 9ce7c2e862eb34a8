-- The provider's open versions: offer key, price per GPU-hour in the provider's currency, and
-- that currency. $1 = provider.
SELECT offer_key, price_per_hour / gpu_count, currency FROM recent_versions
WHERE provider = $1 AND valid_to IS NULL;
