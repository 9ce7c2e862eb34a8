-- Offers with change-only history, the refresh run log, quarantine and the GPU catalog.

-- One row per version of an offer. A version is open while valid_to IS NULL; a price or spec
-- change closes it (valid_to = the observation that saw the change) and opens a new one.
-- availability, available_count, provider_data and last_seen_at describe the current state of
-- the open version and are updated in place: they are not history.
CREATE TABLE offer_versions (
    provider                VARCHAR NOT NULL,
    offer_key               VARCHAR NOT NULL,
    instance_type           VARCHAR,
    gpu_label               VARCHAR NOT NULL,
    gpu_id                  VARCHAR,
    gpu_count               DOUBLE NOT NULL,
    fractional_gpu          BOOLEAN NOT NULL,
    vram_gb                 DOUBLE,
    memory_type             VARCHAR,
    form_factor             VARCHAR,
    interconnect            VARCHAR NOT NULL,
    interconnect_gbps       DOUBLE,
    network                 VARCHAR NOT NULL,
    network_gbps            DOUBLE,
    pricing_model           VARCHAR NOT NULL,
    price_kind              VARCHAR NOT NULL,
    currency                VARCHAR NOT NULL,
    price_per_hour          DOUBLE NOT NULL,
    price_usd_per_hour      DOUBLE NOT NULL,
    price_usd_per_gpu_hour  DOUBLE NOT NULL,
    billing_increment_s     INTEGER,
    region                  VARCHAR,
    geography               VARCHAR,
    zone                    VARCHAR,
    vcpus                   DOUBLE,
    ram_gb                  DOUBLE,
    disk_gb                 DOUBLE,
    availability            VARCHAR NOT NULL,
    available_count         BIGINT,
    source_url              VARCHAR NOT NULL,
    provider_data           JSON,
    observed_at             TIMESTAMPTZ NOT NULL,
    row_hash                VARCHAR NOT NULL,
    valid_from              TIMESTAMPTZ NOT NULL,
    valid_to                TIMESTAMPTZ,
    last_seen_at            TIMESTAMPTZ NOT NULL,
    opened_by_run           VARCHAR NOT NULL,
    closed_by_run           VARCHAR
);
CREATE INDEX offer_versions_key ON offer_versions (provider, offer_key);

-- One row per provider per refresh run.
CREATE TABLE refresh_run_log (
    run_id             VARCHAR NOT NULL,
    provider           VARCHAR NOT NULL,
    mode               VARCHAR NOT NULL,      -- live | replay
    started_at         TIMESTAMPTZ NOT NULL,
    finished_at        TIMESTAMPTZ NOT NULL,
    duration_s         DOUBLE NOT NULL,
    status             VARCHAR NOT NULL,      -- ok | failed | refused | skipped
    complete           BOOLEAN NOT NULL,      -- every page read: vanished offers were closed
    captures           INTEGER NOT NULL,
    offers_parsed      INTEGER NOT NULL,
    offers_loaded      INTEGER NOT NULL,
    new_offers         INTEGER NOT NULL,
    changed_offers     INTEGER NOT NULL,
    unchanged_offers   INTEGER NOT NULL,
    closed_offers      INTEGER NOT NULL,
    quarantined        INTEGER NOT NULL,
    unknown_labels     VARCHAR[] NOT NULL,
    observed_at        TIMESTAMPTZ,
    error              VARCHAR,
    PRIMARY KEY (run_id, provider)
);

-- Rows a parser or a gate refused, with the reason, kept for review.
CREATE TABLE quarantine (
    run_id          VARCHAR NOT NULL,
    provider        VARCHAR NOT NULL,
    offer_key       VARCHAR,
    reason          VARCHAR NOT NULL,
    raw             VARCHAR NOT NULL,
    quarantined_at  TIMESTAMPTZ NOT NULL
);

-- Replaced from pipeline/data/gpus.csv by every refresh.
CREATE TABLE gpu_catalog (
    canonical_id        VARCHAR PRIMARY KEY,
    vendor              VARCHAR,
    family              VARCHAR,
    architecture        VARCHAR,
    name                VARCHAR,
    vram_gb             DOUBLE,
    memory_type         VARCHAR,
    mem_bandwidth_gbs   DOUBLE,
    form_factor         VARCHAR,
    nvlink              VARCHAR,
    bf16_dense_tflops   DOUBLE,
    fp16_dense_tflops   DOUBLE,
    fp8_dense_tflops    DOUBLE,
    int8_dense_tops     DOUBLE,
    tf32_dense_tflops   DOUBLE,
    fp32_tflops         DOUBLE,
    compute_capability  VARCHAR,
    bf16_support        VARCHAR,
    fp8_support         VARCHAR,
    tdp_w               DOUBLE,
    release_year        INTEGER,
    source              VARCHAR,
    notes               VARCHAR
);

CREATE VIEW offer_history AS
SELECT * EXCLUDE (row_hash) FROM offer_versions;

CREATE VIEW refresh_runs AS
SELECT * FROM refresh_run_log;

-- Per provider: its last run, its last good run, and whether its current data is stale.
CREATE VIEW provider_status AS
WITH ranked AS (
    SELECT *, row_number() OVER (PARTITION BY provider ORDER BY started_at DESC) AS rn
    FROM refresh_run_log
)
SELECT
    r.provider,
    r.status                                                AS last_status,
    r.started_at                                            AS last_run_at,
    r.error                                                 AS last_error,
    (SELECT max(g.started_at) FROM refresh_run_log g
      WHERE g.provider = r.provider AND g.status = 'ok')    AS last_success_at,
    r.status <> 'ok'                                        AS stale
FROM ranked r
WHERE r.rn = 1;

CREATE VIEW current_offers AS
SELECT
    o.* EXCLUDE (row_hash, valid_to, closed_by_run),
    coalesce(s.stale, false)                AS stale,
    s.last_success_at                       AS provider_last_success_at
FROM offer_versions o
LEFT JOIN provider_status s USING (provider)
WHERE o.valid_to IS NULL;

CREATE VIEW gpus AS
SELECT * FROM gpu_catalog;
