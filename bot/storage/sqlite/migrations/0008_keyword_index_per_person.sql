-- Keyword search reads only the searched person's words. `facts_fts` matched a stem as a prefix of
-- everyone's words ("soup*" over every fact in the file that has a word starting so), then kept the
-- person's: its cost grew with the whole file. `owner_words` indexes each active fact's folded words
-- glued to its person's token (bot/storage/sqlite/search.py), so a prefix expands only to that person's
-- words. Contentless and without positions: it holds no copy of the text (facts.text is the one).
-- `indexed_words` is a function of the migration runner (bot/storage/sqlite/schema.py): the folding and
-- the token are Python's, the same the store indexes new facts with. The facts in `facts_fts` are the
-- ones indexed now; its pages are zeroed as they are freed (secure_delete).
CREATE VIRTUAL TABLE owner_words USING fts5(words, content='', detail=none, columnsize=0);
INSERT INTO owner_words (owner_words, rank) VALUES ('secure-delete', 1);
CREATE VIRTUAL TABLE owner_words_terms USING fts5vocab(owner_words, 'row');
INSERT INTO owner_words (rowid, words)
    SELECT id, indexed_words(scope, user_id, text) FROM facts WHERE id IN (SELECT rowid FROM facts_fts)
    ORDER BY id;
DROP TABLE facts_fts
