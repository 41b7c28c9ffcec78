-- Community memory. An episode is what one channel talked about over a span, with its vector (float32,
-- as fact_vectors) and the messages it was made from, each with its author, so a deleted message or its
-- author's forget-all takes the episode with it; its id is never reused. A fact's sources record their
-- author from now on (community facts are made of several people's messages); sources from before stay
-- NULL.
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    parent_channel_id TEXT,
    private_thread INTEGER NOT NULL DEFAULT 0,
    summary TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX episodes_span ON episodes (scope, ended_at);
CREATE TABLE episode_sources (
    episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    author_id TEXT NOT NULL,
    PRIMARY KEY (episode_id, message_id)
) WITHOUT ROWID;
CREATE INDEX episode_sources_message ON episode_sources (message_id);
CREATE INDEX episode_sources_author ON episode_sources (author_id);
ALTER TABLE fact_sources ADD COLUMN author_id TEXT;
CREATE INDEX fact_sources_author ON fact_sources (author_id) WHERE author_id IS NOT NULL;
