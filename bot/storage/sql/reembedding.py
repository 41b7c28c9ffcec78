"""Importing facts as they are and re-embedding every vector into another model, resumably: progress is
kept in `meta` in the same transaction as each batch, so an interrupted `reembed` goes on where it
stopped. `SqlStore` composes this part."""

from __future__ import annotations

from collections.abc import Sequence

from bot.memory.models import (
    NewFact,
    iso,
    utcnow,
)
from bot.storage.sql.facts import Facts
from bot.storage.sql.meta import read_meta, set_meta
from bot.storage.sql.people import upsert_user
from bot.storage.sql.rows import scalar, select


class Reembedding(Facts):
    """Import and re-embedding (see the module)."""

    def add_facts(self, facts: Sequence[NewFact], *, actor: str = "import") -> list[int]:
        """Store facts as they are (no consolidation), each with its embedding, in one transaction."""
        if missing := [f.text for f in facts if f.embedding is None]:
            raise ValueError(f"facts to store need their embedding: {missing[:3]!r}")
        now = iso(utcnow())
        ids: list[int] = []
        with self.conn.pipeline(), self._tx():
            for fact in facts:
                upsert_user(self.conn, fact.scope, fact.user_id, fact.user_name)
                fid = self._insert_fact(fact, fact.text, fact.embedding or (), now)
                self._event(fid, fact.scope, fact.user_id, "added", {"decision": "IMPORT"}, actor)
                ids.append(fid)
        return ids

    def begin_reembed(self, model: str, dimensions: int) -> int:
        """Start (or resume) re-embedding into `model`; returns the last fact id already done."""
        meta = read_meta(self.conn)
        target = f"{model}@{dimensions}"
        with self._tx():
            if meta.get("reembed_target") != target:
                set_meta(self.conn, "reembed_target", target)
                set_meta(self.conn, "reembed_after_id", "0")
                set_meta(self.conn, "reembed_episodes_after_id", "0")
                return 0
        return int(meta.get("reembed_after_id", "0"))

    def facts_to_reembed(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        rows = select(
            self.conn, "SELECT id, text FROM facts WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit)
        )
        return [(r["id"], r["text"]) for r in rows]

    def count_to_reembed(self, after_fact_id: int, after_episode_id: int) -> int:
        return int(
            scalar(
                self.conn,
                "SELECT (SELECT count(*) FROM facts WHERE id > ?) + (SELECT count(*) FROM episodes WHERE id > ?)",
                (after_fact_id, after_episode_id),
            )
        )

    def store_reembedded(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Replace vectors (active: searchable; superseded: archived) and record progress, atomically."""
        with self._tx():
            self._write_vectors(vectors)
            if vectors:
                set_meta(self.conn, "reembed_after_id", str(max(fid for fid, _ in vectors)))

    def episodes_reembedded_up_to(self) -> int:
        """The last episode id a re-embedding already did (0: none yet); facts go first."""
        return int(read_meta(self.conn).get("reembed_episodes_after_id", "0"))

    def episodes_to_reembed(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        rows = select(
            self.conn, "SELECT id, summary FROM episodes WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit)
        )
        return [(r["id"], r["summary"]) for r in rows]

    def store_reembedded_episodes(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Replace these episodes' vectors and record the progress, atomically."""
        with self._tx():
            for episode_id, vector in vectors:
                self.conn.execute(
                    "UPDATE episodes SET embedding = ? WHERE id = ?", (self._vector(vector), episode_id)
                )
            if vectors:
                set_meta(self.conn, "reembed_episodes_after_id", str(max(eid for eid, _ in vectors)))

    def finish_reembed(self, model: str, dimensions: int) -> None:
        with self._tx():
            set_meta(self.conn, "embedding_model", model)
            set_meta(self.conn, "embedding_dimensions", str(dimensions))
            self.conn.execute(
                "DELETE FROM meta WHERE key IN ('reembed_target', 'reembed_after_id', 'reembed_episodes_after_id')"
            )
        self.dimensions = dimensions
