-- What the per-offer facts of a recommendation are derived from (facts.sql), as CTEs: every
-- warehouse row they read passes through one of these, and facts.py stamps a facts table with a
-- hash of exactly these rows. So a facts table is current while the stamp of these rows is the
-- one it was built with, whichever writer changed the warehouse since.
offer_inputs AS (
    SELECT provider, offer_key, gpu_label, gpu_id, gpu_count, interconnect, network,
           network_gbps, pricing_model, price_usd_per_hour, price_usd_per_gpu_hour,
           billing_increment_s, region, geography, availability, provider_data, last_seen_at,
           stale, gpu_variant_assumed, term_kind, min_term, min_term_unit, min_term_hours,
           term_payment, term_source, gpus_per_machine, machines_min, machines_max,
           nvlink_domain_gpus, order_source, ask_count, ask_median_usd_per_hour,
           ask_max_usd_per_hour, host_id, host_reliability, host_verified
    FROM current_offers
),
profile_inputs AS (
    SELECT provider, billing_increment_s, min_charge_s, spot_billing_increment_s,
           spot_min_charge_s, persistent_storage, storage_usd_per_gb_month,
           egress_usd_per_gb, egress_free_gb_month, spot_notice_s, spot_pricing,
           multinode_fabric, multinode_gbps, max_cluster_nodes, ssh, docker_images, jupyter
    FROM provider_profiles
),
-- how each provider's prices were last read: live, or replayed from recorded captures
mode_inputs AS (
    SELECT provider, arg_max(mode, started_at) AS last_mode
    FROM refresh_run_log WHERE status = 'ok' GROUP BY provider
)
