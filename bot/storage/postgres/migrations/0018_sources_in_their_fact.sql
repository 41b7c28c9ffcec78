-- Each fact's row holds its sources (`facts.sources`): a recall reads a person's facts with them from one
-- row per fact, instead of a lookup in `fact_sources` for each, which took a quarter of a search that
-- matched many facts (docs/postgresql.md). `fact_sources` stays the record every write changes and every
-- other read uses; triggers keep the copy in step, in the same statement's transaction, whichever
-- statement writes it (the store's, a migration's, a COPY): JSON arrays of [message_id, confirms,
-- channel_id, parent_channel_id, private_thread, author_id] in message order, as `sources_of` reads
-- them; NULL for a fact without sources. A source deleted leaves the row's former version until VACUUM,
-- as the deleted `fact_sources` row does, and the same VACUUM reclaims both (store.py, TEXT_TABLES).
ALTER TABLE facts ADD COLUMN sources text;
-- Planned for each call (force_custom_plan): a plan kept from when the tables were small reads them whole,
-- and a load into a new database (an import, a copy) grows them by thousands of rows in one transaction.
CREATE FUNCTION facts_take_their_sources() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    fact bigint;
    written text;
BEGIN
    FOR fact IN SELECT DISTINCT fact_id FROM changed LOOP
        SELECT json_agg(json_build_array(message_id, confirms, channel_id, parent_channel_id,
                                         private_thread, author_id) ORDER BY message_id)::text
            INTO written FROM fact_sources WHERE fact_id = fact;
        UPDATE facts SET sources = written WHERE id = fact AND sources IS DISTINCT FROM written;
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER sources_added AFTER INSERT ON fact_sources
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION facts_take_their_sources();
CREATE TRIGGER sources_removed AFTER DELETE ON fact_sources
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION facts_take_their_sources();
-- An update, which no statement makes today, fires both: the facts its rows reach and those they left.
CREATE TRIGGER sources_changed AFTER UPDATE ON fact_sources
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION facts_take_their_sources();
CREATE TRIGGER sources_moved AFTER UPDATE ON fact_sources
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION facts_take_their_sources();
UPDATE facts AS f SET sources = n.sources
FROM (
    SELECT fact_id, json_agg(json_build_array(message_id, confirms, channel_id, parent_channel_id,
                                              private_thread, author_id) ORDER BY message_id)::text AS sources
    FROM fact_sources GROUP BY fact_id
) AS n
WHERE f.id = n.fact_id;
