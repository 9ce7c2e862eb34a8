INSERT INTO refresh_field_coverage BY NAME
SELECT * FROM incoming_coverage;
