-- Spot vs on-demand per GPU, for the GPUs sold both ways: the cheapest whole offer of each
-- kind across providers, per GPU-hour, and how much cheaper spot is.
WITH whole AS (
    SELECT gpu_id, provider, pricing_model, price_usd_per_gpu_hour AS price
    FROM current_offers
    WHERE gpu_id IS NOT NULL AND pricing_model IN ('on_demand', 'spot') AND gpu_count >= 1
      AND coalesce(json_extract_string(provider_data, '$.price_scope'), 'offer')
          <> 'gpu_component'
),
per_gpu AS (
    SELECT gpu_id,
           min(price) FILTER (WHERE pricing_model = 'on_demand')                AS on_demand_usd,
           arg_min(provider, price) FILTER (WHERE pricing_model = 'on_demand')  AS on_demand_provider,
           count(*) FILTER (WHERE pricing_model = 'on_demand')                  AS on_demand_offers,
           min(price) FILTER (WHERE pricing_model = 'spot')                     AS spot_usd,
           arg_min(provider, price) FILTER (WHERE pricing_model = 'spot')       AS spot_provider,
           count(*) FILTER (WHERE pricing_model = 'spot')                       AS spot_offers
    FROM whole
    GROUP BY gpu_id
)
SELECT *, 1 - spot_usd / on_demand_usd AS spot_discount
FROM per_gpu
WHERE on_demand_usd IS NOT NULL AND spot_usd IS NOT NULL
ORDER BY on_demand_usd DESC, gpu_id;
