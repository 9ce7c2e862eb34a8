-- The distinct machine shapes among the current offers a recommendation may use: the sizing
-- model runs once per shape, not once per offer. $providers, $region, $spot_policy filter.
SELECT
    gpu_id,
    CAST(gpu_count AS INTEGER)                                       AS gpus_per_node,
    bool_or(network IN ('InfiniBand', 'RoCE', 'EFA')
            OR p.multinode_fabric IN ('InfiniBand', 'RoCE', 'EFA'))   AS multinode_fabric
FROM current_offers o
LEFT JOIN provider_profiles p USING (provider)
WHERE gpu_id IS NOT NULL
  AND gpu_count >= 1 AND gpu_count = floor(gpu_count)
  AND ($providers IS NULL OR list_contains($providers, provider))
  AND ($region IS NULL OR region ILIKE '%' || $region || '%' OR geography = lower($region))
  AND ($spot_policy <> 'forbid' OR pricing_model <> 'spot')
GROUP BY 1, 2
ORDER BY 1, 2;
