"""Episodes: what one channel talked about over a span, with the messages it was made from and its vector.

An episode is derived data and follows its sources point by point: `episode_points` holds its points
in order and `point_sources` the messages each was made from, with their authors (`episode_sources`:
every message of the episode, for its participants). A deleted or edited message, or its author's
forget-all, takes out the points made from it (`_withdraw_points`); the episode keeps the others, its
summary rebuilt from them and its vector refreshed by the next flush (`stale_episodes`), and goes when
no point is left. Events never quote a summary or a point. Searches stay in one scope: an exact cosine KNN
like facts' (`DISTANCE ... ORDER BY ... LIMIT`) over the scope's rows, which the (scope, ended_at)
index gives.

Times are ISO texts as `iso()` writes them (compared as text); a span [since, until) keeps the episodes
that overlap it: ended at or after `since`, started before `until`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from bot.memory.models import Episode, NewEpisode, NewPoint, summary_of
from bot.storage.sql.database import Connected
from bot.storage.sql.rows import EPISODE_COLUMNS, episodes_from, select, select_in, select_one

# What one episode may hold once a later chunk of the same talk adds its points (a recap shows it whole).
MAX_EPISODE_POINTS = 24
MAX_EPISODE_CHARS = 3000


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
        """Store an episode with its points, each with its messages (and their authors), and its vector."""
        self._check_width(episode.embedding or ())
        origin = episode.origin
        points = episode.stored_points()
        [new_id] = self.conn.execute(
            "INSERT INTO episodes (scope, channel_id, parent_channel_id, private_thread, summary, started_at, "
            "ended_at, recorded_at, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                episode.scope,
                origin.channel_id,
                origin.parent_channel_id,
                int(origin.private_thread),
                summary_of([p.text for p in points]),
                episode.started_at,
                episode.ended_at,
                now,
                self._vector(episode.embedding or ()),
            ),
        ).fetchone()
        self.conn.executemany(
            "INSERT INTO episode_sources (episode_id, message_id, author_id) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(new_id, mid, author) for point in points for mid, author in point.sources.items()],
        )
        self._insert_points(int(new_id), points)
        return int(new_id)

    def episode_to_extend(
        self, scope: str, channel_id: str, vector: Sequence[float], since: str, max_distance: float
    ) -> int | None:
        """The channel's latest episode, when it ended at or after `since` and is within `max_distance`
        of `vector`: what a new chunk of the same talk goes on (None: a new episode)."""
        row = select_one(
            self.conn,
            f"SELECT e.id, {self.DISTANCE} AS distance FROM episodes AS e "
            "WHERE e.scope = ? AND e.channel_id = ? AND e.ended_at >= ? ORDER BY e.ended_at DESC, e.id DESC LIMIT 1",
            (self._vector(vector), scope, channel_id, since),
        )
        return int(row["id"]) if row is not None and row["distance"] <= max_distance else None

    def _extend_episode(self, episode: NewEpisode, episode_id: int) -> bool:
        """Add a new episode's points to the one it `continues` (same scope and channel), its span and its
        messages with them, and refresh its vector at the next flush; False when that episode is gone or
        would pass MAX_EPISODE_POINTS or MAX_EPISODE_CHARS (the caller stores a new one)."""
        row = select_one(
            self.conn,
            "SELECT e.summary, e.started_at, e.ended_at, (SELECT count(*) FROM episode_points AS p "
            "WHERE p.episode_id = e.id) AS points, (SELECT max(p.position) FROM episode_points AS p "
            "WHERE p.episode_id = e.id) AS last FROM episodes AS e WHERE e.id = ? AND e.scope = ? AND e.channel_id = ?",
            (episode_id, episode.scope, episode.origin.channel_id),
        )
        points = episode.stored_points()
        added = summary_of([p.text for p in points])
        if row is None or row["points"] + len(points) > MAX_EPISODE_POINTS:
            return False
        if len(row["summary"]) + 1 + len(added) > MAX_EPISODE_CHARS:
            return False
        self._insert_points(episode_id, points, start=int(row["last"] or 0) + 1)
        self.conn.executemany(
            "INSERT INTO episode_sources (episode_id, message_id, author_id) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(episode_id, mid, author) for point in points for mid, author in point.sources.items()],
        )
        self.conn.execute(
            "UPDATE episodes SET summary = ?, started_at = ?, ended_at = ? WHERE id = ?",
            (
                row["summary"] + "\n" + added,
                min(row["started_at"], episode.started_at),
                max(row["ended_at"], episode.ended_at),
                episode_id,
            ),
        )
        self.conn.execute(
            "INSERT INTO stale_episodes (episode_id) VALUES (?) ON CONFLICT DO NOTHING", (episode_id,)
        )
        return True

    def _insert_points(self, episode_id: int, points: Sequence[NewPoint], start: int = 0) -> None:
        for position, point in enumerate(points, start):
            [point_id] = self.conn.execute(
                "INSERT INTO episode_points (episode_id, position, text) VALUES (?, ?, ?) RETURNING id",
                (episode_id, position, point.text),
            ).fetchone()
            self.conn.executemany(
                "INSERT INTO point_sources (point_id, message_id, author_id) VALUES (?, ?, ?)",
                [(point_id, mid, author) for mid, author in point.sources.items()],
            )

    def _delete_episodes(self, scope: str, episode_ids: Collection[int]) -> int:
        """Delete these episodes of `scope` with their points, sources and vectors; how many there were."""
        return sum(
            self.conn.execute("DELETE FROM episodes WHERE id = ? AND scope = ?", (eid, scope)).rowcount
            for eid in episode_ids
        )

    def _withdraw_points(
        self, scope: str | None, messages: Sequence[str], author: str | None
    ) -> dict[int, Withdrawn]:
        """Take out every point made from one of `messages` or from a message of `author` (in `scope`;
        None: wherever): each episode touched keeps its other points, its summary rebuilt from them, its
        messages those they still cite, and waits for a fresh vector (`stale_episodes`); one left without
        points is deleted. Returns what went, per episode."""
        within, before = (" AND e.scope = ?", [scope]) if scope is not None else ("", [])
        base = (
            "SELECT DISTINCT p.id AS point_id, e.id AS episode_id, e.scope FROM point_sources AS s, "
            f"episode_points AS p, episodes AS e WHERE p.id = s.point_id AND e.id = p.episode_id{within}"
        )
        rows = select_in(self.conn, f"{base} AND s.message_id IN ({{marks}})", messages, before)
        if author is not None:
            rows += select(self.conn, f"{base} AND s.author_id = ?", [*before, author])
        going: dict[int, set[int]] = {}
        scopes: dict[int, str] = {}
        for row in rows:
            going.setdefault(row["episode_id"], set()).add(row["point_id"])
            scopes[row["episode_id"]] = row["scope"]
        withdrawn: dict[int, Withdrawn] = {}
        for episode_id, point_ids in going.items():
            points = select(
                self.conn,
                "SELECT id, text FROM episode_points WHERE episode_id = ? ORDER BY position, id",
                (episode_id,),
            )
            left = [p for p in points if p["id"] not in point_ids]
            if not left:
                self._delete_episodes(scopes[episode_id], [episode_id])
                withdrawn[episode_id] = Withdrawn(scopes[episode_id], len(points), deleted=True)
                continue
            for point_id in point_ids:
                self.conn.execute("DELETE FROM episode_points WHERE id = ?", (point_id,))
            self.conn.execute(
                "DELETE FROM episode_sources WHERE episode_id = ? AND message_id NOT IN (SELECT s.message_id "
                "FROM point_sources AS s, episode_points AS p WHERE p.id = s.point_id AND p.episode_id = ?)",
                (episode_id, episode_id),
            )
            self.conn.execute(
                "UPDATE episodes SET summary = ? WHERE id = ?",
                (summary_of([p["text"] for p in left]), episode_id),
            )
            self.conn.execute(
                "INSERT INTO stale_episodes (episode_id) VALUES (?) ON CONFLICT DO NOTHING", (episode_id,)
            )
            withdrawn[episode_id] = Withdrawn(scopes[episode_id], len(points) - len(left), deleted=False)
        return withdrawn

    def stale_episodes(self, limit: int = 20) -> list[tuple[int, str]]:
        """Episodes whose points changed since their vector was made: (id, summary), oldest first."""
        rows = select(
            self.conn,
            "SELECT e.id, e.summary FROM stale_episodes AS s JOIN episodes AS e ON e.id = s.episode_id "
            "ORDER BY e.id LIMIT ?",
            (limit,),
        )
        return [(r["id"], r["summary"]) for r in rows]

    def _refresh_episode_vectors(self, vectors: Sequence[tuple[int, str, Sequence[float]]]) -> None:
        """Each (id, the summary that was embedded, its vector): written only while the episode still has
        that summary, so a vector of words taken out meanwhile is never kept (it stays stale instead)."""
        for episode_id, summary, vector in vectors:
            self._check_width(vector)
            if self.conn.execute(
                "UPDATE episodes SET embedding = ? WHERE id = ? AND summary = ?",
                (self._vector(vector), episode_id, summary),
            ).rowcount:
                self.conn.execute("DELETE FROM stale_episodes WHERE episode_id = ?", (episode_id,))


@dataclass(frozen=True)
class Withdrawn:
    """What an episode lost: its scope, how many points, and whether it went whole (no point was left)."""

    scope: str
    points: int
    deleted: bool
