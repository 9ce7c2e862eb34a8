-- What the per-offer facts of a recommendation are derived from (facts.sql), as CTEs: every
-- warehouse row they read passes through one of these, and facts.py stamps a facts table with a
-- hash of exactly these rows. So a facts table is current while the stamp of these rows is the
-- one it was built with, whichever writer changed the warehouse since.
offer_inputs AS (
    SELECT provider, offer_key, gpu_label, gpu_id, gpu_count, interconnect, network,
           network_gbps, pricing_model, price_usd_per_hour, price_usd_per_gpu_hour,
           billing_increment_s, region, geography, availability, provider_data, last_seen_at,
           stale
    FROM current_offers
),
profile_inputs AS (
    SELECT provider, billing_increment_s, min_charge_s, storage_usd_per_gb_month,
           egress_usd_per_gb, spot_notice_s, spot_pricing, multinode_fabric, multinode_gbps,
           max_cluster_nodes
    FROM provider_profiles
),
-- how each provider's prices were last read: live, or replayed from recorded captures
mode_inputs AS (
    SELECT provider, arg_max(mode, started_at) AS last_mode
    FROM refresh_run_log WHERE status = 'ok' GROUP BY provider
)
