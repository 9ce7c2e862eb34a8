-- Close offers a complete refresh did not see. Only called when every page was read; offers
-- that were read but held back (temp table keep_open) are not closed.
-- $1 = provider, $2 = run id, $3 = observation time of the refresh.
UPDATE offer_versions
SET valid_to = $3, closed_by_run = $2
WHERE provider = $1 AND valid_to IS NULL
  AND offer_key NOT IN (SELECT offer_key FROM stage)
  AND offer_key NOT IN (SELECT offer_key FROM keep_open);
