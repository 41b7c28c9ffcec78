-- A search reads one person's rows in fewer pages.
-- Vectors in their rows: pgvector stores a vector out of line (in the TOAST table) once a row passes
-- about 2 kB, so every search read each vector of the person twice over (the row, then its TOAST
-- chunks). With the table's toast target at its maximum a vector stays in its row as long as the row
-- fits a page (768 float32 dimensions: two rows a page), and only a wider one (over about 2,000
-- dimensions) goes out of line; `SET STORAGE PLAIN` would instead refuse such a row. The rows already
-- out of line come back in by rewriting the table in its physical order (the cast through real[] is
-- exact; a plain `SET` would keep the old TOAST pointers), and the rewritten column gets its statistics
-- back at once.
ALTER TABLE fact_vectors SET (toast_tuple_target = 8160);
ALTER TABLE fact_vectors ALTER COLUMN embedding TYPE vector USING embedding::real[]::vector;
ANALYZE fact_vectors;
-- Words in the owner index: a person's tsvectors are read from the few index pages that list them
-- (an index-only scan) instead of one table page per fact. Like a table row, a deleted fact's entry
-- is gone for every query at once and leaves the index at the next VACUUM.
CREATE INDEX fact_words_owner_words ON fact_words (scope, user_id) INCLUDE (words);
DROP INDEX fact_words_owner;
ALTER INDEX fact_words_owner_words RENAME TO fact_words_owner;
