"""How SQLite finds a person's facts: sqlite-vec's cosine distance over float32 blobs, and FTS5.

`facts_fts` carries a hashed `owner` token per person (`owner_token`), so a keyword query is
`owner:"<token>" AND text:(terms)` and never sees anyone else's facts. Query words are quoted
(`keyword_query`): no FTS syntax from users. `secure-delete` is on, so a forgotten fact's words leave
the index. The ranking and the rest of the search are shared (bot/storage/sql/search.py).
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from bot.storage.keywords import search_terms
from bot.storage.sql.database import Connected


def vector_blob(vector: Sequence[float]) -> bytes:
    """float32 little-endian bytes, the layout sqlite-vec reads."""
    return array("f", vector).tobytes()


def owner_token(scope: str, user_id: str) -> str:
    """One FTS token per (scope, user): confines keyword search to one person whatever the ids contain."""
    return "o" + hashlib.blake2b(f"{scope}\x00{user_id}".encode(), digest_size=10).hexdigest()


def fts_query(terms: Sequence[str]) -> str:
    """An FTS5 OR-query of `terms`, each a quoted prefix."""
    return " OR ".join('"' + t.replace('"', '""') + '"*' for t in terms)


def keyword_query(text: str, *, max_terms: int = 12, ignore: Iterable[str] = ()) -> str | None:
    """The FTS5 query keyword search runs for `text` (None: no informative word)."""
    terms = search_terms(text, max_terms=max_terms, ignore=ignore)
    return fts_query(terms) if terms else None


class SqliteSearch(Connected):
    """The hooks of the shared SQL that SQLite fills: vectors as blobs, words in FTS5."""

    DISTANCE = "vec_distance_cosine(embedding, ?)"
    LIKE = "LIKE"  # ASCII case-insensitive in SQLite

    def _vector(self, vector: Sequence[float]) -> object:
        return vector_blob(vector)

    def _index_words(self, fact_id: int, scope: str, user_id: str, text: str) -> None:
        self.conn.execute(
            "INSERT INTO facts_fts (rowid, text, owner) VALUES (?, ?, ?)",
            (fact_id, text, owner_token(scope, user_id)),
        )

    def _unindex_words(self, fact_id: int) -> None:
        self.conn.execute("DELETE FROM facts_fts WHERE rowid = ?", (fact_id,))

    def _word_matches(self, scope: str, user_id: str, terms: Sequence[str]) -> tuple[str, Sequence[Any]]:
        return (
            "SELECT rowid FROM facts_fts WHERE facts_fts MATCH ?",
            (f'owner:"{owner_token(scope, user_id)}" AND text:({fts_query(terms)})',),
        )
