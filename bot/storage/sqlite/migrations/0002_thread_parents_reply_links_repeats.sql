-- A thread's messages remember their parent channel, so ignoring the channel drops them too; the bot's
-- buffered replies remember the message they answer, so deleting it drops them too; a source that only
-- repeated a known fact (DUPLICATE) is marked, as it added no words to it.
ALTER TABLE pending_messages ADD COLUMN parent_channel_id TEXT;
CREATE INDEX pending_parent ON pending_messages (parent_channel_id) WHERE parent_channel_id IS NOT NULL;
ALTER TABLE pending_messages ADD COLUMN reply_to TEXT;
CREATE INDEX pending_reply_to ON pending_messages (reply_to) WHERE reply_to IS NOT NULL;
ALTER TABLE fact_sources ADD COLUMN confirms INTEGER NOT NULL DEFAULT 0;
