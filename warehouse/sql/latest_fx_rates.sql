SELECT as_of, currency, usd_per_unit FROM fx;
