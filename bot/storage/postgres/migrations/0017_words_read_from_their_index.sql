-- A person's words are read from the (scope, user_id) index alone. Facts are written in the order people
-- say them, so one person's `fact_words` rows lie on as many heap pages as they have facts, and reading
-- them took more of a recall than its vector search; the index keeps a person's entries side by side
-- on a few leaf pages, and with the fact id and words in them a search is an index-only scan (where
-- VACUUM, which `vacuum_deleted` runs after deletes and autovacuum after writes, has marked the pages
-- all-visible; elsewhere it reads the heap as before). A btree entry of a deleted row goes at the
-- VACUUM that removes the row, unlike a GIN key (postgres/search.py): the words leave no sooner or later
-- than the row's. 238 bytes a fact in bench.recall_scale's 1M build (docs/benchmarks.md).
CREATE INDEX fact_words_owner_words ON fact_words (scope, user_id) INCLUDE (fact_id, words);
DROP INDEX fact_words_owner;
