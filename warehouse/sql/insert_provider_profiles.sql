INSERT INTO provider_profiles BY NAME SELECT * FROM incoming_profiles;
