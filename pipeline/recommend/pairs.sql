-- The pricing pairs among the current offers a request may use (facts.sql's pair_id): per pair,
-- the placement the sizing model plans (machines of gpus_per_machine GPUs, the fewest an order
-- must have and, where the offer can span machines, its fabric, the fabric's Gb/s and the
-- cluster size) and the terms of its price that no job changes; pair_costs.py prices each pair
-- for a run. The sizing model then runs once per placement and the pricing once per pair, never
-- per offer. In pair_id order. Parameters: those of offers.sql.
WITH {offers},
pairs AS (
    SELECT pair_id,
           any_value(gpu_id) AS gpu_id, any_value(gpu_count) AS gpu_count,
           any_value(gpus_per_machine) AS gpus_per_machine,
           any_value(fabric) AS fabric, any_value(fabric_gbps) AS fabric_gbps,
           any_value(max_nodes) AS max_nodes, any_value(min_nodes) AS min_nodes,
           any_value(gpu_variant_assumed) AS variant_assumed,
           any_value(pricing_model) AS pricing_model,
           any_value(machine_interrupts_per_hour) AS machine_interrupts_per_hour,
           any_value(interruption_basis) AS interruption_basis,
           any_value(spot_notice_s) AS spot_notice_s,
           any_value(billing_increment_s) AS billing_increment_s,
           any_value(min_charge_s) AS min_charge_s,
           any_value(persistent_storage) AS persistent_storage,
           any_value(storage_usd_per_gb_month) AS storage_usd_per_gb_month,
           any_value(egress_usd_per_gb) AS egress_usd_per_gb,
           any_value(egress_free_gb_month) AS egress_free_gb_month,
           any_value(offer_reject) AS offer_reject,
           any_value(offer_reject_kind) AS offer_reject_kind
    FROM offers
    GROUP BY pair_id
)
SELECT pair_id, gpu_id, gpu_count,
       -- the GPUs per machine a plan is matched by (a fractional share is rejected anyway)
       CAST(gpus_per_machine AS INTEGER) AS whole_gpus, fabric, fabric_gbps, max_nodes,
       min_nodes, coalesce(variant_assumed, false) AS variant_assumed,
       pricing_model, offer_reject, offer_reject_kind, spot_notice_s,
       machine_interrupts_per_hour, interruption_basis,
       -- unknown billing granularity: hourly (the low end of the cost range: per second)
       CAST(coalesce(billing_increment_s, 3600) AS DOUBLE) AS increment_s,
       billing_increment_s IS NULL AS increment_unknown,
       CAST(coalesce(min_charge_s, 0) AS DOUBLE) AS min_charge_s,
       -- unknown storage and egress prices stay NULL: pair_costs.py counts them from nothing
       -- up to the dearest sourced rate (the cost range), never as free
       persistent_storage, storage_usd_per_gb_month, egress_usd_per_gb,
       coalesce(egress_free_gb_month, 0) AS egress_free_gb_month
FROM pairs
ORDER BY pair_id
