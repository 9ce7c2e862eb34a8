-- The cheapest current offer per canonical GPU and pricing model, per GPU-hour.
SELECT gpu_id, pricing_model,
       arg_min(provider, price_usd_per_gpu_hour)      AS provider,
       min(price_usd_per_gpu_hour)                    AS usd_per_gpu_hour,
       arg_min(region, price_usd_per_gpu_hour)        AS region,
       count(*)                                       AS offers,
       bool_or(stale)                                 AS any_stale
FROM current_offers
WHERE gpu_id IS NOT NULL
GROUP BY gpu_id, pricing_model
ORDER BY gpu_id, pricing_model;
