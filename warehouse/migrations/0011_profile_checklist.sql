-- The rest of the provider checklist (pipeline/data/provider_profiles.csv): billing of spot
-- capacity where it differs, storage kinds and lifetime, object storage, ingress, spot limits,
-- environment (pinned images, root), placement and commitments. NULL = unknown, or set per
-- offer (the CSV says which). The `providers` view selects p.*, so it lists them as they come.
ALTER TABLE provider_profiles ADD COLUMN spot_billing_increment_s BIGINT;
ALTER TABLE provider_profiles ADD COLUMN spot_min_charge_s BIGINT;
ALTER TABLE provider_profiles ADD COLUMN storage_kinds VARCHAR;
ALTER TABLE provider_profiles ADD COLUMN storage_survives_termination BOOLEAN;
ALTER TABLE provider_profiles ADD COLUMN storage_multi_attach BOOLEAN;
ALTER TABLE provider_profiles ADD COLUMN object_storage BOOLEAN;
ALTER TABLE provider_profiles ADD COLUMN object_storage_usd_per_gb_month DOUBLE;
ALTER TABLE provider_profiles ADD COLUMN ingress_usd_per_gb DOUBLE;
ALTER TABLE provider_profiles ADD COLUMN spot_max_runtime_s BIGINT;
ALTER TABLE provider_profiles ADD COLUMN spot_interruption_rates BOOLEAN;
ALTER TABLE provider_profiles ADD COLUMN pinned_images BOOLEAN;
ALTER TABLE provider_profiles ADD COLUMN root_access BOOLEAN;
ALTER TABLE provider_profiles ADD COLUMN placement_groups BOOLEAN;
ALTER TABLE provider_profiles ADD COLUMN commitment_discounts BOOLEAN;
