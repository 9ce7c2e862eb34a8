-- The offers a request may use, narrow: what pricing.py needs of each to price it by its pair
-- (pairs.sql) and rank it. In fact_id order, which is (provider, offer_key) order. Parameters:
-- those of offers.sql.
WITH {offers}
SELECT fact_id, pair_id, provider, price_usd_per_hour, last_seen_at,
       epoch(last_seen_at) AS seen_s, replayed, availability = 'out_of_stock' AS no_stock
FROM offers
ORDER BY fact_id
