-- The most machines a provider sells as one cluster (pipeline/data/provider_profiles.csv,
-- fact max_cluster_nodes): the recommendation places a job on at most this many. NULL = not
-- published. The `providers` view is rebuilt so that it lists the new column.
ALTER TABLE provider_profiles ADD COLUMN max_cluster_nodes BIGINT;

CREATE OR REPLACE VIEW providers AS
SELECT
    p.*,
    s.last_status,
    s.last_run_at,
    s.last_success_at,
    coalesce(s.stale, true)                                       AS stale,
    (SELECT count(*) FROM offer_versions o
      WHERE o.provider = p.provider AND o.valid_to IS NULL)        AS current_offers
FROM provider_profiles p
LEFT JOIN provider_status s USING (provider);
