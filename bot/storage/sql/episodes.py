"""Episodes: what one channel talked about over a span, with the messages it was made from and its vector.

An episode is derived data and follows its sources: `episode_sources` holds each message with its
author, so a deleted message, or its author's forget-all, deletes the whole episode (the forgets in
`SqlStore`). Nothing rewrites an episode but an admin's correction (`SqlStore` too), which leaves no
trace of the old words: events never quote a summary. Searches stay in one scope: an exact cosine KNN
like facts' (`DISTANCE ... ORDER BY ... LIMIT`) over the scope's rows, which the (scope, ended_at)
index gives.

Times are ISO texts as `iso()` writes them (compared as text); a span [since, until) keeps the episodes
that overlap it: ended at or after `since`, started before `until`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from bot.memory.models import Episode, NewEpisode
from bot.storage.sql.database import Connected
from bot.storage.sql.rows import EPISODE_COLUMNS, episodes_from, select, select_one


def overlapping(since: str | None, until: str | None) -> tuple[str, list[Any]]:
    """SQL conditions (each after an AND) keeping episodes that overlap [since, until), and their parameters."""
    conditions, params = "", []
    if since is not None:
        conditions, params = " AND e.ended_at >= ?", [since]
    if until is not None:
        conditions, params = conditions + " AND e.started_at < ?", [*params, until]
    return conditions, params


class Episodes(Connected):
    """Reading a scope's episodes, and the steps the store's writes use."""

    def episodes_near(
        self,
        scope: str,
        vector: Sequence[float],
        k: int,
        *,
        since: str | None = None,
        until: str | None = None,
        max_distance: float | None = None,
    ) -> list[tuple[Episode, float]]:
        """Exact cosine KNN over one scope's episodes (those overlapping [since, until)), nearest first."""
        span, params = overlapping(since, until)
        rows = select(
            self.conn,
            f"SELECT {EPISODE_COLUMNS}, {self.DISTANCE} AS distance FROM episodes AS e "
            f"WHERE e.scope = ?{span} ORDER BY distance, e.id LIMIT ?",
            (self._vector(vector), scope, *params, k),
        )
        near = [r for r in rows if max_distance is None or r["distance"] <= max_distance]
        return list(zip(episodes_from(self.conn, near), [r["distance"] for r in near], strict=True))

    def episodes_between(
        self, scope: str, since: str | None, until: str | None, limit: int = 50
    ) -> list[Episode]:
        """One scope's episodes overlapping [since, until) (None: open at that end), newest first."""
        span, params = overlapping(since, until)
        return self._newest(f"e.scope = ?{span}", [scope, *params], limit, 0)

    def list_episodes(
        self,
        scope: str,
        *,
        channel_ids: Collection[str] | None = None,
        since: str | None = None,
        limit: int = 25,
        offset: int = 0,
    ) -> list[Episode]:
        """One scope's episodes, newest first: those that ended at or after `since`, and with `channel_ids`
        those said in one of them (a public thread's count as its parent channel's; a private thread's
        only under its own id, its own audience)."""
        where, params = overlapping(since, None)
        where, params = f"e.scope = ?{where}", [scope, *params]
        if channel_ids is not None:
            if not channel_ids:
                return []
            marks = ",".join("?" * len(channel_ids))
            where += f" AND (e.channel_id IN ({marks}) OR (e.private_thread = 0 AND e.parent_channel_id IN ({marks})))"
            params += [*channel_ids, *channel_ids]
        return self._newest(where, params, limit, offset)

    def get_episode(self, episode_id: int) -> Episode | None:
        row = select_one(
            self.conn, f"SELECT {EPISODE_COLUMNS} FROM episodes AS e WHERE e.id = ?", (episode_id,)
        )
        return episodes_from(self.conn, [row])[0] if row else None

    def _newest(self, where: str, params: Sequence[Any], limit: int, offset: int) -> list[Episode]:
        rows = select(
            self.conn,
            f"SELECT {EPISODE_COLUMNS} FROM episodes AS e WHERE {where} "
            "ORDER BY e.ended_at DESC, e.id DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return episodes_from(self.conn, rows)

    def _insert_episode(self, episode: NewEpisode, now: str) -> int:
        """Store an episode with its sources (each message with its author) and its vector."""
        self._check_width(episode.embedding or ())
        origin = episode.origin
        [new_id] = self.conn.execute(
            "INSERT INTO episodes (scope, channel_id, parent_channel_id, private_thread, summary, started_at, "
            "ended_at, recorded_at, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                episode.scope,
                origin.channel_id,
                origin.parent_channel_id,
                int(origin.private_thread),
                episode.summary,
                episode.started_at,
                episode.ended_at,
                now,
                self._vector(episode.embedding or ()),
            ),
        ).fetchone()
        self.conn.executemany(
            "INSERT INTO episode_sources (episode_id, message_id, author_id) VALUES (?, ?, ?)",
            [(new_id, mid, author) for mid, author in episode.sources.items()],
        )
        return int(new_id)

    def _delete_episodes(self, scope: str, episode_ids: Collection[int]) -> int:
        """Delete these episodes of `scope` with their sources and vectors; how many there were."""
        return sum(
            self.conn.execute("DELETE FROM episodes WHERE id = ? AND scope = ?", (eid, scope)).rowcount
            for eid in episode_ids
        )
