-- Stage one provider's incoming offers with the hash of everything that makes a new version.
-- Availability, provider_data, source_url, observed_at and the USD conversions are left out:
-- they describe the current state (or today's FX rate), not a change of the offer. The column
-- list is the one migration 0004 rehashed stored rows with: change both together. The hash is
-- the UBIGINT that hash() returns (0006). A view over the registered Arrow table, not a copy:
-- the new versions are written once, from Arrow. `stage_row` (the row's position in that
-- table, added by merge_offers) names a staged offer without its text key; it is not stored.
CREATE OR REPLACE TEMP VIEW stage AS
SELECT
    i.*,
    hash(instance_type, gpu_label, gpu_id, gpu_count, fractional_gpu, vram_gb, memory_type,
         form_factor, interconnect, interconnect_gbps, network, network_gbps, pricing_model,
         price_kind, currency, price_per_hour, billing_increment_s, region, geography, zone,
         vcpus, ram_gb, disk_gb) AS row_hash
FROM incoming i;
