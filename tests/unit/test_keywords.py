"""Folding and BM25 without a database: what both backends' keyword search rank with."""

from __future__ import annotations

import unicodedata

import pytest

from bot.memory.text import fold
from bot.storage.keywords import bm25_order


@pytest.mark.parametrize("text", ["Alice LIVES in Oslo", "Zürich café", "ÇA VA", "ﬁne ½", "straße", ""])
def test_fold_is_lower_case_without_diacritics_whether_or_not_the_text_is_ascii(text: str) -> None:
    decomposed = unicodedata.normalize("NFKD", text.lower())
    assert fold(text) == "".join(c for c in decomposed if not unicodedata.combining(c))


def test_bm25_counts_a_term_once_per_word_it_starts_and_ranks_rare_terms_higher() -> None:
    texts = ["Alice likes tea", "Alice lives in Zürich", "tea and teas in Zurich", "Alice hikes"]
    # "tea" is in two texts, "zurich" (folded) in two: the text with both, twice "tea", comes first;
    # among one-term texts the shorter one; a text with neither comes last.
    assert bm25_order(texts, ["tea", "zurich"], 10) == [2, 0, 1, 3]


def test_bm25_reads_words_as_whole_words_whatever_the_terms_hold() -> None:
    """A term counts in the words it starts, never across a character that is not a word's: "½"
    folds to "1⁄2", which starts no word; "liv" and "live" both count in "lives"; the length of a
    text is its number of words."""
    texts = ["Alice buys 1⁄2kg flour", "Alice buys flour"]
    # The "1⁄2" term matches nothing: the shorter text ranks first on "flour" alone.
    assert bm25_order(texts, ["1⁄2kg", "flour"], 10) == [1, 0]
    assert bm25_order(["she lives", "she lived there long ago"], ["liv", "live"], 10) == [0, 1]
    assert bm25_order(["foo_bar baz", "foo bar"], ["foo_b"], 10) == [0, 1]
