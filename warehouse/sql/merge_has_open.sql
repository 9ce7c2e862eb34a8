-- Does the provider have an open version? No: its refresh is a first load (or a return after
-- all its offers closed), where every staged offer is new and nothing is closed or touched.
-- $1 = provider.
SELECT EXISTS (SELECT 1 FROM recent_versions WHERE provider = $1 AND valid_to IS NULL);
