-- When a fact was said: the time of the newest message whose words it holds (a merge's newest words are
-- what it says now), not when it was learned. Facts from before are filled from what is known: a source
-- message still in the buffer, else the time a Discord message id carries, else when it was learned.
-- Never later than when it was learned.
ALTER TABLE facts ADD COLUMN said_at TEXT;
UPDATE facts SET said_at = coalesce(
    (SELECT max(p.created_at) FROM fact_sources AS s JOIN pending_messages AS p ON p.message_id = s.message_id
        WHERE s.fact_id = facts.id AND s.confirms = 0),
    (SELECT max(strftime('%Y-%m-%dT%H:%M:%f', ((CAST(s.message_id AS INTEGER) >> 22) + 1420070400000) / 1000.0,
            'unixepoch') || '000Z')
        FROM fact_sources AS s
        WHERE s.fact_id = facts.id AND s.confirms = 0 AND length(s.message_id) BETWEEN 17 AND 19
            AND s.message_id NOT GLOB '*[^0-9]*'),
    recorded_at);
UPDATE facts SET said_at = recorded_at WHERE said_at > recorded_at;
