-- A person's vectors are read from their rows, not from TOAST. pgvector stores a vector out of line (in
-- the TOAST table) once a row passes about 2 kB, so every search read each vector of the person twice
-- over (the row, then its TOAST chunks). With the table's toast target at its maximum a vector stays in
-- its row as long as the row fits a page (768 float32 dimensions: two rows a page), and only a wider one
-- (over about 2,000 dimensions) goes out of line; `SET STORAGE PLAIN` would instead refuse such a row.
-- The rows already out of line come back in by rewriting the table in its physical order (the cast
-- through real[] is exact; a plain `SET` would keep the old TOAST pointers), and the rewritten column
-- gets its statistics back at once.
ALTER TABLE fact_vectors SET (toast_tuple_target = 8160);
ALTER TABLE fact_vectors ALTER COLUMN embedding TYPE vector USING embedding::real[]::vector;
ANALYZE fact_vectors;
