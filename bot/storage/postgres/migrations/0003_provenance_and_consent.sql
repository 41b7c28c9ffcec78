-- Provenance and consent. Each source records the channel (thread, parent, private or not) it was said
-- in, the audience its facts may serve; sources from before stay NULL, which recall treats as the most
-- private place. Facts kept only because their owner asked are marked sensitive.
ALTER TABLE pending_messages ADD COLUMN private_thread smallint NOT NULL DEFAULT 0;
ALTER TABLE fact_sources ADD COLUMN channel_id text;
ALTER TABLE fact_sources ADD COLUMN parent_channel_id text;
ALTER TABLE fact_sources ADD COLUMN private_thread smallint NOT NULL DEFAULT 0;
UPDATE fact_sources SET channel_id = p.channel_id, parent_channel_id = p.parent_channel_id
    FROM pending_messages AS p WHERE p.message_id = fact_sources.message_id;
ALTER TABLE facts ADD COLUMN sensitive smallint NOT NULL DEFAULT 0;
