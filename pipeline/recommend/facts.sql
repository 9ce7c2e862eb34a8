-- Everything about a current offer that no job and no request changes, for every current
-- offer (facts.py keeps it as the table `recommend_offers`; offers.sql filters it per request):
-- its provider's facts, how it is sold, what one order of it is and the placement key it is
-- sized by, the market behind its price, and whether the provider's prices were last read live
-- or replayed from recorded captures. An aggregator's offer (`$aggregators`: it resells another
-- cloud's machine, named in provider_data.cloud, spelt as the warehouse spells it through
-- `$cloud_from` -> `$cloud_to`, else as provider_data.resold_from names it) carries
-- `resold_from`, and `direct_twin` when that cloud is read directly with the same GPU, count
-- and pricing: the machine is then counted once, as the direct offer. A fact its aggregator's
-- profile does not state (storage, egress, billing, SSH, Docker, Jupyter: set per cloud) is
-- read from that cloud's profile, and `*_profile` names the profile each price came from. `offer_reject` is why an offer cannot serve any job (pair_costs.py adds the
-- job's own reasons after it), `offer_reject_kind` its short name. Preceded by
-- `WITH {inputs}`. Parameters: $min_gpus_multi_node, $default_max_nodes, $aggregators,
-- $cloud_from, $cloud_to, $outlier_share, and the sourced interruption rates
-- (pipeline/data/spot_interruptions.csv) as $rate_provider, $rate_kind, $rate_per_hour,
-- $rate_basis, $rate_label ('*' rows: the kind's default). It continues inputs.sql's CTEs.
, rates AS (
    SELECT unnest($rate_provider) AS provider, unnest($rate_kind) AS kind,
           unnest($rate_per_hour) AS rate, unnest($rate_basis) AS basis,
           unnest($rate_label) AS label
)
SELECT *,
       -- the offer's pricing terms: offers of one pair_id share a machine placement and every
       -- term of the whole-run price but the hourly price itself, so pair_costs.py prices each
       -- pair once and pricing.py each offer by its pair
       dense_rank() OVER (ORDER BY gpu_id, gpus_per_machine, gpu_count, fabric, fabric_gbps,
                                   max_nodes, min_nodes, gpu_variant_assumed, pricing_model,
                                   machine_interrupts_per_hour, interruption_basis,
                                   spot_notice_s, billing_increment_s, min_charge_s,
                                   persistent_storage, storage_usd_per_gb_month,
                                   egress_usd_per_gb, egress_free_gb_month,
                                   offer_reject) AS pair_id
FROM (
SELECT * EXCLUDE (price_scope),
       -- a row's identity here, in the order of (provider, offer_key), the key of a current
       -- offer: pricing.py breaks ties by it and shown.sql joins the offers shown back by it
       row_number() OVER (ORDER BY provider, offer_key) AS fact_id,
       CASE
           WHEN direct_twin THEN 'resold twin'
           WHEN gpu_id IS NULL THEN 'unknown GPU'
           WHEN gpu_count < 1 OR gpu_count <> floor(gpu_count) THEN 'fractional GPU'
           WHEN price_scope = 'gpu_component' THEN 'GPU-only price'
           WHEN gpus_per_machine <> floor(gpus_per_machine)
               OR machines_in_offer <> floor(machines_in_offer) THEN 'order shape'
           WHEN term_kind = 'committed' AND min_term_hours IS NULL THEN 'term not stated'
           WHEN min_nodes > 1 AND fabric IS NULL THEN 'order without fabric'
       END AS offer_reject_kind,
       CASE offer_reject_kind
           WHEN 'resold twin'
               THEN printf('resold %s machine, also read from %s directly: counted once, '
                           || 'as the direct offer', resold_from, resold_from)
           WHEN 'unknown GPU' THEN 'unknown GPU label ' || gpu_label
           WHEN 'fractional GPU' THEN 'fractional GPU share'
           WHEN 'GPU-only price' THEN 'GPU component price only: CPU and RAM are billed on top'
           WHEN 'order shape'
               THEN printf('%g GPUs are not whole machines of %g', gpu_count, gpus_per_machine)
           WHEN 'term not stated'
               THEN 'committed for a term the source does not state: its whole-term cost '
                    || 'cannot be priced'
           WHEN 'order without fabric'
               THEN printf('one order is %d machines of %g GPUs, and no fabric between them '
                           || 'is known', min_nodes, gpus_per_machine)
       END AS offer_reject
FROM (
    SELECT o.* EXCLUDE (billing_increment_s, network, network_gbps, provider_data,
                        machines_min, ask_median_usd_per_hour, ask_max_usd_per_hour,
                        term_kind),
           -- how it is sold: as stated, else a spot offer is a bid where its provider's profile
           -- says spot is bid for
           coalesce(o.term_kind, CASE WHEN p.spot_pricing = 'bid' THEN 'bid' ELSE 'spot' END)
                                                                            AS term_kind,
           -- billing: the offer's own granularity, else its kind's in the profile that states
           -- one (a spot row where the provider bills spot differently, else its general row)
           CASE WHEN p.billing_increment_s IS NOT NULL OR (o.pricing_model = 'spot'
                     AND p.spot_billing_increment_s IS NOT NULL) THEN o.provider
                WHEN rp.billing_increment_s IS NOT NULL OR (o.pricing_model = 'spot'
                     AND rp.spot_billing_increment_s IS NOT NULL) THEN rp.provider
           END                                                              AS billing_profile,
           coalesce(o.billing_increment_s, CASE
               WHEN billing_profile = o.provider AND o.pricing_model = 'spot'
                   THEN coalesce(p.spot_billing_increment_s, p.billing_increment_s)
               WHEN billing_profile = o.provider THEN p.billing_increment_s
               WHEN o.pricing_model = 'spot'
                   THEN coalesce(rp.spot_billing_increment_s, rp.billing_increment_s)
               ELSE rp.billing_increment_s END)                            AS billing_increment_s,
           CASE WHEN o.billing_increment_s IS NOT NULL THEN 'offer'
                ELSE billing_profile END                                    AS billing_source,
           CASE WHEN billing_profile = o.provider AND o.pricing_model = 'spot'
                    THEN coalesce(p.spot_min_charge_s, p.min_charge_s)
                WHEN billing_profile = o.provider THEN p.min_charge_s
                WHEN o.pricing_model = 'spot'
                    THEN coalesce(rp.spot_min_charge_s, rp.min_charge_s)
                WHEN billing_profile IS NOT NULL THEN rp.min_charge_s
                ELSE coalesce(p.min_charge_s, rp.min_charge_s) END         AS min_charge_s,
           -- storage and egress: the provider's rate, else (a resold machine) its cloud's
           coalesce(p.persistent_storage, rp.persistent_storage)           AS persistent_storage,
           coalesce(p.storage_usd_per_gb_month, rp.storage_usd_per_gb_month)
                                                                   AS storage_usd_per_gb_month,
           CASE WHEN p.storage_usd_per_gb_month IS NOT NULL THEN o.provider
                WHEN rp.storage_usd_per_gb_month IS NOT NULL THEN rp.provider
           END                                                              AS storage_profile,
           coalesce(p.egress_usd_per_gb, rp.egress_usd_per_gb)             AS egress_usd_per_gb,
           CASE WHEN p.egress_usd_per_gb IS NOT NULL THEN o.provider
                WHEN rp.egress_usd_per_gb IS NOT NULL THEN rp.provider END AS egress_profile,
           CASE WHEN p.egress_usd_per_gb IS NOT NULL THEN p.egress_free_gb_month
                ELSE rp.egress_free_gb_month END                          AS egress_free_gb_month,
           -- what `recommend --require` asks of the machine's environment
           coalesce(p.ssh, rp.ssh) AS ssh, coalesce(p.docker_images, rp.docker_images)
                                                                             AS docker_images,
           coalesce(p.jupyter, rp.jupyter)                                  AS jupyter,
           p.spot_notice_s, p.spot_pricing,
           -- what one order is: machines of gpus_per_machine GPUs; the listed price covers
           -- machines_in_offer of them (an instant cluster's price is the whole cluster's)
           o.gpu_count / o.gpus_per_machine                                  AS machines_in_offer,
           o.machines_min                                                    AS min_nodes,
           o.price_usd_per_hour / machines_in_offer                  AS price_usd_per_machine_hour,
           -- the fabric between machines: inside one NVLink domain that spans machines (an
           -- NVL72 rack), NVLink (plans.py takes its Gb/s from the GPU); else the offer's own,
           -- else its provider's profile; only full 8-GPU machines, or orders of several
           -- machines, are placed on several
           CASE WHEN min_nodes > 1 AND o.nvlink_domain_gpus >= min_nodes * gpus_per_machine
                THEN 'NVLink'
                WHEN gpus_per_machine >= $min_gpus_multi_node OR min_nodes > 1
                THEN coalesce(nullif(o.network, 'unknown'), p.multinode_fabric) END AS fabric,
           CASE WHEN fabric IS NULL THEN NULL
                WHEN fabric = 'NVLink' THEN 'NVLink domain of ' || o.nvlink_domain_gpus
                                            || ' GPUs'
                WHEN o.network <> 'unknown' THEN 'offer'
                ELSE 'provider profile' END                                 AS fabric_source,
           CASE WHEN fabric IS NULL OR fabric = 'NVLink' THEN NULL
                WHEN o.network <> 'unknown'
                    THEN coalesce(o.network_gbps,
                                  CASE WHEN p.multinode_fabric = o.network
                                       THEN p.multinode_gbps END)
                ELSE p.multinode_gbps END                                   AS fabric_gbps,
           -- the most machines one cluster may have: the order's own, the offer's GPU limit,
           -- the profile's, else the stated default; an NVLink domain is not left
           CAST(floor(TRY_CAST(json_extract_string(o.provider_data, '$.max_gpus') AS DOUBLE)
                      / gpus_per_machine) AS INTEGER)                        AS offer_max_nodes,
           CASE WHEN fabric IS NULL THEN NULL
                WHEN fabric = 'NVLink'
                    THEN CAST(floor(o.nvlink_domain_gpus / gpus_per_machine) AS INTEGER)
                ELSE greatest(min_nodes, coalesce(o.machines_max, offer_max_nodes,
                                                  p.max_cluster_nodes, $default_max_nodes))
           END                                                              AS max_nodes,
           CASE WHEN fabric IS NULL THEN NULL
                WHEN fabric = 'NVLink' THEN 'its NVLink domain'
                WHEN o.machines_max IS NOT NULL THEN 'the order'
                WHEN offer_max_nodes IS NOT NULL THEN 'offer'
                WHEN p.max_cluster_nodes IS NOT NULL THEN 'provider profile'
                ELSE 'assumed' END                                          AS max_nodes_source,
           coalesce(m.last_mode = 'replay', false)                          AS replayed,
           o.resold_from IS NOT NULL AND EXISTS (
               SELECT 1 FROM offer_inputs d
               WHERE d.provider = o.resold_from AND d.gpu_id = o.gpu_id
                 AND d.gpu_count = o.gpu_count AND d.pricing_model = o.pricing_model
           )                                                                AS direct_twin,
           -- AWS Spot Advisor: the share of instances interrupted in a month, per offer
           json_extract_string(o.provider_data, '$.interruption_band')      AS interruption_band,
           -- interruptions per hour of ONE machine, and where the rate comes from
           CASE WHEN o.pricing_model <> 'spot' THEN 0.0
                WHEN interruption_band IS NOT NULL THEN
                    -ln(1 - CASE interruption_band
                        WHEN '<5%' THEN 0.025 WHEN '5-10%' THEN 0.075 WHEN '10-15%' THEN 0.125
                        WHEN '15-20%' THEN 0.175 ELSE 0.25 END) / 730.0
                ELSE coalesce(own.rate, kind_default.rate, spot_default.rate)
           END                                                 AS machine_interrupts_per_hour,
           CASE WHEN o.pricing_model <> 'spot' THEN NULL
                WHEN interruption_band IS NOT NULL THEN 'published'
                ELSE coalesce(own.basis, kind_default.basis, spot_default.basis)
           END                                                      AS interruption_basis,
           CASE WHEN o.pricing_model <> 'spot' THEN NULL
                WHEN interruption_band IS NOT NULL
                    THEN 'AWS Spot Advisor band ' || interruption_band || '/month'
                ELSE coalesce(own.label, kind_default.label, spot_default.label)
           END                                                      AS interruption_source,
           -- the market behind a marketplace price, per machine; a lowest ask below
           -- $outlier_share of the median of two or more asks is ranked at the median
           o.ask_median_usd_per_hour / machines_in_offer        AS ask_median_usd_per_machine_hour,
           o.ask_max_usd_per_hour / machines_in_offer              AS ask_max_usd_per_machine_hour,
           coalesce(o.ask_count >= 2 AND o.price_usd_per_hour
                    < $outlier_share * o.ask_median_usd_per_hour, false)   AS outlier_ask,
           CASE WHEN outlier_ask THEN ask_median_usd_per_machine_hour
                ELSE price_usd_per_machine_hour END                  AS ranked_usd_per_machine_hour,
           json_extract_string(o.provider_data, '$.price_scope')            AS price_scope
    -- (a column of the FROM side wins over a SELECT alias of the same name, so the defaults
    -- are filled in here)
    FROM (SELECT * REPLACE (coalesce(term_kind, CASE pricing_model
                                WHEN 'reserved' THEN 'committed' WHEN 'on_demand'
                                THEN 'on_demand' END) AS term_kind,
                            coalesce(gpus_per_machine, gpu_count) AS gpus_per_machine,
                            coalesce(machines_min, 1) AS machines_min),
                 CASE WHEN list_contains($aggregators, provider)
                      THEN coalesce($cloud_to[list_position($cloud_from,
                                        json_extract_string(provider_data, '$.cloud'))],
                                    json_extract_string(provider_data, '$.resold_from'),
                                    json_extract_string(provider_data, '$.cloud'))
                 END AS resold_from
          FROM offer_inputs) o
    LEFT JOIN profile_inputs p USING (provider)
    -- the profile of the cloud whose machine an aggregator resells
    LEFT JOIN profile_inputs rp ON rp.provider = o.resold_from
    LEFT JOIN mode_inputs m USING (provider)
    LEFT JOIN rates own
        ON own.provider = o.provider
       AND own.kind = coalesce(o.term_kind, CASE WHEN p.spot_pricing = 'bid' THEN 'bid'
                                                 ELSE 'spot' END)
    LEFT JOIN rates kind_default
        ON kind_default.provider = '*'
       AND kind_default.kind = coalesce(o.term_kind, CASE WHEN p.spot_pricing = 'bid'
                                                          THEN 'bid' ELSE 'spot' END)
    LEFT JOIN rates spot_default ON spot_default.provider = '*' AND spot_default.kind = 'spot'
)
)
