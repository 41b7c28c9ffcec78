-- A fact id is never handed out twice (an INTEGER PRIMARY KEY reuses the highest id once it is deleted,
-- and ids are shown in /facts, exports and the admin log). SQLite cannot alter a primary key, so `facts`
-- is rebuilt with AUTOINCREMENT, ids and columns as they were (facts_fts is keyed by the same ids; the
-- tables referring to facts name it, not the rebuilt table). The counter starts past every id the file
-- still names; ids deleted before this version that nothing names cannot be known. Like every SQLite
-- migration it runs with foreign keys off (dropping the old table would otherwise cascade its deletes)
-- and checked before it commits (bot/storage/sqlite/schema.py).
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
