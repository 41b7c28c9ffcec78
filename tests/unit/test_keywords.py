"""Folding and BM25 without a database: what both backends' keyword search rank with."""

from __future__ import annotations

import math
import random
import re
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


def bm25_by_definition(texts: list[str], terms: list[str], total: int) -> list[int]:
    """BM25 as its docstring says, word by word: a term counts once in each word it starts."""
    words = [re.findall(r"\w+", fold(t)) for t in texts]
    counts = [[sum(1 for w in ws if w.startswith(t)) for t in terms] for ws in words]
    average = sum(map(len, words)) / len(words) or 1.0
    df = [sum(1 for row in counts if row[j]) for j in range(len(terms))]
    idf = [math.log(1 + (total - d + 0.5) / (d + 0.5)) for d in df]
    scores = []
    for i, (ws, row) in enumerate(zip(words, counts, strict=True)):
        norm = 1.2 * (0.25 + 0.75 * len(ws) / average)
        scores.append((-sum(idf[j] * tf * 2.2 / (tf + norm) for j, tf in enumerate(row) if tf), i))
    return [i for _, i in sorted(scores)]


def test_bm25_counts_as_its_definition_on_random_texts_of_odd_words() -> None:
    """BM25's counting (each distinct word's terms worked out once) must give what reading word by word
    gives: accents, "½", underscores, hyphens, digits, a term inside a word ("ive" in "lives" counts
    nothing), a term of two words' letters ("ab cd" from a folded ligature), repeated words."""
    rng = random.Random(20261129)
    vocab = "liv living lives live oslo café crème brûlée ½ x½y ab-cd ef_gh 12345 straße über naïve porto ive tea teas".split()
    odd_terms = ["liv", "live", "1⁄2", "caf", "ef_g", "x", "ive", "ab cd", "tea"]
    for _ in range(3000):
        texts = [
            " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 8))
        ]
        terms = rng.sample(odd_terms, rng.randint(1, 4))
        total = rng.randint(len(texts), 40)
        assert bm25_order(texts, terms, total) == bm25_by_definition(texts, terms, total), (texts, terms)
