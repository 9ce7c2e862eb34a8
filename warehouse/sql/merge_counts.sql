-- What the merge will do, counted before it runs. $1 = provider.
WITH open_rows AS (
    SELECT offer_key, row_hash FROM offer_versions WHERE provider = $1 AND valid_to IS NULL
)
SELECT
    count(*) FILTER (WHERE o.offer_key IS NULL)                                 AS new_offers,
    count(*) FILTER (WHERE o.offer_key IS NOT NULL AND o.row_hash <> s.row_hash) AS changed_offers,
    count(*) FILTER (WHERE o.row_hash = s.row_hash)                             AS unchanged_offers,
    (SELECT count(*) FROM open_rows r
      WHERE r.offer_key NOT IN (SELECT offer_key FROM stage)
        AND r.offer_key NOT IN (SELECT offer_key FROM keep_open))               AS vanished_offers
FROM stage s
LEFT JOIN open_rows o USING (offer_key);
