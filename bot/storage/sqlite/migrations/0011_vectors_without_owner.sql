-- A fact's vector row holds its fact's id and its vector, nothing else: a person's vectors are found
-- through their facts (facts_owner), and 21 rows of 3 KiB fill a 64 KiB page. Rebuilt rather than
-- altered, so that SQLite before 3.35 (no DROP COLUMN) migrates too.
CREATE TABLE fact_vectors_slim (
    fact_id INTEGER PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE,
    embedding BLOB NOT NULL
);
INSERT INTO fact_vectors_slim (fact_id, embedding) SELECT fact_id, embedding FROM fact_vectors;
DROP TABLE fact_vectors;
ALTER TABLE fact_vectors_slim RENAME TO fact_vectors;
