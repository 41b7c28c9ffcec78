"""How PostgreSQL finds a person's facts: pgvector's cosine distance, and a tsvector per active fact.

Vector search is exact: `embedding <=> query ORDER BY ... LIMIT k` over the rows the (scope, user_id)
index gives, one person's only, so no approximate index (HNSW, IVFFlat) is needed, and none could
return fewer of a person's facts because other people's vectors were nearer. The vectors are kept in
their rows (migration `vectors_in_their_rows`), in half precision where pgvector has `halfvec`
(migration `half_precision_vectors`), and the query vector is sent in the column's binary format
(`Vector`, `HalfVector`) with no cast: PostgreSQL gives an untyped operand of `<=>` the other's type, so
the same statements serve either column.
Keyword search matches the same stems as SQLite's as prefixes (`'liv':* | 'osl':*`) in `fact_words`, a
tsvector of the fact's folded text under the 'simple' configuration (no language's stemming or stop
words: any language works), restricted to the person; BM25 in Python ranks the matches.

A recall's search of one person (`person_hits`) is one statement, one round trip: the vector pool, the
keyword matches, those facts' rows with their sources (a copy in each fact's row, kept in step with
`fact_sources` by triggers), and the person's count of active facts (BM25's N).

`fact_words` has no GIN index on purpose: a search reads one person's rows through the (scope, user_id)
index and matches their tsvectors there (a few hundred, cheap), and a GIN index keeps a word as a key
after its last fact is deleted (until a REINDEX), so a forgotten fact's words would stay in it. The
(scope, user_id) index holds each row's fact id and words (migration `words_read_from_their_index`):
a person's rows lie on as many heap pages as they have facts, their index entries side by side, so
the words are read with an index-only scan; a btree entry goes at the VACUUM that removes its row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from bot.memory.models import Fact
from bot.memory.text import fold
from bot.storage.keywords import search_terms
from bot.storage.postgres.connection import HalfVector, Vector
from bot.storage.sql.database import Connected, SourceValues
from bot.storage.sql.rows import FACT_COLUMNS, fact_from, select, sources_in, sources_json
from bot.storage.sql.search import best_matches


def ts_query(terms: Sequence[str]) -> str:
    """A tsquery matching any of `terms` as a prefix; each is quoted, so no query syntax gets through."""
    quoted = ("'" + t.replace("\\", "\\\\").replace("'", "''") + "':*" for t in terms)
    return " | ".join(quoted)


# The question's tsquery, parsed once per statement. A prepared statement runs a generic plan, where a
# function of a parameter is not folded into a constant: `words @@ to_tsquery('simple', $n)` parsed the
# query again for each of the person's rows, half the statement's time at a million facts. As an
# uncorrelated subquery it is an InitPlan, evaluated once.
QUERY_ONCE = "(SELECT to_tsquery('simple', ?))"

# A vector column's type (pgvector's name) -> the parameter that is sent in its binary format.
PARAMETERS: dict[str, type[Vector]] = {"vector": Vector, "halfvec": HalfVector}


class PostgresSearch(Connected):
    """The hooks of the shared SQL that PostgreSQL fills: pgvector vectors, words in a tsvector."""

    DISTANCE = "embedding <=> ?"
    LIKE = "ILIKE"  # LIKE is case-sensitive in PostgreSQL; SQLite's finds "tea" in "Tea"
    VECTOR_OWNER = True
    PERSON_VECTORS = "fact_vectors WHERE scope = ? AND user_id = ?"
    # The type of every vector column (`Store.migrate` reads it): float32 `vector`, or `halfvec`.
    vector_type = "vector"

    def _vector(self, vector: Sequence[float]) -> Vector:
        return PARAMETERS[self.vector_type](vector)

    def _index_words(self, fact_id: int, scope: str, user_id: str, text: str) -> None:
        self.conn.execute(
            "INSERT INTO fact_words (fact_id, scope, user_id, words) VALUES (?, ?, ?, to_tsvector('simple', ?))",
            (fact_id, scope, user_id, fold(text)),
        )

    def _source_copies(self, sources: Sequence[SourceValues]) -> dict[str, Any]:
        """A new fact's row holds its sources as the triggers would write them, so they find nothing to
        change and the row gets no second version (`sources_json`)."""
        return {"sources": sources_json(sources)}

    def _unindex_words(self, fact_id: int) -> None:
        self.conn.execute("DELETE FROM fact_words WHERE fact_id = ?", (fact_id,))

    def _word_matches(self, scope: str, user_id: str, terms: Sequence[str]) -> tuple[str, Sequence[Any]]:
        return (
            f"SELECT fact_id FROM fact_words WHERE scope = ? AND user_id = ? AND words @@ {QUERY_ONCE}",
            (scope, user_id, ts_query(terms)),
        )

    def person_hits(
        self,
        scope: str,
        user_id: str,
        vector: Sequence[float] | None,
        text: str,
        *,
        pool: int,
        max_distance: float | None,
        ignore: Iterable[str] = (),
    ) -> tuple[list[tuple[Fact, float]], list[Fact]]:
        """`knn` and `keyword_search` of one person, as the shared code answers them, in one statement."""
        terms = search_terms(text, ignore=ignore) if text else []
        if vector is None and not terms:
            return [], []
        sql, params = hits_statement(
            scope, user_id, None if vector is None else self._vector(vector), terms, pool, max_distance
        )
        found = select(self.conn, sql, params)  # a row per fact
        near = sorted((r for r in found if r["distance"] is not None), key=lambda r: (r["distance"], r["id"]))
        matched = [r for r in found if r["matched"]]
        best = best_matches(matched, terms, found[0]["total"] if found else 0, pool)
        kept = {r["id"]: r for r in [*near, *best]}  # not the matches left out; one build per fact
        facts = {fid: fact_from(r, sources_in(r["sources"])) for fid, r in kept.items()}
        return [(facts[r["id"]], r["distance"]) for r in near], [facts[r["id"]] for r in best]


def hits_statement(
    scope: str,
    user_id: str,
    vector: Vector | None,
    terms: Sequence[str],
    pool: int,
    max_distance: float | None,
) -> tuple[str, list[Any]]:
    """The one statement of `person_hits` (`hits_sql`) and its parameters."""
    params: list[Any] = []
    if vector is not None:
        params += [vector, scope, user_id, pool, *([] if max_distance is None else [max_distance])]
    if terms:
        params += [scope, user_id, ts_query(terms), scope, user_id]
    return hits_sql(vector is not None, bool(terms), max_distance is not None), params


@cache
def hits_sql(near: bool, keywords: bool, within: bool) -> str:
    """`person_hits`'s statement, written once for each of its shapes (with a vector or not, with terms
    or not, with a distance cut or not): a row per fact found, with its sources as its row holds them.

    `distance`: the fact is in the vector pool (its `pool` nearest, within `max_distance`); `matched`: an
    active fact holding one of the `terms`; `total`: the person's active facts (0 without terms).
    `sources`: the copy of the fact's sources that triggers keep in its row (migration
    `sources_in_their_fact`): a search that matched 40 facts spent a quarter of its time looking each
    one's sources up in `fact_sources`, as a join or as aggregates (docs/benchmarks.md, "PostgreSQL:
    where the time goes").
    """
    parts: list[str] = []
    if near:
        parts.append(
            "near AS (SELECT fact_id, distance FROM (SELECT fact_id, embedding <=> ? AS distance "
            "FROM fact_vectors WHERE scope = ? AND user_id = ? ORDER BY distance, fact_id LIMIT ?) AS n"
            f"{' WHERE distance <= ?' if within else ''})"
        )
    if keywords:
        parts.append(
            "matched AS (SELECT fact_id FROM fact_words WHERE scope = ? AND user_id = ? "
            f"AND words @@ {QUERY_ONCE})"
        )
    if near and keywords:
        hits = (
            "SELECT coalesce(n.fact_id, m.fact_id) AS fact_id, n.distance, m.fact_id IS NOT NULL AS matched "
            "FROM near AS n FULL JOIN matched AS m ON m.fact_id = n.fact_id"
        )
    elif near:
        hits = "SELECT fact_id, distance, false AS matched FROM near"
    else:
        hits = "SELECT fact_id, NULL::double precision AS distance, true AS matched FROM matched"
    total = "(SELECT count(*) FROM fact_vectors WHERE scope = ? AND user_id = ?)" if keywords else "0"
    return (
        f"WITH {', '.join(parts)}, hits AS ({hits}) "
        f"SELECT {FACT_COLUMNS}, f.sources, h.distance, h.matched AND f.status = 'active' AS matched, "
        f"{total} AS total FROM hits AS h JOIN facts AS f ON f.id = h.fact_id"
    )
