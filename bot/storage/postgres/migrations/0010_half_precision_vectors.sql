-- Vectors in half precision where the server's pgvector has `halfvec` (0.7 and later): 2 bytes a dimension
-- instead of 4, so a 768-dimension vector takes 1,536 bytes and five of fact_vectors' rows fit an 8 KB
-- page instead of two. Cosine distances move by about 1e-3 (docs/postgresql.md). Below pgvector 0.7
-- nothing changes: the vectors stay float32 in their rows (migration 9).
-- The three vector columns change together: facts and episodes share the store's one distance (a query
-- vector is passed in the column's own binary format, bot/storage/postgres/connection.py), a superseded
-- fact's vector moves to facts.archived_embedding and back into fact_vectors as it is, and an archived
-- vector that was half precision gains nothing from four bytes a dimension. No fixed width, as before, so
-- a re-embedding may write another model's width in place.
-- The version is compared as numbers (0.10 is after 0.7). Changing a column's type rewrites its table in
-- its physical order; the rewritten tables get their statistics back at once.
DO $$
BEGIN
    IF (regexp_match((SELECT extversion FROM pg_extension WHERE extname = 'vector'), '^(\d+)\.(\d+)'))::int[]
            < ARRAY[0, 7] THEN
        RETURN;
    END IF;
    ALTER TABLE fact_vectors ALTER COLUMN embedding TYPE halfvec USING embedding::halfvec;
    ALTER TABLE facts ALTER COLUMN archived_embedding TYPE halfvec USING archived_embedding::halfvec;
    ALTER TABLE episodes ALTER COLUMN embedding TYPE halfvec USING embedding::halfvec;
    ANALYZE fact_vectors, facts, episodes;
END
$$;
