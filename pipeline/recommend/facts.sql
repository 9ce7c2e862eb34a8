-- Everything about a current offer that no job and no request changes, for every current
-- offer (facts.py keeps it as the table `recommend_offers`; offers.sql filters it per request):
-- its provider's facts, its placement key, and whether the provider's prices were last read live
-- or replayed from recorded captures. An aggregator's offer (`$aggregators`: it resells another
-- cloud's machine, named in provider_data.cloud, spelt as the warehouse spells it through
-- `$cloud_from` -> `$cloud_to`) carries `resold_from`, and `direct_twin` when that cloud is read
-- directly with the same GPU, count and pricing: the machine is then counted once, as the
-- direct offer. `offer_reject` is why an offer cannot serve any job (pair_costs.py adds the
-- job's own reasons after it). Preceded by `WITH {inputs}`. Parameters: $min_gpus_multi_node,
-- $default_max_nodes, $aggregators, $cloud_from, $cloud_to.
SELECT *,
       -- the offer's pricing terms: offers of one pair_id share a machine placement and every
       -- term of the whole-run price but the hourly price itself, so pair_costs.py prices each
       -- pair once and pricing.py each offer by its pair
       dense_rank() OVER (ORDER BY gpu_id, gpu_count, fabric, fabric_gbps, max_nodes,
                                   pricing_model, interruption_band, spot_pricing,
                                   spot_notice_s, billing_increment_s, min_charge_s,
                                   storage_usd_per_gb_month, egress_usd_per_gb,
                                   offer_reject) AS pair_id
FROM (
SELECT * EXCLUDE (price_scope),
       -- a row's identity here, in the order of (provider, offer_key), the key of a current
       -- offer: pricing.py breaks ties by it and shown.sql joins the offers shown back by it
       row_number() OVER (ORDER BY provider, offer_key) AS fact_id,
       CASE
           WHEN direct_twin
               THEN printf('resold %s machine, also read from %s directly: counted once, '
                           || 'as the direct offer', resold_from, resold_from)
           WHEN gpu_id IS NULL THEN 'unknown GPU label ' || gpu_label
           WHEN gpu_count < 1 OR gpu_count <> floor(gpu_count)
               THEN 'fractional GPU share'
           WHEN price_scope = 'gpu_component'
               THEN 'GPU component price only: CPU and RAM are billed on top'
       END AS offer_reject
FROM (
    SELECT o.* EXCLUDE (billing_increment_s, network, network_gbps, provider_data),
           -- an offer's own billing granularity wins over its provider's profile
           coalesce(o.billing_increment_s, p.billing_increment_s) AS billing_increment_s,
           p.min_charge_s, p.storage_usd_per_gb_month,
           p.egress_usd_per_gb, p.spot_notice_s, p.spot_pricing,
           -- the fabric between machines: the offer's own, else its provider's profile; only
           -- full 8-GPU machines are placed on several
           CASE WHEN o.gpu_count >= $min_gpus_multi_node
                THEN coalesce(nullif(o.network, 'unknown'), p.multinode_fabric) END AS fabric,
           CASE WHEN fabric IS NULL THEN NULL
                WHEN o.network <> 'unknown' THEN 'offer'
                ELSE 'provider profile' END                                 AS fabric_source,
           CASE WHEN fabric IS NULL THEN NULL
                WHEN o.network <> 'unknown'
                    THEN coalesce(o.network_gbps,
                                  CASE WHEN p.multinode_fabric = o.network
                                       THEN p.multinode_gbps END)
                ELSE p.multinode_gbps END                                   AS fabric_gbps,
           -- the most machines one cluster may have: the offer's own GPU limit, else the
           -- profile's, else the stated default
           CAST(floor(TRY_CAST(json_extract_string(o.provider_data, '$.max_gpus') AS DOUBLE)
                      / o.gpu_count) AS INTEGER)                             AS offer_max_nodes,
           CASE WHEN fabric IS NULL THEN NULL
                ELSE coalesce(offer_max_nodes, p.max_cluster_nodes, $default_max_nodes)
           END                                                              AS max_nodes,
           CASE WHEN fabric IS NULL THEN NULL
                WHEN offer_max_nodes IS NOT NULL THEN 'offer'
                WHEN p.max_cluster_nodes IS NOT NULL THEN 'provider profile'
                ELSE 'assumed' END                                          AS max_nodes_source,
           coalesce(m.last_mode = 'replay', false)                          AS replayed,
           CASE WHEN list_contains($aggregators, o.provider)
                THEN coalesce($cloud_to[list_position($cloud_from,
                                  json_extract_string(o.provider_data, '$.cloud'))],
                              json_extract_string(o.provider_data, '$.cloud')) END AS resold_from,
           resold_from IS NOT NULL AND EXISTS (
               SELECT 1 FROM offer_inputs d
               WHERE d.provider = resold_from AND d.gpu_id = o.gpu_id
                 AND d.gpu_count = o.gpu_count AND d.pricing_model = o.pricing_model
           )                                                                AS direct_twin,
           -- AWS Spot Advisor: the share of instances interrupted in a month (pairs.sql)
           json_extract_string(o.provider_data, '$.interruption_band')      AS interruption_band,
           json_extract_string(o.provider_data, '$.price_scope')            AS price_scope
    FROM offer_inputs o
    LEFT JOIN profile_inputs p USING (provider)
    LEFT JOIN mode_inputs m USING (provider)
)
)
