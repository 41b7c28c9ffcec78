"""Searching one person's facts: exact vector KNN, keyword matches ranked by BM25, and lookups.

Every search is confined to one (scope, user): vectors live in a plain table indexed on them, searched
exactly (`DISTANCE ... ORDER BY ... LIMIT`, no approximate index), and the backend's text index answers
only for one person (`_word_matches`), so other people's facts can neither slow a search down nor crowd
a person's own facts out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.memory.models import Fact
from bot.storage.keywords import bm25_order, search_terms
from bot.storage.sql.database import Connected, Row
from bot.storage.sql.rows import FACT_COLUMNS, fact_from, facts_from, select, sources_of


def best_matches(rows: Sequence[Row], terms: Sequence[str], total: int, k: int) -> list[Row]:
    """The `k` rows (of FACT_COLUMNS) whose text best matches `terms` by BM25 over a person's `total` active
    facts; equal scores, oldest fact first, whatever order the database returned them in."""
    if not rows:
        return []
    by_id = sorted(rows, key=lambda r: r["id"])
    order = bm25_order([r["text"] for r in by_id], terms, max(total, len(by_id)))
    return [by_id[i] for i in order[:k]]


class Search(Connected):
    """Finding facts: what recall, consolidation and autocomplete read."""

    def knn(
        self, scope: str, user_id: str, vector: Sequence[float], k: int, max_distance: float | None = None
    ) -> list[tuple[Fact, float]]:
        """Exact cosine KNN over one person's active facts, nearest first."""
        near = self._near_rows(scope, user_id, vector, k, max_distance)
        return list(zip(facts_from(self.conn, near), [r["distance"] for r in near], strict=True))

    def keyword_search(
        self, scope: str, user_id: str, text: str, k: int, *, ignore: Iterable[str] = ()
    ) -> list[Fact]:
        """Active facts of one person matching informative words of `text`, best BM25 first.

        A text index's own ranking (FTS5's `rank`) looks up every query term's document count in the whole
        index, so its cost grows with everyone's facts (9.7 ms p99 at a million). Matching without it
        touches only the person's rows; BM25 over the person's own active facts then orders them.
        """
        terms = search_terms(text, ignore=ignore)
        return facts_from(self.conn, self._best_rows(scope, user_id, terms, k))

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
        """What a recall reads for one person: `knn` (pool, max_distance) and `keyword_search` (pool).

        No vector, no vector hits; no text, no keyword hits. The sources of both lists' facts are read
        in one query, once per fact. A backend may answer both at once.
        """
        near = self._near_rows(scope, user_id, vector, pool, max_distance) if vector is not None else []
        terms = search_terms(text, ignore=ignore) if text else []
        best = self._best_rows(scope, user_id, terms, pool)
        rows = {r["id"]: r for r in [*near, *best]}  # a fact in both lists is read and built once
        sources = sources_of(self.conn, list(rows)) if rows else {}
        facts = {fid: fact_from(r, sources.get(fid, ())) for fid, r in rows.items()}
        return [(facts[r["id"]], r["distance"]) for r in near], [facts[r["id"]] for r in best]

    def _near_rows(
        self, scope: str, user_id: str, vector: Sequence[float], k: int, max_distance: float | None
    ) -> list[Row]:
        """Rows of FACT_COLUMNS and `distance` of the person's `k` nearest facts within `max_distance`."""
        rows = select(
            self.conn,
            f"SELECT {FACT_COLUMNS}, n.d AS distance FROM ("
            f"  SELECT fact_id, {self.DISTANCE} AS d FROM {self.PERSON_VECTORS} ORDER BY d LIMIT ?"
            ") AS n JOIN facts AS f ON f.id = n.fact_id ORDER BY n.d, f.id",
            (self._vector(vector), scope, user_id, k),
        )
        return [r for r in rows if max_distance is None or r["distance"] <= max_distance]

    def _best_rows(self, scope: str, user_id: str, terms: Sequence[str], k: int) -> list[Row]:
        """Rows of FACT_COLUMNS of the person's `k` active facts best matching `terms` by BM25, with the
        person's count of active facts (BM25's N) read in the same query."""
        if not terms:
            return []
        matching, params = self._word_matches(scope, user_id, terms)
        rows = select(
            self.conn,
            f"SELECT {FACT_COLUMNS}, (SELECT count(*) FROM facts WHERE scope = ? AND user_id = ? AND status = 'active') "
            f"AS total FROM facts AS f WHERE f.id IN ({matching}) AND f.status = 'active'",
            (scope, user_id, *params),
        )
        return best_matches(rows, terms, rows[0]["total"] if rows else 0, k)

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
        """Active facts whose text or id contains `prefix`, for autocomplete ("#12" as shown finds fact 12),
        with their sources: where each was said decides whether someone else may see it listed."""
        typed = prefix.strip()
        typed = typed[1:] if typed.startswith("#") and typed[1:].isdigit() else typed
        needle = "%" + typed.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = select(
            self.conn,
            f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE scope = ? AND user_id = ? AND status = 'active' "
            f"AND (text {self.LIKE} ? ESCAPE '\\' OR CAST(id AS TEXT) LIKE ? ESCAPE '\\') "
            "ORDER BY recorded_at DESC, id DESC LIMIT ?",
            (scope, user_id, needle, needle, limit),
        )
        return facts_from(self.conn, rows)
