INSERT INTO refresh_run_log BY NAME
SELECT * FROM incoming_run;
