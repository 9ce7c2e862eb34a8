-- New measured runs arrive as an Arrow table registered as `incoming_measured_runs`; a run
-- already stored (same run_id) is kept as it is.
INSERT INTO measured_runs BY NAME
SELECT * FROM incoming_measured_runs
WHERE run_id NOT IN (SELECT run_id FROM measured_runs);
