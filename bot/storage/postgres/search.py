"""How PostgreSQL finds a person's facts: pgvector's cosine distance, and a tsvector per active fact.

Vector search is exact: `embedding <=> query ORDER BY ... LIMIT k` over the rows the (scope, user_id)
index gives, one person's only, so no approximate index (HNSW, IVFFlat) is needed, and none could
return fewer of a person's facts because other people's vectors were nearer. Keyword search matches
the same stems as SQLite's as prefixes (`'liv':* | 'osl':*`) in `fact_words`, a tsvector of the fact's
folded text under the 'simple' configuration (no language's stemming or stop words: any language
works), restricted to the person; the shared code ranks the matches by BM25.

`fact_words` has no GIN index on purpose: a search reads one person's rows through the (scope, user_id)
index and matches their tsvectors there (a few hundred, cheap), and a GIN index keeps a word as a key
after its last fact is deleted (until a REINDEX), so a forgotten fact's words would stay in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.memory.text import fold
from bot.storage.sql.database import Connected


def vector_text(vector: Sequence[float]) -> str:
    """A vector as pgvector's text input, `[0.1,0.2,...]`."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def ts_query(terms: Sequence[str]) -> str:
    """A tsquery matching any of `terms` as a prefix; each is quoted, so no query syntax gets through."""
    quoted = ("'" + t.replace("\\", "\\\\").replace("'", "''") + "':*" for t in terms)
    return " | ".join(quoted)


class PostgresSearch(Connected):
    """The hooks of the shared SQL that PostgreSQL fills: pgvector vectors, words in a tsvector."""

    DISTANCE = "embedding <=> ?::vector"
    LIKE = "ILIKE"  # LIKE is case-sensitive in PostgreSQL; SQLite's finds "tea" in "Tea"

    def _vector(self, vector: Sequence[float]) -> object:
        return vector_text(vector)

    def _index_words(self, fact_id: int, scope: str, user_id: str, text: str) -> None:
        self.conn.execute(
            "INSERT INTO fact_words (fact_id, scope, user_id, words) VALUES (?, ?, ?, to_tsvector('simple', ?))",
            (fact_id, scope, user_id, fold(text)),
        )

    def _unindex_words(self, fact_id: int) -> None:
        self.conn.execute("DELETE FROM fact_words WHERE fact_id = ?", (fact_id,))

    def _word_matches(self, scope: str, user_id: str, terms: Sequence[str]) -> tuple[str, Sequence[Any]]:
        return (
            "SELECT fact_id FROM fact_words WHERE scope = ? AND user_id = ? "
            "AND words @@ to_tsquery('simple', ?)",
            (scope, user_id, ts_query(terms)),
        )
