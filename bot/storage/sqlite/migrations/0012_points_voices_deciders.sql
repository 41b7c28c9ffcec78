-- Shared memory point by point. An episode's points are rows of their own, each with the messages it
-- was made from (and their authors), so a deleted or edited message, an author's erasure or an admin's
-- correction takes out only the points that came from those messages and the episode keeps the others.
-- An episode from before is one point holding its whole summary, made from all its messages.
-- A buffered message records whether its author could decide for the server in its channel (Manage
-- Server or Manage Messages there, or the moderator role an admin named), and a community fact whether
-- it speaks for the server (made only from such messages) or for its authors.
-- A 'duplicate', 'merged' or 'invalidated' audit event no longer holds a fact's words; those from
-- before are cleared.
CREATE TABLE episode_points (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX episode_points_episode ON episode_points (episode_id, position);
CREATE TABLE point_sources (
    point_id INTEGER NOT NULL REFERENCES episode_points(id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    author_id TEXT NOT NULL,
    PRIMARY KEY (point_id, message_id)
) WITHOUT ROWID;
CREATE INDEX point_sources_message ON point_sources (message_id);
CREATE INDEX point_sources_author ON point_sources (author_id);
INSERT INTO episode_points (episode_id, position, text)
    SELECT id, 0, CASE WHEN substr(summary, 1, 2) = '- ' THEN substr(summary, 3) ELSE summary END
    FROM episodes ORDER BY id;
INSERT INTO point_sources (point_id, message_id, author_id)
    SELECT p.id, s.message_id, s.author_id FROM episode_points AS p, episode_sources AS s
    WHERE s.episode_id = p.episode_id;
ALTER TABLE pending_messages ADD COLUMN decides INTEGER NOT NULL DEFAULT 0;
ALTER TABLE guild_settings ADD COLUMN moderator_role_id TEXT;
-- When the bot was removed from a server (NULL: it is there): its memory goes after a grace period.
ALTER TABLE guild_settings ADD COLUMN removed_at TEXT;
ALTER TABLE facts ADD COLUMN speaks_for_server INTEGER NOT NULL DEFAULT 0;
UPDATE fact_events SET detail = json_remove(detail, '$.text')
    WHERE kind IN ('duplicate', 'merged', 'invalidated') AND json_extract(detail, '$.text') IS NOT NULL;
-- An episode that lost points keeps its vector until the next flush embeds its rebuilt summary.
CREATE TABLE stale_episodes (episode_id INTEGER PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE);
