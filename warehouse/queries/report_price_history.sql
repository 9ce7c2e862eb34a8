-- Price per GPU-hour over time for the main GPUs (the $top_gpus offered now by the most
-- providers): at every moment the history changed, the cheapest and the median whole
-- on-demand offer then open. The newest observation in the warehouse is one more moment, so
-- the open prices reach "now". A GPU with one recorded moment gets one row.
WITH whole AS (
    -- a whole on-demand offer of a known GPU: its price per GPU-hour is comparable
    SELECT gpu_id, provider, price_usd_per_gpu_hour AS price, valid_from, valid_to
    FROM offer_history
    WHERE gpu_id IS NOT NULL AND pricing_model = 'on_demand' AND gpu_count >= 1
      AND coalesce(json_extract_string(provider_data, '$.price_scope'), 'offer')
          <> 'gpu_component'
),
main AS (
    SELECT gpu_id,
           row_number() OVER (ORDER BY count(DISTINCT provider) DESC, count(*) DESC, gpu_id)
               AS gpu_rank
    FROM whole
    WHERE valid_to IS NULL
    GROUP BY gpu_id
    QUALIFY gpu_rank <= $top_gpus
),
moments AS (
    SELECT w.gpu_id, w.valid_from AS at FROM whole w SEMI JOIN main USING (gpu_id)
    UNION
    SELECT w.gpu_id, w.valid_to FROM whole w SEMI JOIN main USING (gpu_id)
    WHERE w.valid_to IS NOT NULL
    UNION
    SELECT gpu_id, (SELECT max(last_seen_at) FROM offer_history) FROM main
)
SELECT m.gpu_id, any_value(main.gpu_rank) AS gpu_rank, m.at,
       min(w.price)                    AS cheapest_usd_per_gpu_hour,
       arg_min(w.provider, w.price)    AS cheapest_provider,
       median(w.price)                 AS median_usd_per_gpu_hour,
       count(*)                        AS offers,
       count(DISTINCT w.provider)      AS providers
FROM moments m
JOIN main USING (gpu_id)
JOIN whole w
  ON w.gpu_id = m.gpu_id AND w.valid_from <= m.at AND (w.valid_to IS NULL OR w.valid_to > m.at)
GROUP BY m.gpu_id, m.at
ORDER BY gpu_rank, m.at;
