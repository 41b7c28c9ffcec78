"""Searching one person's facts: exact vector KNN, keyword matches ranked by BM25, and lookups.

Every search is confined to one (scope, user): vectors live in a plain table indexed on them, and
`facts_fts` carries a hashed `owner` token per person (`owner_token`), so other people's facts can
neither slow a search down nor crowd a person's own facts out. The pure helpers below build the
FTS5 query (`keyword_query`), read its words back (`keyword_terms`) and rank by BM25 (`bm25_order`).
"""

from __future__ import annotations

import hashlib
import math
import re
from array import array
from collections.abc import Iterable, Sequence

from bot.memory.models import Fact
from bot.memory.text import STOPWORDS, fold, stem
from bot.storage.sqlite.connection import Connected
from bot.storage.sqlite.rows import FACT_COLUMNS, fact_from, facts_from, scalar, select

_WORD = re.compile(r"\w+", re.UNICODE)
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')


def vector_blob(vector: Sequence[float]) -> bytes:
    """float32 little-endian bytes, the layout sqlite-vec reads."""
    return array("f", vector).tobytes()


def owner_token(scope: str, user_id: str) -> str:
    """One FTS token per (scope, user): confines keyword search to one person whatever the ids contain."""
    return "o" + hashlib.blake2b(f"{scope}\x00{user_id}".encode(), digest_size=10).hexdigest()


def keyword_query(text: str, *, max_terms: int = 12, ignore: Iterable[str] = ()) -> str | None:
    """An FTS5 OR-query of the stems of the informative words of `text`, each a quoted prefix, or None.

    `ignore`: words that say nothing within the searched facts (the person's own name, in all of them).
    """
    skip = {fold(w) for w in ignore}
    terms: list[str] = []
    for word in _WORD.findall(text.lower()):
        if len(word) < 3 or word in STOPWORDS or (word.isdigit() and len(word) > 8):
            continue
        folded = fold(word)
        if folded in skip or stem(folded) in terms:
            continue
        terms.append(stem(folded))
        if len(terms) >= max_terms:
            break
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"*' for t in terms)


def keyword_terms(query: str) -> list[str]:
    """The words of a `keyword_query` result, unquoted and folded."""
    return [fold(t.replace('""', '"')) for t in _QUOTED.findall(query)]


def bm25_order(texts: Sequence[str], terms: Sequence[str], total: int) -> list[int]:
    """Indexes of `texts` by Okapi BM25 (k1 1.2, b 0.75) over a corpus of `total` documents, best first.

    The corpus is one person's facts: document frequencies come from the matched texts (a term's other
    occurrences in that person's facts would have matched too), so nobody else's facts are read.
    """
    tokens = [_WORD.findall(fold(t)) for t in texts]
    average = sum(len(t) for t in tokens) / len(tokens) or 1.0
    df = {w: sum(any(x.startswith(w) for x in t) for t in tokens) for w in terms}
    scores = []
    for i, toks in enumerate(tokens):
        score = 0.0
        for w in terms:
            tf = sum(t.startswith(w) for t in toks)
            if tf:
                idf = math.log(1 + (total - df[w] + 0.5) / (df[w] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(toks) / average))
        scores.append((-score, i))
    scores.sort()
    return [i for _, i in scores]


class Search(Connected):
    """Finding facts: what recall, consolidation and autocomplete read."""

    def knn(
        self, scope: str, user_id: str, vector: Sequence[float], k: int, max_distance: float | None = None
    ) -> list[tuple[Fact, float]]:
        """Exact cosine KNN over one person's active facts, nearest first."""
        rows = select(
            self.conn,
            f"SELECT {FACT_COLUMNS}, n.d AS distance FROM ("
            "  SELECT fact_id, vec_distance_cosine(embedding, ?) AS d FROM fact_vectors"
            "  WHERE scope = ? AND user_id = ? ORDER BY d LIMIT ?"
            ") AS n JOIN facts AS f ON f.id = n.fact_id ORDER BY n.d, f.id",
            (vector_blob(vector), scope, user_id, k),
        )
        near = [r for r in rows if max_distance is None or r["distance"] <= max_distance]
        return list(zip(facts_from(self.conn, near), [r["distance"] for r in near], strict=True))

    def keyword_search(
        self, scope: str, user_id: str, text: str, k: int, *, ignore: Iterable[str] = ()
    ) -> list[Fact]:
        """Active facts of one person matching informative words of `text`, best BM25 first.

        FTS5's own `rank` looks up every query term's document count in the whole index, so its cost grows
        with everyone's facts (9.7 ms p99 at a million). Matching without `rank` touches only the person's
        rows; BM25 over the person's own active facts then orders them (3.0 ms p99 at 1M facts, bench/recall_scale.py).
        """
        terms = keyword_query(text, ignore=ignore)
        if terms is None:
            return []
        rows = select(
            self.conn,
            f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.id IN ("
            "  SELECT rowid FROM facts_fts WHERE facts_fts MATCH ?"
            ") AND f.status = 'active'",
            (f'owner:"{owner_token(scope, user_id)}" AND text:({terms})',),
        )
        if not rows:
            return []
        rows.sort(key=lambda r: r["id"])  # equal scores: oldest fact first, whatever order SQLite chose
        total = scalar(
            self.conn, "SELECT count(*) FROM fact_vectors WHERE scope = ? AND user_id = ?", (scope, user_id)
        )
        ranked = [
            rows[i]
            for i in bm25_order([r["text"] for r in rows], keyword_terms(terms), max(total, len(rows)))
        ]
        return facts_from(self.conn, ranked[:k])

    def facts_by_text(
        self, scope: str, user_id: str, texts: Iterable[str], *, all_statuses: bool = False
    ) -> dict[str, Fact]:
        """Facts of one person whose text equals one of `texts` exactly (case-folded).

        Active ones by default (someone saying an old fact again makes it news); `all_statuses` for an
        import, where a line matching a superseded fact is history, not news.
        """
        wanted = {t.casefold() for t in texts}
        status_filter = "" if all_statuses else "AND status = 'active'"
        rows = select(
            self.conn,
            f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE scope = ? AND user_id = ? {status_filter}",
            (scope, user_id),
        )
        return {r["text"].casefold(): fact_from(r) for r in rows if r["text"].casefold() in wanted}

    def search_own_facts(self, scope: str, user_id: str, prefix: str, limit: int = 25) -> list[Fact]:
        """Active facts whose text or id contains `prefix`, for autocomplete ("#12" as shown finds fact 12)."""
        typed = prefix.strip()
        typed = typed[1:] if typed.startswith("#") and typed[1:].isdigit() else typed
        needle = "%" + typed.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = select(
            self.conn,
            f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE scope = ? AND user_id = ? AND status = 'active' "
            "AND (text LIKE ? ESCAPE '\\' OR CAST(id AS TEXT) LIKE ? ESCAPE '\\') "
            "ORDER BY recorded_at DESC, id DESC LIMIT ?",
            (scope, user_id, needle, needle, limit),
        )
        return [fact_from(r) for r in rows]
