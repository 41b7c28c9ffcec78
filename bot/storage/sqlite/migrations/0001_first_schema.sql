-- The whole first schema. `meta` records the embedding model whose vectors the file holds
-- (bot/storage/sql/meta.py); `facts_fts` is the keyword index, one row per active fact, keyed by its id.
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE users (
    scope TEXT NOT NULL, user_id TEXT NOT NULL, name TEXT NOT NULL DEFAULT '',
    opted_out INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL,
    PRIMARY KEY (scope, user_id)
) WITHOUT ROWID;
CREATE TABLE facts (
    id INTEGER PRIMARY KEY,
    scope TEXT NOT NULL,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'merged', 'invalidated')),
    superseded_by INTEGER REFERENCES facts(id) ON DELETE SET NULL,
    valid_from TEXT,
    recorded_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    retrieval_count INTEGER NOT NULL DEFAULT 0,
    last_retrieved_at TEXT,
    archived_embedding BLOB
);
CREATE INDEX facts_owner ON facts (scope, user_id, status);
CREATE INDEX facts_superseded_by ON facts (superseded_by) WHERE superseded_by IS NOT NULL;
CREATE TABLE fact_sources (
    fact_id INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    PRIMARY KEY (fact_id, message_id)
) WITHOUT ROWID;
CREATE INDEX fact_sources_message ON fact_sources (message_id);
CREATE TABLE fact_vectors (
    fact_id INTEGER PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    user_id TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX fact_vectors_owner ON fact_vectors (scope, user_id);
CREATE VIRTUAL TABLE facts_fts USING fts5(
    text, owner, tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO facts_fts (facts_fts, rank) VALUES ('secure-delete', 1);
CREATE TABLE fact_events (
    id INTEGER PRIMARY KEY,
    fact_id INTEGER,
    scope TEXT NOT NULL,
    user_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}',
    actor TEXT NOT NULL DEFAULT 'system',
    at TEXT NOT NULL
);
CREATE INDEX fact_events_fact ON fact_events (fact_id);
CREATE INDEX fact_events_owner ON fact_events (scope, user_id);
CREATE TABLE pending_messages (
    seq INTEGER PRIMARY KEY,
    message_id TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    channel_id TEXT NOT NULL,
    author_id TEXT NOT NULL,
    author_name TEXT NOT NULL,
    is_bot INTEGER NOT NULL DEFAULT 0,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    captured_at REAL NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX pending_channel ON pending_messages (channel_id, seq);
CREATE INDEX pending_author ON pending_messages (scope, author_id);
CREATE TABLE guild_settings (
    guild_id TEXT PRIMARY KEY,
    memory_enabled INTEGER NOT NULL DEFAULT 1,
    log_channel_id TEXT,
    members_see_others INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE ignored_channels (
    guild_id TEXT NOT NULL, channel_id TEXT NOT NULL, PRIMARY KEY (guild_id, channel_id)
) WITHOUT ROWID;
CREATE TABLE app_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE stale_vectors (fact_id INTEGER PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE);
