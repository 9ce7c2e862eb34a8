-- Provider profiles (pipeline/data/provider_profiles.csv), replaced by every refresh: billing
-- granularity, storage, egress, spot mechanics, access, multi-node networking. NULL = unknown.
CREATE TABLE provider_profiles (
    provider                  VARCHAR PRIMARY KEY,
    billing_increment_s       BIGINT,
    min_charge_s              BIGINT,
    persistent_storage        BOOLEAN,
    storage_usd_per_gb_month  DOUBLE,
    storage_survives_stop     BOOLEAN,
    egress_usd_per_gb         DOUBLE,
    egress_free_gb_month      DOUBLE,
    spot_available            BOOLEAN,
    spot_notice_s             BIGINT,
    spot_pricing              VARCHAR,
    ssh                       BOOLEAN,
    docker_images             BOOLEAN,
    jupyter                   BOOLEAN,
    multinode_fabric          VARCHAR,
    multinode_gbps            DOUBLE,
    last_verified             DATE
);

-- One row per provider: its profile and the state of its data.
CREATE VIEW providers AS
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
