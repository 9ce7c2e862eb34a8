-- Every current offer priced for one fine-tuning run, set-wise. `plans` (Arrow, one row per
-- placement: plan_id, gpu_id, gpus_per_node, fabric, fabric_gbps, max_nodes) says whether and how the
-- job fits, on how many machines, how long it computes, how long one checkpoint takes to write
-- and how often its GPUs fail; this query adds checkpoints, interruptions, billing, storage,
-- egress and price age, and ranks. Every offer is priced and counted, but only the rows shown
-- come back, with their reasons written out: the best `$limit` (part 'ranked') and up to
-- `$rejected_shown` of those that cannot serve the run (part 'rejected', with
-- `rejected_because`): cheaper by the hour than the winner, the most GPU memory first, so that
-- `--explain` can say why a cheaper offer lost. Each row also carries the totals over every
-- offer (offers_evaluated, the replayed ones, those set aside by age). Every offer is priced
-- once into the narrow `priced`; the wide columns and the reasons are read for the rows shown
-- only. Parameters:
--   those of offers.sql, $min_gpus_multi_node, $objective (cost|time|balanced), $max_hours, $checkpoint_s (NULL:
--   Young/Daly per offer), $min_interval_s, $checkpoint_gb, $write_gbps, $restart_s,
--   $storage_gb, $egress_gb, $bid_interrupts_per_hour, $market_interrupts_per_hour,
--   $hw_failures_per_gpu_hour (for the reasons), $now, $stale_days, $dtype (precision asked),
--   $max_age_days (NULL: no limit; prices replayed from recorded captures are exempt),
--   $limit, $rejected_shown
WITH {offers},
joined AS (
    SELECT o.*, pl.plan_id, pl.nodes, pl.feasible, pl.usable_gb_per_gpu, pl.hours,
           pl.checkpoint_write_s AS write_s, pl.hw_interrupts_per_hour,
           coalesce(o.offer_reject, CASE
               WHEN pl.feasible IS NULL THEN 'no sizing plan for this machine shape'
               WHEN NOT pl.feasible THEN pl.reason
                   || CASE WHEN pl.reason LIKE 'memory wall%' AND o.fabric IS NULL
                                AND o.gpu_count >= $min_gpus_multi_node
                           THEN '; no inter-node fabric known for ' || o.provider
                                || ': not placed on several machines'
                           ELSE '' END
           END) AS reject_reason
    FROM offers o
    LEFT JOIN plans pl
        ON pl.gpu_id = o.gpu_id AND pl.gpus_per_node = CAST(o.gpu_count AS INTEGER)
       AND pl.fabric IS NOT DISTINCT FROM o.fabric
       AND pl.fabric_gbps IS NOT DISTINCT FROM o.fabric_gbps
       AND pl.max_nodes IS NOT DISTINCT FROM o.max_nodes
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
        NOT replayed AND $max_age_days IS NOT NULL
            AND epoch(CAST($now AS TIMESTAMPTZ)) - epoch(last_seen_at)
                > $max_age_days * 86400 AS too_old
    FROM billed
),
ranked AS (
    SELECT *,
        compute_usd + storage_usd + egress_usd AS total_usd,
        expected_s / 3600 AS expected_hours,
        coalesce($max_hours IS NOT NULL AND expected_s / 3600 > $max_hours, false) AS too_slow
    FROM costed
),
scored AS (
    SELECT *,
        coalesce(reject_reason,
            -- price_age_days (see `shown`), computed only for the offers it sets aside: a
            -- calendar difference in the session's time zone is dear over every offer
            CASE WHEN too_old
                 THEN printf('price last seen %d days ago, older than --max-price-age %g days',
                             date_diff('day', last_seen_at, CAST($now AS TIMESTAMPTZ)),
                             $max_age_days) END,
            CASE WHEN expected_s IS NULL
                 THEN printf('interrupted too often (%.3f/h over %d machine(s)) for %.0f-min '
                             || 'checkpoints: it would never finish', interrupts_per_hour, nodes,
                             interval_s / 60) END,
            CASE WHEN too_slow AND pricing_model = 'spot' AND run_s / 3600 <= $max_hours
                 THEN printf('takes %.1f h with the expected spot restarts (%.1f h without '
                             || 'interruptions), over --max-hours %.1f', expected_hours,
                             run_s / 3600, $max_hours)
                 WHEN too_slow
                 THEN printf('takes %.1f h, over --max-hours %.1f', expected_hours, $max_hours)
            END) AS rejected_because,
        -- the ranking: what can be rented now first, spot first when preferred, then the
        -- objective, the total, and a stable order
        availability = 'out_of_stock' AS no_stock,
        CASE WHEN $spot_policy = 'prefer' THEN pricing_model <> 'spot' ELSE false END
            AS spot_last,
        CASE $objective
            WHEN 'cost' THEN total_usd
            WHEN 'time' THEN expected_hours
            ELSE total_usd * expected_hours
        END AS objective_value
    FROM ranked
),
-- every offer priced once, narrow: what the totals, the ranking, the on-demand comparison
-- and the rows shown read (the rest of an offer is joined to the rows shown only)
priced AS MATERIALIZED (
    SELECT fact_id, plan_id, provider, offer_key, gpu_id, gpu_count, nodes, pricing_model,
           price_usd_per_hour, usable_gb_per_gpu, last_seen_at, replayed, compute_s,
           machine_interrupts_per_hour, spot_interrupts_per_hour, notice_saves,
           interrupts_per_hour, losing_per_hour, young_daly_s, interval_s, checkpoint_total_s,
           loss_share, expected_s, expected_interruptions, billed_s, compute_usd, storage_usd,
           egress_usd, total_usd, expected_hours, rejected_because, no_stock,
           spot_last, objective_value,
           reject_reason IS NULL AND expected_s IS NOT NULL AND NOT too_slow AS runs
    FROM scored
),
totals AS (
    SELECT count(*) AS offers_evaluated,
           count(*) FILTER (WHERE replayed) AS replayed_offers,
           list(DISTINCT provider ORDER BY provider) FILTER (WHERE replayed) AS replayed_providers,
           min(last_seen_at) FILTER (WHERE replayed) AS replayed_from,
           max(last_seen_at) FILTER (WHERE replayed) AS replayed_to,
           count(*) FILTER (WHERE starts_with(rejected_because, 'price last seen'))
               AS too_old_offers
    FROM priced
),
best AS (
    SELECT * FROM priced WHERE rejected_because IS NULL
    ORDER BY no_stock, spot_last, objective_value, total_usd, provider, offer_key
    LIMIT $limit
),
cheaper_rejected AS (
    -- cheaper by the hour than the winner (all of them when nothing can serve the run), the
    -- machines with the most GPU memory first (the nearest to holding the job: a big machine
    -- that is not sold as a cluster, not the smallest cards), then the cheapest
    SELECT * FROM priced
    WHERE rejected_because IS NOT NULL
      AND coalesce(price_usd_per_hour < (
              SELECT price_usd_per_hour FROM best
              ORDER BY no_stock, spot_last, objective_value, total_usd, provider, offer_key
              LIMIT 1), true)
    ORDER BY coalesce(CAST(gpu_count AS INTEGER), 0) * coalesce(round(usable_gb_per_gpu, 1), 0)
                 DESC,
             price_usd_per_hour, no_stock, spot_last, objective_value, total_usd, provider,
             offer_key
    LIMIT $rejected_shown
),
picked AS (
    SELECT *, 'ranked' AS part FROM best
    UNION ALL
    SELECT *, 'rejected' AS part FROM cheaper_rejected
),
-- the same provider's on-demand run on the same machines, for a spot offer shown to be
-- measured against
on_demand AS (
    SELECT provider, gpu_id, gpu_count, nodes,
           min(total_usd) FILTER (WHERE runs) AS od_total_usd
    FROM priced WHERE pricing_model = 'on_demand'
    GROUP BY ALL
),
on_demand_price AS (
    SELECT provider, gpu_id, gpu_count, min(price_usd_per_hour) AS od_price_usd_per_hour
    FROM priced WHERE pricing_model = 'on_demand'
    GROUP BY ALL
),
shown AS (
    -- the rows shown, with the rest of their offer and plan
    SELECT p.*, o.interconnect, o.price_usd_per_gpu_hour, o.region, o.availability, o.stale,
           o.resold_from, o.fabric, o.fabric_source, o.fabric_gbps, o.max_nodes,
           o.max_nodes_source, o.billing_increment_s, o.min_charge_s,
           o.storage_usd_per_gb_month, o.egress_usd_per_gb, o.spot_notice_s,
           pl.sharding, pl.dtype, pl.peak_gb_per_gpu, pl.need_gb_per_gpu, pl.hours,
           pl.tokens_per_s, pl.fabric_gbps_used, pl.ring_gbs, pl.scaling_efficiency,
           pl.checkpoint_writers, pl.checkpoint_write_s AS write_s, pl.hw_interrupts_per_hour,
           CASE
               WHEN p.pricing_model <> 'spot' THEN NULL
               WHEN o.interruption_band IS NOT NULL
                   THEN 'AWS Spot Advisor band ' || o.interruption_band || '/month'
               WHEN o.spot_pricing IN ('market', 'fixed_discount')
                   THEN 'assumed: cloud spot at AWS''s worst Spot Advisor band'
               WHEN o.spot_pricing = 'bid' THEN 'assumed: outbid marketplace, no published rate'
               ELSE 'assumed: spot mechanics unknown, no published rate'
           END AS interruption_source,
           -- the age of the price: since the refresh that last saw it
           date_diff('day', p.last_seen_at, CAST($now AS TIMESTAMPTZ)) AS price_age_days,
           od.od_total_usd, odp.od_price_usd_per_hour
    FROM picked p
    JOIN recommend_offers o USING (fact_id)
    LEFT JOIN plans pl USING (plan_id)
    LEFT JOIN on_demand od
        ON od.provider = p.provider AND od.gpu_id IS NOT DISTINCT FROM p.gpu_id
       AND od.gpu_count = p.gpu_count AND od.nodes IS NOT DISTINCT FROM p.nodes
    LEFT JOIN on_demand_price odp
        ON odp.provider = p.provider AND odp.gpu_id IS NOT DISTINCT FROM p.gpu_id
       AND odp.gpu_count = p.gpu_count
)
SELECT
    provider, offer_key, gpu_id, CAST(gpu_count AS INTEGER) AS gpus_per_node, nodes,
    interconnect, fabric AS network, fabric_gbps_used AS network_gbps,
    pricing_model, price_usd_per_hour, price_usd_per_gpu_hour, region,
    sharding, dtype, round(need_gb_per_gpu, 2) AS need_gb_per_gpu,
    round(peak_gb_per_gpu, 2) AS peak_gb_per_gpu,
    round(usable_gb_per_gpu, 1) AS usable_gb_per_gpu, tokens_per_s,
    round(hours, 3) AS compute_hours, round(expected_hours, 3) AS expected_hours,
    round(billed_s / 3600, 3) AS billed_hours,
    round(interval_s / 60, 1) AS checkpoint_every_min,
    round(checkpoint_total_s / 3600, 3) AS checkpoint_hours,
    round(interrupts_per_hour, 6) AS interruptions_per_hour,
    round(expected_interruptions, 2) AS expected_interruptions,
    round(compute_usd, 2) AS compute_usd, round(storage_usd, 2) AS storage_usd,
    round(egress_usd, 2) AS egress_usd, round(total_usd, 2) AS total_usd,
    last_seen_at AS observed_at, price_age_days, stale,
    CASE WHEN replayed THEN 'replay' ELSE 'live' END AS price_source, availability,
    resold_from,
    rejected_because,
    list_filter([
        CASE WHEN resold_from IS NOT NULL
             THEN printf('a %s machine rented through %s (not read from %s directly)',
                         resold_from, provider, resold_from) END,
        printf('fits: needs %.1f of %.1f GB per GPU', need_gb_per_gpu, usable_gb_per_gpu)
            || CASE WHEN gpu_count * nodes > 1
                    THEN printf(' (%s over %d GPUs)', sharding, CAST(gpu_count * nodes AS INT))
                    ELSE ' (one GPU)' END,
        CASE WHEN gpu_count > 1 AND interconnect IN ('NVSwitch', 'NVLink', 'InfinityFabric')
                 THEN printf('%s between GPUs', interconnect)
             WHEN gpu_count > 1
                 THEN printf('%s between GPUs: gradient/shard traffic is slower', interconnect)
        END,
        CASE WHEN nodes > 1
             THEN printf('%d machines over %s at %.0f Gb/s each (%s%s): %s ring at ~%.0f GB/s '
                         || 'per GPU, %.0f%% scaling; ', nodes, fabric, fabric_gbps_used,
                         fabric_source,
                         CASE WHEN fabric_gbps IS NULL THEN ', Gb/s not stated: assumed'
                              ELSE '' END,
                         sharding, ring_gbs, 100 * scaling_efficiency)
                  || CASE max_nodes_source
                         WHEN 'assumed'
                         THEN printf('cluster size not published: assumed up to %d machines',
                                     max_nodes)
                         ELSE printf('clusters of up to %d machines (%s)', max_nodes,
                                     max_nodes_source) END
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
        CASE WHEN expected_s IS NOT NULL
             THEN CASE WHEN $checkpoint_s IS NOT NULL
                       THEN printf('checkpoint every %.0f min (--checkpoint-every)',
                                   interval_s / 60)
                       WHEN young_daly_s IS NULL
                       THEN 'one checkpoint: no interruption that loses work is modeled'
                       WHEN interval_s >= compute_s
                       THEN printf('one checkpoint: the run is shorter than the Young/Daly '
                                   || 'interval √(2·C·MTBF) = %.1f h', young_daly_s / 3600)
                       ELSE printf('checkpoint every %.0f min: Young/Daly √(2·C·MTBF)',
                                   interval_s / 60)
                  END
                  || CASE WHEN losing_per_hour > 0
                          THEN printf(' with C = %.3g s and MTBF %.0f h (%s)', write_s,
                                      1 / losing_per_hour,
                                      concat_ws(' + ',
                                          CASE WHEN hw_interrupts_per_hour > 0
                                               THEN printf('%d GPUs × %.3g failures per '
                                                           || 'GPU-hour',
                                                           CAST(gpu_count * nodes AS INT),
                                                           $hw_failures_per_gpu_hour) END,
                                          CASE WHEN pricing_model = 'spot'
                                                    AND NOT notice_saves
                                               THEN 'spot interruptions' END))
                          ELSE '' END
                  || printf('; %.1f GB written by %d machine%s at once at %.1f GB/s each: '
                            || '%.2f h writing checkpoints', $checkpoint_gb,
                            checkpoint_writers,
                            CASE WHEN checkpoint_writers > 1 THEN 's' ELSE '' END,
                            $write_gbps, checkpoint_total_s / 3600)
        END,
        CASE WHEN pricing_model = 'spot' AND expected_s IS NOT NULL
             THEN printf('spot (%s): ', interruption_source)
                  || CASE WHEN nodes > 1
                          THEN printf('any of %d machines stops the job: %d × %.5f = %.4f '
                                      || 'interruptions/h', nodes, nodes,
                                      machine_interrupts_per_hour, spot_interrupts_per_hour)
                          ELSE printf('%.5f interruptions/h', spot_interrupts_per_hour) END
                  || printf('; ~%.2f expected, +%.1f%% time from lost work and restarts',
                            expected_interruptions, 100 * loss_share / (1 - loss_share))
                  || CASE WHEN notice_saves
                          THEN printf('; the %d s notice fits a %.0f s checkpoint, so only '
                                      || 'the restart is lost (needs save-on-notice)',
                                      spot_notice_s, write_s)
                          WHEN spot_notice_s IS NOT NULL
                          THEN printf('; the %d s notice is too short for a %.0f s checkpoint',
                                      spot_notice_s, write_s)
                          ELSE '; notice time unknown' END
        END,
        CASE WHEN pricing_model = 'spot' AND od_total_usd IS NOT NULL
                  AND total_usd > od_total_usd
             THEN printf('dearer than %s on-demand on the same machines ($%.2f): %s', provider,
                         od_total_usd,
                         CASE WHEN price_usd_per_hour < od_price_usd_per_hour
                              THEN 'the expected restarts cost more than the discount saves'
                              ELSE 'its hourly price is no lower' END)
        END,
        CASE WHEN $storage_gb > 0 AND storage_usd_per_gb_month IS NULL
             THEN 'storage price unknown: not counted' END,
        CASE WHEN $egress_gb > 0 AND egress_usd_per_gb IS NULL
             THEN 'egress price unknown: not counted' END,
        CASE WHEN dtype IS NOT NULL AND dtype <> $dtype
             THEN printf('runs in %s (no %s on this GPU)', dtype, $dtype) END,
        CASE WHEN stale THEN 'stale: the provider''s last refresh failed; last good price'
        END,
        CASE WHEN replayed
             THEN printf('price from a recorded capture of %s (%d days old), replayed: not '
                         || 'a current price', strftime(last_seen_at, '%Y-%m-%d'),
                         price_age_days)
             WHEN price_age_days > $stale_days
             THEN printf('price observed %d days ago', price_age_days) END,
        CASE WHEN availability = 'out_of_stock'
             THEN printf('%s reported no stock when last read (%s): ranked after the offers '
                         || 'that may be rented now', provider,
                         strftime(last_seen_at, '%Y-%m-%d %H:%M UTC')) END,
    ], lambda x: x IS NOT NULL) AS reasons,
    part, t.offers_evaluated, t.replayed_offers, t.replayed_providers, t.replayed_from,
    t.replayed_to, t.too_old_offers
FROM shown, totals t
ORDER BY part,
         CASE WHEN part = 'rejected'
              THEN -coalesce(gpus_per_node, 0) * coalesce(usable_gb_per_gpu, 0) END,
         CASE WHEN part = 'rejected' THEN price_usd_per_hour END,
         no_stock, spot_last, objective_value, total_usd, provider, offer_key;
