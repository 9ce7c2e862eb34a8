-- The values the offer filters can match in this warehouse: every provider it has refreshed
-- or holds offers of, and the region codes and geographies of its current offers.
SELECT 'provider' AS kind, provider AS value FROM provider_status
UNION SELECT 'provider', provider FROM current_offers
UNION SELECT 'region', region FROM current_offers WHERE region IS NOT NULL
UNION SELECT 'geography', geography FROM current_offers WHERE geography IS NOT NULL;
