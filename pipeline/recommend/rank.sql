-- Every current offer priced for one fine-tuning run, set-wise. `plans` (Arrow, one row per
-- machine shape: gpu_id, gpus_per_node) says whether and how the job fits and how long it
-- takes; this query adds billing, storage, egress, spot interruptions and price age, and ranks.
-- Every offer comes back: those that cannot serve the run carry `rejected_because`, so
-- `--explain` can say why a cheaper offer lost. Parameters:
--   $providers, $region, $spot_policy (allow|prefer|forbid), $objective (cost|time|balanced),
--   $max_hours, $checkpoint_s, $checkpoint_gb, $write_gbps, $restart_s, $storage_gb,
--   $egress_gb, $bid_interrupts_per_hour, $market_interrupts_per_hour, $now, $stale_days,
--   $dtype (the precision asked for)
WITH offers AS (
    -- an offer's own billing granularity wins over its provider's profile
    SELECT o.* EXCLUDE (billing_increment_s),
           coalesce(o.billing_increment_s, p.billing_increment_s) AS billing_increment_s,
           p.min_charge_s, p.storage_usd_per_gb_month,
           p.egress_usd_per_gb, p.spot_notice_s, p.spot_pricing,
           p.multinode_fabric AS profile_fabric
    FROM current_offers o
    LEFT JOIN provider_profiles p USING (provider)
    WHERE ($providers IS NULL OR list_contains($providers, o.provider))
      AND ($region IS NULL OR o.region ILIKE '%' || $region || '%'
           OR o.geography = lower($region))
      AND ($spot_policy <> 'forbid' OR o.pricing_model <> 'spot')
),
joined AS (
    SELECT o.*, pl.nodes, pl.feasible, pl.sharding, pl.dtype, pl.peak_gb_per_gpu,
           pl.need_gb_per_gpu,
           pl.usable_gb_per_gpu, pl.hours, pl.tokens_per_s,
           CASE
               WHEN o.gpu_id IS NULL THEN 'unknown GPU label ' || o.gpu_label
               WHEN o.gpu_count < 1 OR o.gpu_count <> floor(o.gpu_count)
                   THEN 'fractional GPU share'
               WHEN json_extract_string(o.provider_data, '$.price_scope') = 'gpu_component'
                   THEN 'GPU component price only: CPU and RAM are billed on top'
               WHEN pl.feasible IS NULL THEN 'no sizing plan for this machine shape'
               WHEN NOT pl.feasible THEN pl.reason
           END AS reject_reason
    FROM offers o
    LEFT JOIN plans pl
        ON pl.gpu_id = o.gpu_id AND pl.gpus_per_node = CAST(o.gpu_count AS INTEGER)
),
timed AS (
    SELECT *,
        -- checkpoint writes pause training for checkpoint_gb / write_gbps every interval
        hours * 3600 * (1 + $checkpoint_gb / $write_gbps / $checkpoint_s) AS run_s,
        CASE
            WHEN pricing_model <> 'spot' THEN 0.0
            -- AWS Spot Advisor: share of instances interrupted in a month, band midpoint
            WHEN json_extract_string(provider_data, '$.interruption_band') IS NOT NULL THEN
                -ln(1 - CASE json_extract_string(provider_data, '$.interruption_band')
                    WHEN '<5%' THEN 0.025 WHEN '5-10%' THEN 0.075 WHEN '10-15%' THEN 0.125
                    WHEN '15-20%' THEN 0.175 ELSE 0.25 END) / 730.0
            WHEN spot_pricing IN ('market', 'fixed_discount') THEN $market_interrupts_per_hour
            -- bid marketplaces, and spot whose mechanics are unknown: the cautious rate
            ELSE $bid_interrupts_per_hour
        END AS interrupts_per_hour,
        CASE
            WHEN pricing_model <> 'spot' THEN NULL
            WHEN json_extract_string(provider_data, '$.interruption_band') IS NOT NULL
                THEN 'AWS Spot Advisor band '
                     || json_extract_string(provider_data, '$.interruption_band') || '/month'
            WHEN spot_pricing IN ('market', 'fixed_discount')
                THEN 'assumed: cloud spot at AWS''s worst Spot Advisor band'
            WHEN spot_pricing = 'bid' THEN 'assumed: outbid marketplace, no published rate'
            ELSE 'assumed: spot mechanics unknown, no published rate'
        END AS interruption_source
    FROM joined
),
spot AS (
    SELECT *,
        -- each interruption loses half a checkpoint interval of work plus a restart
        interrupts_per_hour / 3600 * ($checkpoint_s / 2 + $restart_s) AS loss_share
    FROM timed
),
expected AS (
    SELECT *,
        CASE WHEN reject_reason IS NULL AND loss_share < 0.9
             THEN run_s / (1 - loss_share) END AS expected_s
    FROM spot
),
billed AS (
    SELECT *,
        expected_s * interrupts_per_hour / 3600 AS expected_interruptions,
        coalesce(billing_increment_s, 3600) AS increment_s,
        greatest(ceil(expected_s / coalesce(billing_increment_s, 3600))
                 * coalesce(billing_increment_s, 3600), coalesce(min_charge_s, 0)) AS billed_s
    FROM expected
),
costed AS (
    SELECT *,
        price_usd_per_hour * nodes * billed_s / 3600 AS compute_usd,
        $storage_gb * coalesce(storage_usd_per_gb_month, 0) * expected_s / 3600 / 730
            AS storage_usd,
        $egress_gb * coalesce(egress_usd_per_gb, 0) AS egress_usd,
        date_diff('day', observed_at, CAST($now AS TIMESTAMPTZ)) AS price_age_days
    FROM billed
),
ranked AS (
    SELECT *,
        compute_usd + storage_usd + egress_usd AS total_usd,
        expected_s / 3600 AS expected_hours,
        coalesce($max_hours IS NOT NULL AND expected_s / 3600 > $max_hours, false) AS too_slow
    FROM costed
)
SELECT
    provider, offer_key, gpu_id, CAST(gpu_count AS INTEGER) AS gpus_per_node, nodes,
    interconnect, pricing_model, price_usd_per_hour, price_usd_per_gpu_hour, region,
    sharding, dtype, round(need_gb_per_gpu, 2) AS need_gb_per_gpu,
    round(peak_gb_per_gpu, 2) AS peak_gb_per_gpu,
    round(usable_gb_per_gpu, 1) AS usable_gb_per_gpu, tokens_per_s,
    round(hours, 3) AS compute_hours, round(expected_hours, 3) AS expected_hours,
    round(billed_s / 3600, 3) AS billed_hours, round(expected_interruptions, 2)
        AS expected_interruptions,
    round(compute_usd, 2) AS compute_usd, round(storage_usd, 2) AS storage_usd,
    round(egress_usd, 2) AS egress_usd, round(total_usd, 2) AS total_usd,
    observed_at, price_age_days, stale,
    coalesce(reject_reason,
        CASE WHEN expected_s IS NULL
             THEN printf('spot interrupted too often (%.3f/h) for %d-min checkpoints: it '
                         || 'would never finish', interrupts_per_hour,
                         CAST($checkpoint_s / 60 AS INT)) END,
        CASE WHEN too_slow
             THEN printf('takes %.1f h, over --max-hours %.1f', expected_hours, $max_hours)
        END) AS rejected_because,
    list_filter([
        printf('fits: needs %.1f of %.1f GB per GPU', need_gb_per_gpu, usable_gb_per_gpu)
            || CASE WHEN gpu_count * nodes > 1
                    THEN printf(' (%s over %d GPUs)', sharding, CAST(gpu_count * nodes AS INT))
                    ELSE ' (one GPU)' END,
        CASE WHEN gpu_count > 1 AND interconnect IN ('NVSwitch', 'NVLink', 'InfinityFabric')
                 THEN printf('%s between GPUs', interconnect)
             WHEN gpu_count > 1
                 THEN printf('%s between GPUs: gradient/shard traffic is slower', interconnect)
        END,
        CASE WHEN nodes > 1 THEN printf('%d nodes over %s', nodes,
                                        coalesce(nullif(network, 'unknown'), profile_fabric))
        END,
        CASE WHEN billing_increment_s IS NULL
                 THEN 'billing granularity unknown: assumed hourly'
             ELSE printf('billed per %s', CASE billing_increment_s
                    WHEN 1 THEN 'second' WHEN 60 THEN 'minute' WHEN 3600 THEN 'hour'
                    WHEN 86400 THEN 'day' ELSE billing_increment_s || ' s' END)
                  || CASE WHEN coalesce(min_charge_s, 0) > 0
                          THEN printf(', minimum %d s', min_charge_s) ELSE '' END
        END,
        CASE WHEN billed_s - expected_s >= 60
             THEN printf('pays %.2f h for %.2f h of work', billed_s / 3600, expected_s / 3600)
        END,
        CASE WHEN pricing_model = 'spot'
             THEN printf('spot: ~%.2f interruptions (%s), +%.0f%% time from lost work and '
                         || 'restarts with %d-min checkpoints', expected_interruptions,
                         interruption_source, 100 * loss_share / (1 - loss_share),
                         CAST($checkpoint_s / 60 AS INT))
        END,
        CASE WHEN $storage_gb > 0 AND storage_usd_per_gb_month IS NULL
             THEN 'storage price unknown: not counted' END,
        CASE WHEN $egress_gb > 0 AND egress_usd_per_gb IS NULL
             THEN 'egress price unknown: not counted' END,
        CASE WHEN dtype IS NOT NULL AND dtype <> $dtype
             THEN printf('runs in %s (no %s on this GPU)', dtype, $dtype) END,
        CASE WHEN stale THEN 'stale: the provider''s last refresh failed; last good price'
        END,
        CASE WHEN price_age_days > $stale_days
             THEN printf('price observed %d days ago', price_age_days) END,
    ], lambda x: x IS NOT NULL) AS reasons
FROM ranked
ORDER BY
    rejected_because IS NOT NULL,
    CASE WHEN $spot_policy = 'prefer' THEN pricing_model <> 'spot' ELSE false END,
    CASE $objective
        WHEN 'cost' THEN total_usd
        WHEN 'time' THEN expected_hours
        ELSE total_usd * expected_hours
    END,
    total_usd, provider, offer_key;
