-- How an offer is sold (its term), what one order of it is (machines of GPUs, the NVLink
-- domain), the market behind a marketplace price (asks, median, host) and whether its GPU
-- variant was assumed. Like availability and provider_data, these describe the offer's current
-- state: they are not part of row_hash (stage_offers.sql), so filling them in opens no new
-- version; a refresh updates them in place (merge_touch_unchanged.sql). Rows written before
-- this migration read NULL (false / 1 where a default says so) until their provider's next
-- refresh.
ALTER TABLE recent_versions ADD COLUMN gpu_variant_assumed BOOLEAN DEFAULT false;
ALTER TABLE recent_versions ADD COLUMN term_kind VARCHAR;
ALTER TABLE recent_versions ADD COLUMN min_term DOUBLE;
ALTER TABLE recent_versions ADD COLUMN min_term_unit VARCHAR;
ALTER TABLE recent_versions ADD COLUMN min_term_hours DOUBLE;
ALTER TABLE recent_versions ADD COLUMN term_payment VARCHAR;
ALTER TABLE recent_versions ADD COLUMN term_source VARCHAR;
ALTER TABLE recent_versions ADD COLUMN gpus_per_machine DOUBLE;
ALTER TABLE recent_versions ADD COLUMN machines_min BIGINT DEFAULT 1;
ALTER TABLE recent_versions ADD COLUMN machines_max BIGINT;
ALTER TABLE recent_versions ADD COLUMN nvlink_domain_gpus BIGINT;
ALTER TABLE recent_versions ADD COLUMN order_source VARCHAR;
ALTER TABLE recent_versions ADD COLUMN ask_count BIGINT;
ALTER TABLE recent_versions ADD COLUMN ask_median_usd_per_hour DOUBLE;
ALTER TABLE recent_versions ADD COLUMN ask_max_usd_per_hour DOUBLE;
ALTER TABLE recent_versions ADD COLUMN host_id VARCHAR;
ALTER TABLE recent_versions ADD COLUMN host_reliability DOUBLE;
ALTER TABLE recent_versions ADD COLUMN host_verified BOOLEAN;

-- Segments sealed before this migration lack the new columns, and a warehouse's
-- `sealed_versions` names its columns until its next seal (warehouse/segments.py): the history
-- is read by name, the missing columns NULL.
CREATE OR REPLACE VIEW offer_versions AS
SELECT * FROM recent_versions
UNION ALL BY NAME
SELECT * FROM sealed_versions;
