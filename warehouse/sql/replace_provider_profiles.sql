-- Profiles arrive as an Arrow table registered as `incoming_profiles`.
DELETE FROM provider_profiles;
