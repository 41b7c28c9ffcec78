-- Personas, for a whole server (NULL: the bot's default) and for single channels.
ALTER TABLE guild_settings ADD COLUMN persona TEXT;
CREATE TABLE channel_personas (
    guild_id TEXT NOT NULL, channel_id TEXT NOT NULL, persona TEXT NOT NULL,
    PRIMARY KEY (guild_id, channel_id)
) WITHOUT ROWID;
