-- The pricing pairs among the current offers a request may use (facts.sql's pair_id): per pair,
-- the placement the sizing model plans (machine shape and, where the offer can span machines,
-- its fabric, the fabric's Gb/s and the cluster size) and the terms of its price that no job
-- changes; pair_costs.py prices each pair for a run. The sizing model then runs once per
-- placement and the pricing once per pair, never per offer. In pair_id order. Parameters: those
-- of offers.sql, $bid_interrupts_per_hour, $market_interrupts_per_hour.
WITH {offers},
pairs AS (
    SELECT pair_id,
           any_value(gpu_id) AS gpu_id, any_value(gpu_count) AS gpu_count,
           any_value(fabric) AS fabric, any_value(fabric_gbps) AS fabric_gbps,
           any_value(max_nodes) AS max_nodes, any_value(pricing_model) AS pricing_model,
           any_value(interruption_band) AS interruption_band,
           any_value(spot_pricing) AS spot_pricing, any_value(spot_notice_s) AS spot_notice_s,
           any_value(billing_increment_s) AS billing_increment_s,
           any_value(min_charge_s) AS min_charge_s,
           any_value(storage_usd_per_gb_month) AS storage_usd_per_gb_month,
           any_value(egress_usd_per_gb) AS egress_usd_per_gb,
           any_value(offer_reject) AS offer_reject
    FROM offers
    GROUP BY pair_id
)
SELECT pair_id, gpu_id, gpu_count,
       -- the GPUs per machine a plan is matched by (a fractional share is rejected anyway)
       CAST(gpu_count AS INTEGER) AS whole_gpus, fabric, fabric_gbps, max_nodes,
       pricing_model, offer_reject, spot_notice_s,
       -- interruptions per hour of ONE machine
       CASE
           WHEN pricing_model <> 'spot' THEN 0.0
           -- AWS Spot Advisor: share of instances interrupted in a month, band midpoint
           WHEN interruption_band IS NOT NULL THEN
               -ln(1 - CASE interruption_band
                   WHEN '<5%' THEN 0.025 WHEN '5-10%' THEN 0.075 WHEN '10-15%' THEN 0.125
                   WHEN '15-20%' THEN 0.175 ELSE 0.25 END) / 730.0
           WHEN spot_pricing IN ('market', 'fixed_discount') THEN $market_interrupts_per_hour
           -- bid marketplaces, and spot whose mechanics are unknown: the cautious rate
           ELSE $bid_interrupts_per_hour
       END AS machine_interrupts_per_hour,
       -- unknown billing granularity: hourly
       CAST(coalesce(billing_increment_s, 3600) AS DOUBLE) AS increment_s,
       CAST(coalesce(min_charge_s, 0) AS DOUBLE) AS min_charge_s,
       -- unknown storage and egress prices are not counted (the reasons say so)
       coalesce(storage_usd_per_gb_month, 0) AS storage_usd_per_gb_month,
       coalesce(egress_usd_per_gb, 0) AS egress_usd_per_gb
FROM pairs
ORDER BY pair_id
