-- Closed history leaves the file a write session copies (warehouse/segments.py): the table of
-- versions becomes `recent_versions` (open versions and the closed ones not yet sealed), the
-- sealed ones are Parquet segments listed in `history_segments`, and `offer_versions` is the
-- view of both, so every query of the history reads what it read before. Views that only need
-- open versions read the table, not the segments.
ALTER TABLE offer_versions RENAME TO recent_versions;

CREATE TABLE history_segments (
    file              VARCHAR PRIMARY KEY,   -- name in `directory`
    directory         VARCHAR NOT NULL,      -- absolute: <warehouse file>.history
    versions          BIGINT NOT NULL,
    first_valid_from  TIMESTAMPTZ,
    last_valid_to     TIMESTAMPTZ,
    sealed_at         TIMESTAMPTZ NOT NULL
);

-- Replaced by every write session with the listed segments' paths (warehouse/segments.py).
CREATE VIEW sealed_versions AS
SELECT * FROM recent_versions WHERE false;

CREATE VIEW offer_versions AS
SELECT * FROM recent_versions
UNION ALL
SELECT * FROM sealed_versions;

CREATE OR REPLACE VIEW offer_history AS
SELECT * EXCLUDE (row_hash) FROM offer_versions;

CREATE OR REPLACE VIEW current_offers AS
SELECT
    o.* EXCLUDE (row_hash, valid_to, closed_by_run),
    coalesce(s.stale, false)                AS stale,
    s.last_success_at                       AS provider_last_success_at
FROM recent_versions o
LEFT JOIN provider_status s USING (provider)
WHERE o.valid_to IS NULL;

CREATE OR REPLACE VIEW providers AS
SELECT
    p.*,
    s.last_status,
    s.last_run_at,
    s.last_success_at,
    coalesce(s.stale, true)                                       AS stale,
    (SELECT count(*) FROM recent_versions o
      WHERE o.provider = p.provider AND o.valid_to IS NULL)        AS current_offers
FROM provider_profiles p
LEFT JOIN provider_status s USING (provider);
