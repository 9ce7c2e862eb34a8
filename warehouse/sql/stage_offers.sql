-- Stage one provider's incoming offers with the hash of everything that makes a new version.
-- Availability, provider_data, source_url, observed_at and the USD conversions are left out:
-- they describe the current state (or today's FX rate), not a change of the offer.
CREATE OR REPLACE TEMP TABLE stage AS
SELECT
    i.*,
    md5(concat_ws('|',
        coalesce(instance_type, '~'), gpu_label, coalesce(gpu_id, '~'),
        CAST(gpu_count AS VARCHAR), CAST(fractional_gpu AS VARCHAR),
        coalesce(CAST(vram_gb AS VARCHAR), '~'), coalesce(memory_type, '~'),
        coalesce(form_factor, '~'), interconnect, coalesce(CAST(interconnect_gbps AS VARCHAR), '~'),
        network, coalesce(CAST(network_gbps AS VARCHAR), '~'), pricing_model, price_kind, currency,
        CAST(price_per_hour AS VARCHAR), coalesce(CAST(billing_increment_s AS VARCHAR), '~'),
        coalesce(region, '~'), coalesce(geography, '~'), coalesce(zone, '~'),
        coalesce(CAST(vcpus AS VARCHAR), '~'), coalesce(CAST(ram_gb AS VARCHAR), '~'),
        coalesce(CAST(disk_gb AS VARCHAR), '~')
    )) AS row_hash
FROM incoming i;
