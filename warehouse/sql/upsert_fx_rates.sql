-- Rates arrive as an Arrow table registered as `incoming_fx`.
INSERT OR REPLACE INTO fx_rates BY NAME SELECT * FROM incoming_fx;
