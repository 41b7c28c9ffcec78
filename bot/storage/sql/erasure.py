"""Forgetting, correcting and withdrawing: the deletes that span facts, episodes, the buffer and people.

A forget is a real delete: a fact goes with its history, vectors and indexed words, and what was made
from the same messages (community facts and episode points with a source among them) goes with it, in
one transaction, so no copy of the words survives in another table. `SqlStore` composes this part."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.memory.models import (
    COMMUNITY_ID,
    Episode,
    Fact,
    FactStatus,
    NewPoint,
    Taught,
    iso,
    summary_of,
    utcnow,
)
from bot.storage.sql.buffer import Buffer, drop_bot_turns, drop_pending_of
from bot.storage.sql.database import Database
from bot.storage.sql.episodes import Episodes, Withdrawn
from bot.storage.sql.facts import Facts
from bot.storage.sql.people import People
from bot.storage.sql.rows import scalar, select, select_in, select_one

SOURCE_DELETED = "source deleted"  # why a message's facts went, when nobody asked but by deleting it

# What was made from messages: the community facts (`d`, id and scope) with a source (`s`) among some
# messages or by some author (`made_from`) whose words they hold (a repeat, `confirms`, added none).
COMMUNITY_FACTS_BY_SOURCE = (
    "SELECT DISTINCT d.id, d.scope FROM fact_sources AS s, facts AS d "
    f"WHERE d.id = s.fact_id AND d.user_id = '{COMMUNITY_ID}' AND s.confirms = 0"
)


def made_from(
    conn: Database, by_source: str, scope: str | None, messages: Sequence[str], author: str | None
) -> dict[int, str]:
    """The rows of `by_source` (id -> scope) with one of `messages`, or a message of `author`, among their
    sources; within `scope` (None: any scope, as a message id names one message wherever it is)."""
    within, before = (" AND d.scope = ?", [scope]) if scope is not None else ("", [])
    rows = select_in(conn, f"{by_source}{within} AND s.message_id IN ({{marks}})", messages, before)
    if author is not None:
        rows += select(conn, f"{by_source}{within} AND s.author_id = ?", [*before, author])
    return {r["id"]: r["scope"] for r in rows}


@dataclass
class MadeFrom:
    """What went with some messages: community facts as (scope, COMMUNITY_ID, fact_id), and per episode
    touched what it lost."""

    facts: list[tuple[str, str, int]] = field(default_factory=list)
    episodes: dict[int, Withdrawn] = field(default_factory=dict)


class Erasure(Facts, Episodes, Buffer, People):
    """Deletes across the tables, each one atomic (see the module)."""

    def forget(
        self, scope: str, user_id: str, fact_ids: Sequence[int] | None = None, *, actor: str = "system"
    ) -> int:
        """Hard-delete facts (None: all of this person's in this scope) with their history, vectors and words.

        A fact goes with the older versions it superseded and, since a merge holds the words of what it
        replaced, with every fact it was merged into (and their histories): forgetting an earlier version
        forgets the current one that repeats it. Ids that are not this person's in this scope are ignored
        (the count says what was removed). Forgetting everything also drops the person's buffered
        messages, so nothing is learned afterwards from text they said before, and marks the moment, so
        messages said before it that another process writes later are dropped too. Leaves one 'forgotten'
        event with a count and no text.

        What was made from the same messages goes too (`_forget_made_from`): every community fact and
        episode with a source among those of the facts deleted and, forgetting everything, with a source
        the person wrote. The count is of the person's facts.
        """
        with self._tx():
            if fact_ids is None:
                ids = [
                    r["id"]
                    for r in select(
                        self.conn, "SELECT id FROM facts WHERE scope = ? AND user_id = ?", (scope, user_id)
                    )
                ]
                drop_pending_of(self.conn, scope, user_id)
                self.conn.execute(  # what another process still holds of what they said is dropped too
                    "INSERT INTO forget_marks (scope, user_id, at) VALUES (?, ?, ?) "
                    "ON CONFLICT (scope, user_id) DO UPDATE SET at = excluded.at",
                    (scope, user_id, iso(utcnow())),
                )
            else:
                own = [
                    fid
                    for fid in fact_ids
                    if self.conn.execute(
                        "SELECT 1 FROM facts WHERE id = ? AND scope = ? AND user_id = ?",
                        (fid, scope, user_id),
                    ).fetchone()
                ]
                ids = self._lineage(own)
                if ids:  # a buffered reply of the bot may repeat the fact; it must not teach it again
                    drop_bot_turns(self.conn, scope)
            messages = self._source_messages(ids)
            self._delete_facts(ids)
            if ids or fact_ids is None:
                self._event(
                    None, scope, user_id, "forgotten", {"count": len(ids), "all": fact_ids is None}, actor
                )
            author = user_id if fact_ids is None else None
            self._forget_made_from(scope, messages, author, actor=actor, why="forgotten")
        self._scrub(everything=fact_ids is None)
        return len(ids)

    def correct_fact(
        self, scope: str, user_id: str, fact_id: int, text: str, embedding: Sequence[float], sensitive: bool
    ) -> Fact | None:
        """Replace an active fact's text in place (vector, keyword index, flag); the old text leaves no
        trace: the fact's events, which quote it, are replaced by one 'corrected' event without text.

        The earlier versions it superseded hold the old words too (a merge's, an invalidated one's), and
        a later deletion of its source message would restore them: they are deleted, as a forget deletes
        them, and the corrected fact stands alone. A buffered reply of the bot may repeat the old words:
        the bot's buffered turns in the scope go too, and so does every other community fact and episode
        made from one of the messages of the fact or its earlier versions (`_forget_made_from`). Its
        sources, and so where it was learned, stay. None when it is not this person's active fact.
        """
        self._check_width(embedding)
        with self._tx():
            owner = self._active_owner(fact_id)
            if owner is None or (owner.scope, owner.user_id) != (scope, user_id):
                return None
            earlier = self._chain([fact_id])[1:]
            messages = self._source_messages([fact_id, *earlier])
            self._delete_facts(earlier)
            drop_bot_turns(self.conn, scope)
            self._unindex_words(fact_id)  # while the row still holds the words that were indexed
            self.conn.execute(
                "UPDATE facts SET text = ?, sensitive = ?, updated_at = ? WHERE id = ?",
                (text, int(sensitive), iso(utcnow()), fact_id),
            )
            self._write_vectors([(fact_id, embedding)])
            self._index_words(fact_id, scope, user_id, text)
            self.conn.execute("DELETE FROM fact_events WHERE fact_id = ?", (fact_id,))
            self._event(
                fact_id, scope, user_id, "corrected", {"versions_deleted": len(earlier)}, actor=user_id
            )
            self._forget_made_from(scope, messages, None, keep=fact_id, actor=user_id, why="corrected")
        self._scrub()
        return self.get_fact(fact_id)

    def forget_message(
        self,
        message_id: str,
        *,
        community_only: bool = False,
        actor: str = "system",
        why: str = SOURCE_DELETED,
    ) -> list[tuple[str, str, int]]:
        """A source message was deleted: drop it from the buffer, with the bot's replies to it, and from facts.

        Facts that carry its words are deleted: a fact left with no source, a merged fact the message
        added its text to, and every fact merged from one of those. Facts they had superseded become
        active again, because the statement that replaced them was withdrawn. Other facts only lose it
        as a source. A community fact or an episode is made of all its messages: one with this message
        among its sources is deleted whole (a community fact with its history, `_forget_made_from`).
        `community_only` takes back only that shared memory (an admin's forget of someone else's message:
        what the author's own facts hold stays theirs to forget); `why` says why in the events.
        Returns (scope, user_id, fact_id) of deleted facts, user_id COMMUNITY_ID for community facts.
        """
        removed: list[tuple[str, str, int]] = []
        now = iso(utcnow())
        buffered = 0
        with self._tx():
            if not community_only:
                buffered = self.conn.execute(
                    "DELETE FROM pending_messages WHERE message_id = ? OR reply_to = ?",
                    (message_id, message_id),
                ).rowcount
            made = self._forget_made_from(None, [message_id], None, actor=actor, why=why)
            carrying: list[int] = []
            unlinked = 0  # sources deleted, of facts that stay too: their rows are dead tuples to vacuum
            if not community_only:  # after the community's facts went: the person's that hold its words
                carrying = self._facts_carrying(message_id)
                unlinked = self.conn.execute(
                    "DELETE FROM fact_sources WHERE message_id = ?", (message_id,)
                ).rowcount
            for fid in carrying:
                row = select_one(
                    self.conn, "SELECT scope, user_id, status, superseded_by FROM facts WHERE id = ?", (fid,)
                )
                if row is None:
                    continue
                scope, user_id, status = row["scope"], row["user_id"], row["status"]
                replaced = [
                    old
                    for old in select(
                        self.conn,
                        "SELECT id, text FROM facts WHERE superseded_by = ? AND archived_embedding IS NOT NULL",
                        (fid,),
                    )
                    if old["id"] not in carrying
                ]
                for old in replaced:
                    if status == FactStatus.ACTIVE.value:
                        self._restore(old["id"], scope, user_id, old["text"], now)
                    else:  # the withdrawn fact was itself replaced since: its successor replaces these too,
                        # and carries their words only if both steps were merges
                        self.conn.execute(
                            "UPDATE facts SET superseded_by = ?, status = CASE WHEN status = 'merged' AND ? = "
                            "'merged' THEN 'merged' ELSE 'invalidated' END WHERE id = ?",
                            (row["superseded_by"], status, old["id"]),
                        )
                self._delete_facts([fid])
                cause = {"source_deleted": True} if why == SOURCE_DELETED else {"made_from": why}
                self._event(None, scope, user_id, "forgotten", {"count": 1, **cause}, actor)
                removed.append((scope, user_id, fid))
        if removed or made.facts or made.episodes or buffered or unlinked:
            self._scrub()
        return removed + made.facts

    def vacuum_deleted(self) -> bool:
        """Reclaim the space of what was deleted since the last call, where the backend keeps it after a
        delete (PostgreSQL's dead tuples); whether it did. SQLite's deletes are scrubbed as they happen."""
        return False

    def taught_by(self, message_id: str) -> Taught:
        """What forgetting this message would take (`forget_message`): the facts holding its words, a
        person's and the community's, and the episode points made from it."""
        own = self._facts_carrying(message_id)
        community = made_from(self.conn, COMMUNITY_FACTS_BY_SOURCE, None, [message_id], None)
        facts = [self.get_fact(fid) for fid in dict.fromkeys([*own, *community])]
        points = scalar(
            self.conn,
            "SELECT count(DISTINCT point_id) FROM point_sources WHERE message_id = ?",
            (message_id,),
        )
        return Taught(tuple(f for f in facts if f is not None), int(points or 0))

    def learned_from(self, message_id: str) -> bool:
        """Whether anything stored was made from this message: a fact's or an episode's source."""
        return any(
            self.conn.execute(sql, (message_id,)).fetchone()
            for sql in (
                "SELECT 1 FROM fact_sources WHERE message_id = ? LIMIT 1",
                "SELECT 1 FROM episode_sources WHERE message_id = ? LIMIT 1",
            )
        )

    def forget_scope(self, scope: str, *, actor: str = "system") -> tuple[int, int]:
        """A server's forget-everything: every fact of everyone in the scope (the community's too) with its
        history, every episode, every buffered message and its use per day; one 'forgotten' event without text.
        Opt-outs and settings stay. Returns how many facts and episodes went."""
        with self.conn.pipeline(), self._tx():
            ids = [r["id"] for r in select(self.conn, "SELECT id FROM facts WHERE scope = ?", (scope,))]
            self._delete_facts(ids)
            episodes = int(scalar(self.conn, "SELECT count(*) FROM episodes WHERE scope = ?", (scope,)))
            self.conn.execute("DELETE FROM episodes WHERE scope = ?", (scope,))  # (no rowcount in a pipeline)
            self.conn.execute("DELETE FROM pending_messages WHERE scope = ?", (scope,))
            self.conn.execute("DELETE FROM use_per_day WHERE scope = ?", (scope,))
            self.conn.execute("DELETE FROM forget_marks WHERE scope = ?", (scope,))
            detail = {"count": len(ids), "episodes": episodes, "all": True}
            self._event(None, scope, COMMUNITY_ID, "forgotten", detail, actor)
        self._scrub(everything=True)
        return len(ids), episodes

    def forget_episode(self, scope: str, episode_id: int, *, actor: str = "system") -> bool:
        """Hard-delete one episode of this scope (an admin's forget), with an event without text; False
        when the scope has no such episode."""
        with self._tx():
            gone = self._delete_episodes(scope, [episode_id])
            if gone:
                self._event(None, scope, COMMUNITY_ID, "forgotten", {"episodes": gone}, actor)
        if gone:
            self._scrub()
        return bool(gone)

    def correct_episode(
        self, scope: str, episode_id: int, summary: str, embedding: Sequence[float], *, actor: str = "system"
    ) -> Episode | None:
        """Replace an episode's summary and vector in place, leaving no trace of the old words (its sources,
        time span and channel stay): each line of the new summary is a point made from all its messages,
        since an admin's words cannot be traced to one of them. None when the scope has no such episode."""
        self._check_width(embedding)
        with self._tx():
            sources = {
                r["message_id"]: r["author_id"]
                for r in select(
                    self.conn,
                    "SELECT s.message_id, s.author_id FROM episode_sources AS s, episodes AS e "
                    "WHERE e.id = s.episode_id AND e.id = ? AND e.scope = ?",
                    (episode_id, scope),
                )
            }
            lines = [line.strip().removeprefix("- ").strip() for line in summary.splitlines()]
            points = [NewPoint(line, sources) for line in lines if line]
            changed = self.conn.execute(
                "UPDATE episodes SET summary = ?, embedding = ? WHERE id = ? AND scope = ?",
                (summary_of([p.text for p in points]), self._vector(embedding), episode_id, scope),
            ).rowcount
            if changed:
                self.conn.execute("DELETE FROM episode_points WHERE episode_id = ?", (episode_id,))
                self.conn.execute("DELETE FROM stale_episodes WHERE episode_id = ?", (episode_id,))
                self._insert_points(episode_id, points)
                self._event(None, scope, COMMUNITY_ID, "corrected", {"episode": episode_id}, actor)
        if not changed:
            return None
        self._scrub()
        return self.get_episode(episode_id)

    def points_made_from(self, scope: str, fact_id: int) -> dict[int, int]:
        """The episode points that would go with a community fact (forgotten or corrected): per episode
        of `scope`, how many of its points were made from a message whose words the fact, or a version of
        it, holds. What a confirmation and the admin log say before and after."""
        messages = self._source_messages(self._lineage([fact_id]))
        rows = select_in(
            self.conn,
            "SELECT p.episode_id, count(DISTINCT p.id) AS n FROM point_sources AS s, episode_points AS p, "
            "episodes AS e WHERE p.id = s.point_id AND e.id = p.episode_id AND e.scope = ? "
            "AND s.message_id IN ({marks}) GROUP BY p.episode_id",
            messages,
            [scope],
        )
        found: dict[int, int] = {}
        for row in rows:  # (asked 500 messages at a time: an episode may come back once per batch)
            found[row["episode_id"]] = found.get(row["episode_id"], 0) + int(row["n"])
        return found

    def _forget_made_from(
        self,
        scope: str | None,
        messages: Sequence[str],
        author: str | None,
        *,
        keep: int | None = None,
        actor: str = "system",
        why: str,
    ) -> MadeFrom:
        """Derived data follows its sources: delete every community fact holding the words of one of
        `messages` or of a message of `author` (with every version of it, `_lineage`), and take out every
        episode point made from one of them (`_withdraw_points`: the episode keeps the other points); in
        `scope` (None: wherever they are). A message that only repeated a community fact is unlinked from
        it, which stays. `keep` is a fact that stays (the one being corrected). A buffered reply of the
        bot may repeat what went: the bot's buffered turns in the scope go too. One 'forgotten' event per
        scope, with counts and `why`, no text."""
        facts = made_from(self.conn, COMMUNITY_FACTS_BY_SOURCE, scope, messages, author)
        if author is not None:  # their repeats here: the ids of messages they wrote, unlinked
            scoped, in_scope = (" AND scope = ?", [scope]) if scope is not None else ("", [])
            self.conn.execute(
                "DELETE FROM fact_sources WHERE author_id = ? AND confirms = 1 AND fact_id IN "
                f"(SELECT id FROM facts WHERE user_id = '{COMMUNITY_ID}'{scoped})",
                (author, *in_scope),
            )
        points = self._withdraw_points(scope, messages, author)
        made = MadeFrom()
        for where in sorted({*facts.values(), *(w.scope for w in points.values())}):
            ids = [f for f in self._lineage(f for f, s in facts.items() if s == where) if f != keep]
            self._delete_facts(ids)
            drop_bot_turns(self.conn, where)
            here = {e: w for e, w in points.items() if w.scope == where}
            gone = sum(w.deleted for w in here.values())
            detail = {
                "count": len(ids),
                "episodes": gone,
                "points": sum(w.points for w in here.values()),
                "made_from": why,
            }
            self._event(None, where, COMMUNITY_ID, "forgotten", detail, actor)
            made.facts += [(where, COMMUNITY_ID, fid) for fid in ids]
            made.episodes.update(here)
        return made
