-- USD per VRAM-GB-hour by provider and GPU: the cheapest whole on-demand offer of each pair,
-- per GPU-hour divided by the VRAM of one GPU (as the offer reports it, else the catalog's).
SELECT gpu_id, provider,
       min(price_usd_per_gpu_hour / vram_gb)                          AS usd_per_vram_gb_hour,
       arg_min(price_usd_per_gpu_hour, price_usd_per_gpu_hour / vram_gb) AS usd_per_gpu_hour,
       arg_min(vram_gb, price_usd_per_gpu_hour / vram_gb)             AS vram_gb,
       count(*)                                                       AS offers
FROM current_offers
WHERE gpu_id IS NOT NULL AND pricing_model = 'on_demand' AND gpu_count >= 1 AND vram_gb > 0
  AND coalesce(json_extract_string(provider_data, '$.price_scope'), 'offer') <> 'gpu_component'
GROUP BY gpu_id, provider
ORDER BY gpu_id, provider;
