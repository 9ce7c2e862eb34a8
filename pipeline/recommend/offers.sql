-- The `offers` CTE that candidates.sql and pairs.sql start from (candidates.py puts it in
-- place of {offers}): the current offers a request may use, with their per-offer facts. The name
-- `recommend_offers` is the facts table facts.py makes current on the connection first (the
-- warehouse's own, or one built for this connection; see facts.py). Parameters: $providers,
-- $region, $spot_policy.
offers AS (
    SELECT * FROM recommend_offers o
    WHERE ($providers IS NULL OR list_contains($providers, o.provider))
      AND ($region IS NULL OR o.region ILIKE '%' || $region || '%'
           OR o.geography = lower($region))
      AND ($spot_policy <> 'forbid' OR o.pricing_model <> 'spot')
)
