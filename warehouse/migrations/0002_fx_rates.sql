-- USD exchange rates used to convert non-USD offers, one row per reference date and currency.
CREATE TABLE fx_rates (
    as_of          DATE NOT NULL,
    currency       VARCHAR NOT NULL,
    usd_per_unit   DOUBLE NOT NULL,
    source_url     VARCHAR NOT NULL,
    loaded_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (as_of, currency)
);

-- The newest reference date's rates.
CREATE VIEW fx AS
SELECT * FROM fx_rates WHERE as_of = (SELECT max(as_of) FROM fx_rates);
