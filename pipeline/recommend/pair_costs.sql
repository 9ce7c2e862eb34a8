-- Every pricing pair (pairs.sql) priced for one fine-tuning run, except its hourly price:
-- `pairs` (Arrow, one row per pair_id) joined to `plans` (Arrow, one row per placement:
-- plan_id, gpu_id, gpus_per_node, fabric, fabric_gbps, max_nodes), which say whether and how
-- the job fits, on how many machines, how long it computes, how long one checkpoint takes to
-- write and how often its GPUs fail; this query adds checkpoints, interruptions, billing,
-- storage and egress, in pair_id order (that of `pairs`). pricing.py then prices each offer as
-- its hourly price × machines × billed seconds plus its pair's storage and egress.
-- Parameters: $min_gpus_multi_node, $max_hours, $checkpoint_s (NULL: Young/Daly per pair),
-- $min_interval_s, $restart_s, $storage_gb, $egress_gb, $bid_interrupts_per_hour,
-- $market_interrupts_per_hour.
WITH joined AS (
    SELECT t.*, pl.plan_id, pl.nodes, pl.usable_gb_per_gpu, pl.hours,
           pl.checkpoint_write_s AS write_s, pl.hw_interrupts_per_hour,
           coalesce(t.offer_reject, CASE
               WHEN pl.feasible IS NULL THEN 'no sizing plan for this machine shape'
               WHEN NOT pl.feasible THEN pl.reason
           END) AS reject_reason,
           -- rank's reasons then add that the provider names no fabric to place it on more
           t.offer_reject IS NULL AND NOT coalesce(pl.feasible, true)
               AND pl.reason LIKE 'memory wall%' AND t.fabric IS NULL
               AND t.gpu_count >= $min_gpus_multi_node AS no_fabric_note
    FROM pairs t
    LEFT JOIN plans pl
        ON pl.gpu_id = t.gpu_id AND pl.gpus_per_node = CAST(t.gpu_count AS INTEGER)
       AND pl.fabric IS NOT DISTINCT FROM t.fabric
       AND pl.fabric_gbps IS NOT DISTINCT FROM t.fabric_gbps
       AND pl.max_nodes IS NOT DISTINCT FROM t.max_nodes
),
rates AS (
    SELECT *,
        hours * 3600 AS compute_s,
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
        END AS machine_interrupts_per_hour
    FROM joined
),
chosen AS (
    SELECT *,
        -- an interruption of any machine stops the whole job
        machine_interrupts_per_hour * nodes AS spot_interrupts_per_hour,
        -- a notice long enough to write a checkpoint saves the work since the last one
        coalesce(pricing_model = 'spot' AND spot_notice_s >= write_s, false) AS notice_saves,
        hw_interrupts_per_hour + spot_interrupts_per_hour AS interrupts_per_hour,
        hw_interrupts_per_hour
            + CASE WHEN notice_saves THEN 0 ELSE spot_interrupts_per_hour END AS losing_per_hour,
        -- Young (1974) / Daly (2006): the interval sqrt(2·C·MTBF) minimizes C/τ + τ/(2·MTBF)
        CASE WHEN losing_per_hour > 0
             THEN sqrt(2 * write_s * 3600 / losing_per_hour) END AS young_daly_s,
        -- nothing that loses work: one checkpoint, at the end
        coalesce($checkpoint_s,
                 CASE WHEN young_daly_s IS NULL THEN greatest(compute_s, $min_interval_s)
                      ELSE least(greatest(young_daly_s, $min_interval_s),
                                 greatest(compute_s, $min_interval_s)) END) AS interval_s
    FROM rates
),
spot AS (
    SELECT *,
        -- checkpoint writes pause training for write_s every interval of compute
        compute_s * write_s / interval_s AS checkpoint_total_s,
        compute_s + compute_s * write_s / interval_s AS run_s,
        -- share of wall time lost: half an interval of work per losing interruption, a
        -- restart per interruption, an extra checkpoint per notice that saved the work
        (losing_per_hour * interval_s / 2 + interrupts_per_hour * $restart_s
         + CASE WHEN notice_saves THEN spot_interrupts_per_hour * write_s ELSE 0 END)
            / 3600 AS loss_share
    FROM chosen
),
expected AS (
    SELECT *,
        CASE WHEN reject_reason IS NULL AND loss_share < 0.9
             THEN run_s / (1 - loss_share) END AS expected_s
    FROM spot
)
SELECT *,
    expected_s * interrupts_per_hour / 3600 AS expected_interruptions,
    greatest(ceil(expected_s / coalesce(billing_increment_s, 3600))
             * coalesce(billing_increment_s, 3600), coalesce(min_charge_s, 0)) AS billed_s,
    $storage_gb * coalesce(storage_usd_per_gb_month, 0) * expected_s / 3600 / 730
        AS storage_usd,
    $egress_gb * coalesce(egress_usd_per_gb, 0) AS egress_usd,
    expected_s / 3600 AS expected_hours,
    coalesce($max_hours IS NOT NULL AND expected_s / 3600 > $max_hours, false) AS too_slow,
    reject_reason IS NULL AND expected_s IS NOT NULL AND NOT too_slow AS runs,
    NOT runs AS rejected,
    -- how near the machine comes to holding the job: the rejected offers shown are the
    -- largest first
    coalesce(CAST(gpu_count AS INTEGER), 0) * coalesce(round(usable_gb_per_gpu, 1), 0)
        AS memory_gb
FROM expected
ORDER BY pair_id
