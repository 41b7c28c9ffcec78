"""The schema: numbered migrations from an empty file to the current version.

`PRAGMA user_version` counts the migrations applied; each runs in its own transaction. The `meta`
table records the embedding model whose vectors the file holds (bot/storage/sql/meta.py).
"""

from __future__ import annotations

import sqlite3

from bot.storage.errors import DatabaseError
from bot.storage.sqlite.connection import Transaction

MIGRATIONS: list[str] = [
    # 1: the whole first schema.
    """
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
    """,
    # 2: a thread's messages remember their parent channel, so ignoring the channel drops them too;
    # the bot's buffered replies remember the message they answer, so deleting it drops them too;
    # a source that only repeated a known fact (DUPLICATE) is marked, as it added no words to it.
    """
    ALTER TABLE pending_messages ADD COLUMN parent_channel_id TEXT;
    CREATE INDEX pending_parent ON pending_messages (parent_channel_id) WHERE parent_channel_id IS NOT NULL;
    ALTER TABLE pending_messages ADD COLUMN reply_to TEXT;
    CREATE INDEX pending_reply_to ON pending_messages (reply_to) WHERE reply_to IS NOT NULL;
    ALTER TABLE fact_sources ADD COLUMN confirms INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: provenance and consent. Each source records the channel (thread, parent, private or not) it was
    # said in, the audience its facts may serve; sources from before stay NULL, which recall treats as
    # the most private place. Facts kept only because their owner asked are marked sensitive.
    """
    ALTER TABLE pending_messages ADD COLUMN private_thread INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE fact_sources ADD COLUMN channel_id TEXT;
    ALTER TABLE fact_sources ADD COLUMN parent_channel_id TEXT;
    ALTER TABLE fact_sources ADD COLUMN private_thread INTEGER NOT NULL DEFAULT 0;
    UPDATE fact_sources SET channel_id = p.channel_id, parent_channel_id = p.parent_channel_id
        FROM pending_messages AS p WHERE p.message_id = fact_sources.message_id;
    ALTER TABLE facts ADD COLUMN sensitive INTEGER NOT NULL DEFAULT 0;
    """,
    # 4: several processes on one database. A claim is a lease on a key ("channel:<id>" while it
    # flushes, "person:<scope>:<user>" while their facts are consolidated) that lapses at `until`
    # (Unix seconds) if its owner dies; `settings_version` counts changes other processes must see.
    """
    CREATE TABLE claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, until REAL NOT NULL) WITHOUT ROWID;
    INSERT OR IGNORE INTO app_state (key, value) VALUES ('settings_version', '0');
    """,
    # 5: personas, for a whole server (NULL: the bot's default) and for single channels.
    """
    ALTER TABLE guild_settings ADD COLUMN persona TEXT;
    CREATE TABLE channel_personas (
        guild_id TEXT NOT NULL, channel_id TEXT NOT NULL, persona TEXT NOT NULL,
        PRIMARY KEY (guild_id, channel_id)
    ) WITHOUT ROWID;
    """,
    # 6: a fact id is never handed out twice (an INTEGER PRIMARY KEY reuses the highest id once it is
    # deleted, and ids are shown in /facts, exports and the admin log). SQLite cannot alter a primary key,
    # so `facts` is rebuilt with AUTOINCREMENT, ids and columns as they were (facts_fts is keyed by the same
    # ids; the tables referring to facts name it, not the rebuilt table). The counter starts past every id
    # the file still names; ids deleted before this version that nothing names cannot be known.
    """
    CREATE TABLE facts_rebuilt (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
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
        archived_embedding BLOB,
        sensitive INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO facts_rebuilt SELECT id, scope, user_id, text, status, superseded_by, valid_from, recorded_at,
        updated_at, retrieval_count, last_retrieved_at, archived_embedding, sensitive FROM facts;
    DROP TABLE facts;
    ALTER TABLE facts_rebuilt RENAME TO facts;
    CREATE INDEX facts_owner ON facts (scope, user_id, status);
    CREATE INDEX facts_superseded_by ON facts (superseded_by) WHERE superseded_by IS NOT NULL;
    DELETE FROM sqlite_sequence WHERE name = 'facts';
    INSERT INTO sqlite_sequence (name, seq) SELECT 'facts', coalesce(max(id), 0) FROM (
        SELECT max(id) AS id FROM facts
        UNION ALL SELECT max(fact_id) FROM fact_events
        UNION ALL SELECT max(CAST(json_extract(detail, '$.superseded_by') AS INTEGER)) FROM fact_events
            WHERE json_valid(detail)
        UNION ALL SELECT max(CAST(json_extract(detail, '$.replaces') AS INTEGER)) FROM fact_events
            WHERE json_valid(detail)
        UNION ALL SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'reembed_after_id'
    );
    """,
    # 7 (PostgreSQL's 3): community memory. An episode is what one channel talked about over a span, with
    # its vector (float32, as fact_vectors) and the messages it was made from, each with its author, so a
    # deleted message or its author's forget-all takes the episode with it; its id is never reused. A
    # fact's sources record their author from now on (community facts are made of several people's
    # messages); sources from before stay NULL.
    """
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
    """,
]


def _split_sql(script: str) -> list[str]:
    """Statements of a migration script (no semicolons inside literals in our migrations)."""
    return [s.strip() for s in script.split(";") if s.strip()]


def migrate(conn: sqlite3.Connection) -> int:
    """Apply numbered migrations past PRAGMA user_version; returns the resulting version."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise DatabaseError(
            f"the database schema is version {version}, newer than this bot knows ({len(MIGRATIONS)}); "
            "upgrade the bot"
        )
    for number in range(version + 1, len(MIGRATIONS) + 1):
        # Foreign keys off while a migration runs, as SQLite's procedure for changing a table asks (dropping
        # a rebuilt table would otherwise cascade its deletes), and checked before it commits.
        conn.execute("PRAGMA foreign_keys = OFF")
        try:
            with Transaction(conn):
                for statement in _split_sql(MIGRATIONS[number - 1]):
                    conn.execute(statement)
                if broken := conn.execute("PRAGMA foreign_key_check").fetchone():
                    raise DatabaseError(f"migration {number} would break a reference from {broken[0]}")
                conn.execute(f"PRAGMA user_version = {number}")
        finally:
            conn.execute("PRAGMA foreign_keys = ON")
    return len(MIGRATIONS)
