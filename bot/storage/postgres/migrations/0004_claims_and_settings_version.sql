-- Several processes on one database. A claim is a lease on a key ("channel:<id>" while it flushes,
-- "person:<scope>:<user>" while their facts are consolidated) that lapses at `until` (Unix seconds) if
-- its owner dies; `settings_version` counts changes other processes must see.
CREATE TABLE claims (key text PRIMARY KEY, owner text NOT NULL, until double precision NOT NULL);
INSERT INTO app_state (key, value) VALUES ('settings_version', '0') ON CONFLICT DO NOTHING;
