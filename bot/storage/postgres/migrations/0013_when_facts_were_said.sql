-- When a fact was said: the time of the newest message whose words it holds (a merge's newest words are
-- what it says now), not when it was learned. Facts from before are filled from what is known: a source
-- message still in the buffer, else the time a Discord message id carries, else when it was learned.
-- Never later than when it was learned.
ALTER TABLE facts ADD COLUMN said_at text;
UPDATE facts AS f SET said_at = coalesce(
    (SELECT max(p.created_at) FROM fact_sources AS s JOIN pending_messages AS p ON p.message_id = s.message_id
        WHERE s.fact_id = f.id AND s.confirms = 0),
    (SELECT max(to_char(to_timestamp((div(s.message_id::numeric, 4194304) + 1420070400000) / 1000.0)
            AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
        FROM fact_sources AS s
        WHERE s.fact_id = f.id AND s.confirms = 0 AND s.message_id ~ '^[0-9]{17,19}$'),
    f.recorded_at);
UPDATE facts SET said_at = recorded_at WHERE said_at > recorded_at;
