-- What each refresh read of the fields the drift gate watches (pipeline/quality.py
-- `field_coverage`): per run and provider, field -> share of the provider's offers that carried
-- it (vram, stock, region, interconnect; spot: spot prices per on-demand price). The next
-- refresh compares its own with its last good load's and holds a result back as `drift` when a
-- field the provider filled on most offers comes back empty on most. Runs from before this
-- migration have no rows here. A table beside the run log, so the log's columns stay as they are.
CREATE TABLE refresh_field_coverage (
    run_id     VARCHAR NOT NULL,
    provider   VARCHAR NOT NULL,
    field      VARCHAR NOT NULL,
    share      DOUBLE NOT NULL,
    PRIMARY KEY (run_id, provider, field)
);
