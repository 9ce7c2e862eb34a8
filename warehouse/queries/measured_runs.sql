-- The user's measured runs, oldest first (`gpuscout runs list`, the correction's evidence).
SELECT * FROM measured_runs ORDER BY added_at, run_id;
