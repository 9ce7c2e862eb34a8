-- Current offers for `gpuscout offers`. Every filter is optional (NULL = no filter).
-- $gpu matches a canonical id or its leading part ("h100" -> h100-sxm-80gb, h100-pcie-80gb).
SELECT
    provider, gpu_id, gpu_count, vram_gb, memory_type, form_factor, interconnect,
    pricing_model, price_usd_per_gpu_hour, price_usd_per_hour,
    price_usd_per_hour / nullif(vram_gb * gpu_count, 0) AS price_usd_per_vram_gb_hour,
    region, geography, availability, available_count, instance_type, gpu_label, offer_key,
    price_kind, currency, price_per_hour, observed_at, stale,
    provider_data->>'interruption_band' AS interruption
FROM current_offers
WHERE ($gpu IS NULL OR gpu_id = lower($gpu) OR gpu_id LIKE lower($gpu) || '-%')
  AND ($min_vram IS NULL OR vram_gb >= $min_vram)
  AND ($max_price IS NULL OR price_usd_per_gpu_hour <= $max_price)
  AND ($pricing_model IS NULL OR pricing_model = $pricing_model)
  AND ($providers IS NULL OR list_contains($providers, provider))
  AND ($region IS NULL OR region ILIKE '%' || $region || '%' OR geography = lower($region))
ORDER BY
    CASE $sort
        WHEN 'price' THEN price_usd_per_hour
        WHEN 'gpu-hour' THEN price_usd_per_gpu_hour
        ELSE price_usd_per_hour / nullif(vram_gb * gpu_count, 0)
    END NULLS LAST,
    provider, offer_key
LIMIT $limit;
