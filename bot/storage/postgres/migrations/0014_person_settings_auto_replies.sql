-- People's own settings in a place (a server, or their DMs): whether their memories are used in replies,
-- and whether they are told (privately) when something about them is learned.
-- Auto-reply channels an admin set: replies = 1 turned on, 0 turned off (AUTO_REPLY_CHANNEL_IDS, the
-- starting set, names channels on until an admin turns them off here).
ALTER TABLE users ADD COLUMN in_replies smallint NOT NULL DEFAULT 1;
ALTER TABLE users ADD COLUMN notify_learned smallint NOT NULL DEFAULT 0;
CREATE TABLE auto_reply_channels (
    guild_id text NOT NULL, channel_id text NOT NULL, replies smallint NOT NULL,
    PRIMARY KEY (guild_id, channel_id)
);
