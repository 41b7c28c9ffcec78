-- When a person last asked to forget everything in a scope. A message they said before that moment,
-- still queued in another process's memory (the bot's, while the dashboard or MCP ran the forget), is
-- dropped when it reaches the buffer (`buffer_messages`), so nothing is learned from it afterwards.
CREATE TABLE forget_marks (
    scope TEXT NOT NULL, user_id TEXT NOT NULL, at TEXT NOT NULL,
    PRIMARY KEY (scope, user_id)
) WITHOUT ROWID;
