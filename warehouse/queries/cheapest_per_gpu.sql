-- The cheapest current offer per canonical GPU and pricing model, per GPU-hour.
SELECT gpu_id, pricing_model,
       arg_min(provider, price_usd_per_gpu_hour)      AS provider,
       min(price_usd_per_gpu_hour)                    AS usd_per_gpu_hour,
       arg_min(region, price_usd_per_gpu_hour)        AS region,
       count(*)                                       AS offers,
       bool_or(stale)                                 AS any_stale
FROM current_offers
WHERE gpu_id IS NOT NULL
  -- a GPU component price (CoreWeave) is not a whole offer: CPU and RAM come on top
  AND coalesce(json_extract_string(provider_data, '$.price_scope'), 'offer') <> 'gpu_component'
GROUP BY gpu_id, pricing_model
ORDER BY gpu_id, pricing_model;
