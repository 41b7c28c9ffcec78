-- A server's use per UTC day, counts only (no text, no user id): `what` names the figure ("messages",
-- "<purpose>_calls", "<purpose>_tokens_in", "<purpose>_tokens_out", "recall_ms_<bucket>", see
-- bot/memory/daily_use.py). Processes add their in-memory counts in batches (count = count + excluded).
CREATE TABLE use_per_day (
    scope text NOT NULL, day text NOT NULL, what text NOT NULL, count bigint NOT NULL,
    PRIMARY KEY (scope, day, what)
);
