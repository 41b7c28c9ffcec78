"""Keyword search without a database: which words of a question to look for, and BM25 over the matches.

Both backends search a person's facts for the same stems (`search_terms`), each in its own text index
(SQLite's FTS5, PostgreSQL's tsvector), and order what matched with the same `bm25_order`, so keyword
recall ranks alike on either.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from bot.memory.text import STOPWORDS, fold, stem

WORD = re.compile(r"\w+", re.UNICODE)


def search_terms(text: str, *, max_terms: int = 12, ignore: Iterable[str] = ()) -> list[str]:
    """The stems of the informative words of `text`, each to be matched as a prefix, in order.

    Stop words, words shorter than 3 characters and long numbers are left out, and so are `ignore`
    (words that say nothing within the searched facts: the person's own name, in all of them).
    """
    skip = {fold(w) for w in ignore}
    terms: list[str] = []
    for word in WORD.findall(text.lower()):
        if len(word) < 3 or word in STOPWORDS or (word.isdigit() and len(word) > 8):
            continue
        folded = fold(word)
        if folded in skip or stem(folded) in terms:
            continue
        terms.append(stem(folded))
        if len(terms) >= max_terms:
            break
    return terms


def bm25_order(texts: Sequence[str], terms: Sequence[str], total: int) -> list[int]:
    """Indexes of `texts` by Okapi BM25 (k1 1.2, b 0.75) over a corpus of `total` documents, best first.

    The corpus is one person's facts: document frequencies come from the matched texts (a term's other
    occurrences in that person's facts would have matched too), so nobody else's facts are read.
    """
    # Each text's words are read once (`WORD`, as `search_terms` reads a question), and a word's terms are
    # worked out once per distinct word, since one may start with two terms ("liv" and "live"). No
    # pattern is built from the terms: compiling one took longer than the whole ranking, and every
    # question brings new terms. A term holding a character that is not a word's ("½" folds to "1⁄2")
    # starts no word: it counts 0. A term's document frequency is how many texts count it at all.
    prefixes = tuple(terms)
    of_word: dict[str, list[int]] = {}
    lengths, counts = [], []
    for text in texts:
        found = WORD.findall(fold(text))
        row = [0] * len(terms)
        for word in found:
            hits = of_word.get(word)
            if hits is None:
                starts = word.startswith(prefixes)
                hits = of_word[word] = (
                    [j for j, t in enumerate(terms) if word.startswith(t)] if starts else []
                )
            for j in hits:
                row[j] += 1
        lengths.append(len(found))
        counts.append(row)
    average = sum(lengths) / len(lengths) or 1.0
    df = [sum(1 for row in counts if row[j]) for j in range(len(terms))]
    idf = [math.log(1 + (total - d + 0.5) / (d + 0.5)) for d in df]
    scores = []
    for i, (length, row) in enumerate(zip(lengths, counts, strict=True)):
        norm = 1.2 * (0.25 + 0.75 * length / average)
        score = sum(idf[j] * tf * 2.2 / (tf + norm) for j, tf in enumerate(row) if tf)
        scores.append((-score, i))
    scores.sort()
    return [i for _, i in scores]
