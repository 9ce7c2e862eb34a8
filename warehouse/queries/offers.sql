-- Current offers for `gpuscout offers`. Every filter is optional (NULL = no filter).
-- $gpu matches a canonical id or its leading part ("h100" -> h100-sxm-80gb, h100-pcie-80gb).
-- Offers that differ only by their key (a marketplace's hosts listing the same machine at the
-- same price) are one row: `listings` says how many, their stock is added up and the best
-- availability of them shown.
WITH matching AS (
    SELECT *
    FROM current_offers
    WHERE ($gpu IS NULL OR gpu_id = lower($gpu) OR gpu_id LIKE lower($gpu) || '-%')
      AND ($min_vram IS NULL OR vram_gb >= $min_vram)
      AND ($max_price IS NULL OR price_usd_per_gpu_hour <= $max_price)
      AND ($pricing_model IS NULL OR pricing_model = $pricing_model)
      AND ($providers IS NULL OR list_contains($providers, provider))
      AND ($region IS NULL OR region ILIKE '%' || $region || '%' OR geography = lower($region))
)
SELECT
    provider, gpu_id, gpu_variant_assumed, gpu_count, vram_gb, memory_type, form_factor,
    interconnect, pricing_model, term_kind, min_term_hours,
    CASE WHEN term_kind = 'committed' AND min_term_hours IS NOT NULL
         THEN printf('committed %s', CASE WHEN min_term_hours % 730 = 0
                                          THEN CAST(min_term_hours // 730 AS BIGINT) || ' mo'
                                          ELSE CAST(min_term_hours AS BIGINT) || ' h' END)
         ELSE replace(coalesce(term_kind, pricing_model), '_', ' ') END AS sold_as,
    price_usd_per_gpu_hour, price_usd_per_hour,
    price_usd_per_hour / nullif(vram_gb * gpu_count, 0) AS price_usd_per_vram_gb_hour,
    region, geography,
    CASE min(CASE availability WHEN 'in_stock' THEN 0 WHEN 'low' THEN 1
                               WHEN 'unknown' THEN 2 ELSE 3 END)
        WHEN 0 THEN 'in_stock' WHEN 1 THEN 'low' WHEN 2 THEN 'unknown' ELSE 'out_of_stock'
    END AS availability,
    sum(available_count) AS available_count, instance_type, gpu_label,
    min(offer_key) AS offer_key, count(*) AS listings,
    price_kind, currency, price_per_hour, max(observed_at) AS observed_at, stale,
    provider_data->>'interruption_band' AS interruption
FROM matching
GROUP BY provider, gpu_id, gpu_variant_assumed, gpu_count, vram_gb, memory_type, form_factor, interconnect,
         pricing_model, term_kind, min_term_hours, price_usd_per_gpu_hour, price_usd_per_hour,
         region, geography, instance_type, gpu_label, price_kind, currency, price_per_hour,
         stale, interruption
ORDER BY
    CASE $sort
        WHEN 'price' THEN price_usd_per_hour
        WHEN 'gpu-hour' THEN price_usd_per_gpu_hour
        ELSE price_usd_per_hour / nullif(vram_gb * gpu_count, 0)
    END NULLS LAST,
    provider, offer_key
LIMIT $limit;
