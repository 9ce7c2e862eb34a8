-- The offers a request may use, narrow: what pricing.py needs of each to price it by its pair
-- (pairs.sql) and rank it: the price per machine-hour it is ranked at (a lone outlier ask at its
-- market's median), its minimum term, its host and its market's identity, and the facts
-- `--require` filters on. In fact_id order, which is (provider, offer_key) order. Parameters:
-- those of offers.sql.
WITH {offers}
SELECT fact_id, pair_id, provider, price_usd_per_hour,
       ranked_usd_per_machine_hour AS price_usd_per_machine_hour, last_seen_at,
       epoch(last_seen_at) AS seen_s, replayed, availability = 'out_of_stock' AS no_stock,
       term_kind = 'committed' AS committed, min_term_hours * 3600.0 AS term_s,
       host_reliability,
       -- what `recommend --require` asks (NULL: unknown, or set per offer)
       ssh, docker_images, jupyter, persistent_storage, billing_increment_s,
       -- offers that differ only by their host (and price) are one row of the ranking
       CASE WHEN host_id IS NOT NULL
            THEN concat_ws('|', provider, gpu_id, gpu_count, pricing_model, term_kind,
                           coalesce(region, ''), coalesce(min_term_hours, 0))
            ELSE 'offer ' || fact_id END AS same_as
FROM offers
ORDER BY fact_id
