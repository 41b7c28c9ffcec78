-- Personas, for a whole server (NULL: the bot's default) and for single channels.
ALTER TABLE guild_settings ADD COLUMN persona text;
CREATE TABLE channel_personas (
    guild_id text NOT NULL, channel_id text NOT NULL, persona text NOT NULL,
    PRIMARY KEY (guild_id, channel_id)
);
