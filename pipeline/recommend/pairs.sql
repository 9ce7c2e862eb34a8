-- The pricing pairs among the current offers a request may use (facts.sql's pair_id): per pair,
-- the placement the sizing model plans (machine shape and, where the offer can span machines,
-- its fabric, the fabric's Gb/s and the cluster size) and the terms pair_costs.sql prices. The
-- sizing model then runs once per placement and the pricing once per pair, never per offer.
WITH {offers}
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
ORDER BY pair_id
