-- The rows shown (pricing.py picks them: `shown`, Arrow, with their order, whole-run total,
-- what was charged, why a rejected one was set aside, the host duplicates folded into a ranked
-- one and the on-demand comparison) with the rest of their offer, pricing pair and plan: the
-- columns a RankedOffer or RejectedOffer reads, and the facts reasons.py writes the reasons
-- from (`why`). Parameters: $now.
SELECT
    o.provider, o.offer_key, o.gpu_id, CAST(o.gpus_per_machine AS INTEGER) AS gpus_per_node,
    c.nodes, o.interconnect, o.fabric AS network, pl.fabric_gbps_used AS network_gbps,
    o.pricing_model, o.term_kind, o.min_term_hours, o.price_usd_per_hour,
    o.price_usd_per_gpu_hour, o.ranked_usd_per_machine_hour AS price_usd_per_machine_hour,
    o.ranked_usd_per_machine_hour / o.gpus_per_machine AS ranked_usd_per_gpu_hour,
    o.ranked_usd_per_machine_hour * c.nodes AS price_usd_per_order_hour, o.region,
    pl.sharding, pl.dtype, round(pl.need_gb_per_gpu, 2) AS need_gb_per_gpu,
    round(pl.peak_gb_per_gpu, 2) AS peak_gb_per_gpu,
    round(c.usable_gb_per_gpu, 1) AS usable_gb_per_gpu, pl.tokens_per_s,
    round(pl.hours, 3) AS compute_hours, round(c.expected_hours, 3) AS expected_hours,
    round(c.billed_s / 3600, 3) AS billed_hours, round(s.charged_s / 3600, 3) AS charged_hours,
    round(c.interval_s / 60, 1) AS checkpoint_every_min,
    round(c.checkpoint_total_s / 3600, 3) AS checkpoint_hours,
    round(c.interrupts_per_hour, 6) AS interruptions_per_hour,
    round(c.expected_interruptions, 2) AS expected_interruptions,
    round(s.compute_usd, 2) AS compute_usd,
    round(c.storage_usd, 2) AS storage_usd, round(c.egress_usd, 2) AS egress_usd,
    round(s.total_usd, 2) AS total_usd, round(s.run_total_usd, 2) AS run_total_usd,
    o.last_seen_at AS observed_at,
    -- the age of the price: since the refresh that last saw it
    date_diff('day', o.last_seen_at, CAST($now AS TIMESTAMPTZ)) AS price_age_days, o.stale,
    CASE WHEN o.replayed THEN 'replay' ELSE 'live' END AS price_source, o.availability,
    o.resold_from, o.gpu_variant_assumed, o.ask_count, o.host_reliability,
    coalesce(s.similar_offers, 1) AS similar_offers, s.why AS set_aside, s.part,
    -- what reasons.py writes the reasons (and rejected_because) from
    struct_pack(
        s.too_old, s.total_usd, c.usable_gb_per_gpu, o.replayed,
        need_gb_per_gpu := pl.need_gb_per_gpu, fabric_source := o.fabric_source,
        fabric_gbps := o.fabric_gbps, max_nodes := o.max_nodes,
        max_nodes_source := o.max_nodes_source, billing_increment_s := o.billing_increment_s,
        min_charge_s := o.min_charge_s, storage_usd_per_gb_month := o.storage_usd_per_gb_month,
        egress_usd_per_gb := o.egress_usd_per_gb, spot_notice_s := o.spot_notice_s,
        ring_gbs := pl.ring_gbs, scaling_efficiency := pl.scaling_efficiency,
        checkpoint_writers := pl.checkpoint_writers, c.reject_reason, c.no_fabric_note,
        c.compute_s, c.write_s, c.hw_interrupts_per_hour, c.machine_interrupts_per_hour,
        c.spot_interrupts_per_hour, c.notice_saves, c.interrupts_per_hour, c.losing_per_hour,
        c.young_daly_s, c.interval_s, c.checkpoint_total_s, c.run_s, c.loss_share,
        c.expected_s, c.expected_hours, c.expected_interruptions, c.billed_s, c.too_slow,
        s.od_total_usd, s.od_price_usd_per_hour, s.charged_s, s.run_total_usd,
        s.price_low, s.price_high,
        c.storage_low_usd, c.storage_high_usd, c.storage_rate_unknown, c.storage_none,
        c.storage_hours, c.egress_low_usd, c.egress_high_usd, c.egress_rate_unknown,
        c.egress_billable_gb, persistent_storage := o.persistent_storage,
        storage_profile := o.storage_profile, egress_profile := o.egress_profile,
        egress_free_gb_month := o.egress_free_gb_month, billing_source := o.billing_source,
        billing_profile := o.billing_profile, ssh := o.ssh, docker_images := o.docker_images,
        jupyter := o.jupyter, price_usd_per_machine_hour := o.ranked_usd_per_machine_hour,
        committed_term_s := o.min_term_hours * 3600.0,
        interruption_source := o.interruption_source,
        interruption_basis := o.interruption_basis,
        gpu_label := o.gpu_label, min_term := o.min_term, min_term_unit := o.min_term_unit,
        term_payment := o.term_payment, term_source := o.term_source,
        machines_in_offer := o.machines_in_offer, min_nodes := o.min_nodes,
        order_source := o.order_source, nvlink_domain_gpus := o.nvlink_domain_gpus,
        listed_usd_per_machine_hour := o.price_usd_per_machine_hour,
        ask_median_usd_per_machine_hour := o.ask_median_usd_per_machine_hour,
        ask_max_usd_per_machine_hour := o.ask_max_usd_per_machine_hour,
        outlier_ask := o.outlier_ask, host_id := o.host_id,
        seen_day := strftime(o.last_seen_at, '%Y-%m-%d'),
        seen_at := strftime(o.last_seen_at, '%Y-%m-%d %H:%M UTC')
    ) AS why
FROM shown s
JOIN recommend_offers o USING (fact_id)
JOIN pair_costs c ON c.pair_id = o.pair_id
LEFT JOIN plans pl ON pl.plan_id = c.plan_id
ORDER BY s.ord;
