-- Quarantined rows arrive as an Arrow table registered as `incoming_quarantine`.
INSERT INTO quarantine BY NAME SELECT * FROM incoming_quarantine;
