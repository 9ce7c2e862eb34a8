-- The user's own training runs, as their logs report them (`gpuscout runs add`): what was
-- measured, the job it was and where each of its options came from, and what gpuscout
-- predicted for that job when the run was added. Rows are only ever added.
CREATE TABLE measured_runs (
    run_id                  VARCHAR PRIMARY KEY,  -- hash of the log's figures: one run, one row
    added_at                TIMESTAMPTZ NOT NULL,
    source_path             VARCHAR NOT NULL,     -- the file as given (a CSV: with its line)
    source_format           VARCHAR NOT NULL,     -- hf-trainer, wandb, torchtune, litgpt, ...
    model                   VARCHAR NOT NULL,     -- the architecture catalog's model id
    gpu_id                  VARCHAR NOT NULL,     -- canonical GPU id
    gpus                    INTEGER NOT NULL,
    framework               VARCHAR NOT NULL,     -- hf, trl, unsloth, torchtune, litgpt, ...
    method                  VARCHAR NOT NULL,
    batch_size              INTEGER NOT NULL,     -- micro-batch per GPU
    seq_len                 INTEGER NOT NULL,
    mean_seq_len            INTEGER,
    grad_accum              INTEGER NOT NULL,
    job                     VARCHAR NOT NULL,     -- every job option as predicted (JSON)
    field_sources           MAP(VARCHAR, VARCHAR) NOT NULL,  -- option -> log | option | ...
    tokens_per_s            DOUBLE,               -- measured, all GPUs
    token_count             VARCHAR,              -- padded | non-padding | labels | samples
    token_basis             VARCHAR,              -- how tokens_per_s was read off the log
    peak_gb                 DOUBLE,               -- measured, per GPU, GB
    memory_metric           VARCHAR,              -- allocated | reserved | active | device
    runtime_s               DOUBLE,
    log_started_at          TIMESTAMPTZ,          -- the log's own timestamps, where it has them
    log_finished_at         TIMESTAMPTZ,
    predicted_tokens_per_s  DOUBLE,
    predicted_peak_gb       DOUBLE,               -- for memory_metric
    tokens_error_pct        DOUBLE,               -- 100 × (predicted − measured) / measured
    memory_error_pct        DOUBLE,
    gpuscout_version        VARCHAR NOT NULL,
    notes                   VARCHAR[] NOT NULL
);
