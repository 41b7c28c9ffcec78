"""The store both backends share: its parts over one `Database`, and the writes that span their tables.

Each part owns some tables (`buffer`, `people`, `facts`, `search`; the meta and the backend's
connection below them); `SqlStore` composes them and holds what must happen in ONE transaction across
them: a flush's facts with the removal of its messages, forgetting with the buffered text it came from,
an opt-out with the person's buffered messages.

Layout choices (measured in docs/benchmarks.md):
- Vectors of ACTIVE facts live in a plain table indexed on (scope, user_id), searched exactly with
  the backend's cosine distance `... ORDER BY ... LIMIT`: a KNN that only ever reads one person's rows,
  so other people's vectors can neither slow it down nor crowd a person's facts out of the top k.
- The text index holds active facts only and answers for one person (see the backends' `search`).
- A superseded fact keeps its row (status + superseded_by) and its vector moves to
  `facts.archived_embedding`, so that a later undo (its successor's only source message deleted)
  can bring it back without asking the model again; correcting or forgetting the current fact deletes
  that history, whose words were taken back.

A backend's `Store` subclasses `SqlStore`: it opens its database, migrates it, reports its health and
fills the hooks of `Connected`. Stores are synchronous; `AsyncStore` (worker.py) runs every call on
one dedicated thread, so each method is one atomic unit of work that never interleaves with another
coroutine's statements.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self

from bot.memory.models import (
    COMMUNITY_ID,
    AppliedChange,
    Decision,
    Episode,
    Fact,
    FactStatus,
    GuildSettings,
    NewEpisode,
    NewFact,
    NewPoint,
    Operation,
    PersonSettings,
    Taught,
    guild_scope,
    iso,
    summary_of,
    utcnow,
)
from bot.storage.sql.buffer import Buffer, buffered_authors, buffered_texts, drop_bot_turns, drop_pending_of
from bot.storage.sql.coordination import Coordination
from bot.storage.sql.database import Database
from bot.storage.sql.episodes import Episodes, Withdrawn
from bot.storage.sql.facts import Facts
from bot.storage.sql.meta import check_embedding, read_meta, set_meta
from bot.storage.sql.people import People, upsert_user
from bot.storage.sql.rows import Owner, scalar, select, select_in, select_one
from bot.storage.sql.search import Search

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


class SqlStore(Facts, Episodes, Search, Buffer, People, Coordination):
    """The `Storage` port over any backend's `Database`; a backend's `Store` completes it."""

    @classmethod
    def open(
        cls, location: Path | str, *, embedding_model: str, dimensions: int, allow_model_change: bool = False
    ) -> Self:
        """Open the database at `location` (creating and migrating it as needed), checked against the
        embedding model it was made with.

        A different model or dimension raises EmbeddingMismatchError naming `python -m bot reembed`,
        because mixing vectors of two models silently ruins every search. The connection is closed on
        any failure.
        """
        conn = cls.connect(location)
        try:
            store = cls(conn, dimensions=dimensions)
            store.migrate()
            check_embedding(conn, embedding_model, dimensions, allow_model_change)
        except BaseException:
            conn.close()
            raise
        return store

    @classmethod
    def connect(cls, location: Path | str) -> Database:
        """A connection to the backend's database at `location` (a DatabaseError saying what is wrong)."""
        raise NotImplementedError

    def migrate(self) -> int:
        """Apply the backend's numbered migrations not applied yet; returns the resulting version."""
        raise NotImplementedError

    def embedding_meta(self) -> tuple[str, int]:
        meta = read_meta(self.conn)
        return meta["embedding_model"], int(meta["embedding_dimensions"])

    def reembed_unfinished(self) -> bool:
        """Whether a re-embedding was started and not finished."""
        return self.conn.execute("SELECT 1 FROM meta WHERE key = 'reembed_target'").fetchone() is not None

    def close(self) -> None:
        self.conn.close()

    # ---- people and servers: settings that drop buffered messages ------------------------------------------

    def set_opt_out(self, scope: str, user_id: str, opted_out: bool) -> int:
        """Record the choice; opting out also drops that person's not-yet-extracted messages here."""
        with self._tx():
            self.conn.execute(
                "INSERT INTO users (scope, user_id, opted_out, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (scope, user_id) DO UPDATE SET opted_out = excluded.opted_out, "
                "updated_at = excluded.updated_at",
                (scope, user_id, int(opted_out), iso(utcnow())),
            )
            self._settings_changed()
            dropped = 0
            if opted_out:
                dropped = drop_pending_of(self.conn, scope, user_id)
                self._event(None, scope, user_id, "opted_out", {"pending_dropped": dropped}, actor=user_id)
            else:
                self._event(None, scope, user_id, "opted_in", {}, actor=user_id)
        if opted_out:
            self._scrub()  # the dropped messages' text must not linger in the files
        return dropped

    def update_guild_settings(self, guild_id: str, /, **changes: Any) -> GuildSettings:
        """Set memory_enabled, log_channel_id, members_see_others, persona, moderator_role_id or removed_at
        for a guild."""
        allowed = {
            "memory_enabled",
            "log_channel_id",
            "members_see_others",
            "persona",
            "moderator_role_id",
            "removed_at",
        }
        if not set(changes) <= allowed:
            raise ValueError(f"unknown guild settings: {sorted(set(changes) - allowed)}")
        with self._tx():
            self._settings_changed()
            self.conn.execute(
                "INSERT INTO guild_settings (guild_id) VALUES (?) ON CONFLICT DO NOTHING", (guild_id,)
            )
            for key, value in changes.items():
                stored = int(value) if isinstance(value, bool) else value
                self.conn.execute(
                    f"UPDATE guild_settings SET {key} = ? WHERE guild_id = ?", (stored, guild_id)
                )
            if changes.get("memory_enabled") is False:  # switched off: nothing buffered is read later
                self.conn.execute("DELETE FROM pending_messages WHERE scope = ?", (guild_scope(guild_id),))
        if changes.get("memory_enabled") is False:
            self._scrub()
        return self.guild_settings().get(guild_id, GuildSettings(guild_id))

    def set_channel_persona(self, guild_id: str, channel_id: str, persona: str | None) -> None:
        with self._tx():
            self._settings_changed()
            if persona is None:
                self.conn.execute(
                    "DELETE FROM channel_personas WHERE guild_id = ? AND channel_id = ?",
                    (guild_id, channel_id),
                )
            else:
                self.conn.execute(
                    "INSERT INTO channel_personas (guild_id, channel_id, persona) VALUES (?, ?, ?) "
                    "ON CONFLICT (guild_id, channel_id) DO UPDATE SET persona = excluded.persona",
                    (guild_id, channel_id, persona),
                )

    def save_person_settings(self, scope: str, user_id: str, settings: PersonSettings) -> None:
        """Record a person's own settings; the other processes reload them."""
        with self._tx():
            self._settings_changed()
            self.conn.execute(
                "INSERT INTO users (scope, user_id, in_replies, notify_learned, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, user_id) DO UPDATE SET "
                "in_replies = excluded.in_replies, notify_learned = excluded.notify_learned, "
                "updated_at = excluded.updated_at",
                (scope, user_id, int(settings.in_replies), int(settings.notify_learned), iso(utcnow())),
            )

    def set_auto_reply(self, guild_id: str, channel_id: str, replies: bool) -> None:
        """An admin's choice of whether the bot answers every message in a channel without a mention."""
        with self._tx():
            self._settings_changed()
            self.conn.execute(
                "INSERT INTO auto_reply_channels (guild_id, channel_id, replies) VALUES (?, ?, ?) "
                "ON CONFLICT (guild_id, channel_id) DO UPDATE SET replies = excluded.replies",
                (guild_id, channel_id, int(replies)),
            )

    def set_channel_ignored(self, guild_id: str, channel_id: str, ignored: bool) -> None:
        with self._tx():
            self._settings_changed()
            if ignored:
                self.conn.execute(
                    "INSERT INTO ignored_channels (guild_id, channel_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (guild_id, channel_id),
                )
                self.conn.execute(
                    "DELETE FROM pending_messages WHERE channel_id = ? OR parent_channel_id = ?",
                    (channel_id, channel_id),
                )
            else:
                self.conn.execute(
                    "DELETE FROM ignored_channels WHERE guild_id = ? AND channel_id = ?",
                    (guild_id, channel_id),
                )
        if ignored:
            self._scrub()

    # ---- forgetting ----------------------------------------------------------------------------------------

    def forget(
        self, scope: str, user_id: str, fact_ids: Sequence[int] | None = None, *, actor: str = "system"
    ) -> int:
        """Hard-delete facts (None: all of this person's in this scope) with their history, vectors and words.

        A fact goes with the older versions it superseded and, since a merge holds the words of what it
        replaced, with every fact it was merged into (and their histories): forgetting an earlier version
        forgets the current one that repeats it. Ids that are not this person's in this scope are ignored
        (the count says what was removed). Forgetting everything also drops the person's buffered
        messages, so nothing is learned afterwards from text they said before. Leaves one 'forgotten'
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
            if not community_only:  # after the community's facts went: the person's that hold its words
                carrying = self._facts_carrying(message_id)
                self.conn.execute("DELETE FROM fact_sources WHERE message_id = ?", (message_id,))
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
        if removed or made.facts or made.episodes or buffered:
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
        history, every episode and every buffered message; one 'forgotten' event without text.
        Opt-outs and settings stay. Returns how many facts and episodes went."""
        with self.conn.pipeline(), self._tx():
            ids = [r["id"] for r in select(self.conn, "SELECT id FROM facts WHERE scope = ?", (scope,))]
            self._delete_facts(ids)
            episodes = int(scalar(self.conn, "SELECT count(*) FROM episodes WHERE scope = ?", (scope,)))
            self.conn.execute("DELETE FROM episodes WHERE scope = ?", (scope,))  # (no rowcount in a pipeline)
            self.conn.execute("DELETE FROM pending_messages WHERE scope = ?", (scope,))
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

    # ---- a flush -------------------------------------------------------------------------------------------

    def apply_flush(
        self,
        operations: Sequence[Operation],
        *,
        episodes: Sequence[NewEpisode] = (),
        consumed_message_ids: Sequence[str] = (),
        user_names: dict[tuple[str, str], str] | None = None,
        refreshed: Sequence[tuple[int, Sequence[float]]] = (),
        actor: str = "system",
        read_texts: dict[str, str] | None = None,
        refreshed_episodes: Sequence[tuple[int, str, Sequence[float]]] = (),
    ) -> list[AppliedChange]:
        """Apply a flush's plan and store its episodes, with its events and the removal of its buffered
        messages, in ONE transaction.

        The plan is decided: consolidation (bot/memory/consolidate.py, `resolved`) settled every
        operation, down to what it becomes if its target is gone. An incomplete operation (a MERGE
        without its text, a decision on a known fact that names none, a fact to store without its
        vector) or episode (without sources or vector) raises ValueError before anything is written.

        What only the write can see is checked here, each with one outcome:
        - a fact of a person who opted out, drawn from a message edited while the flush ran (its text
          differs from `read_texts`), or whose every source message left the buffer meanwhile, is
          skipped; an edited message stays buffered with its new text, and a fact keeps no trace of a
          source deleted meanwhile;
        - a community fact or an episode is made of all its messages: it is skipped unless every one of
          them is still buffered, unedited, and by someone who has not opted out (`_from_buffer`);
        - a target that is no longer the person's active fact (forgotten meanwhile) gets the
          operation's `fallback`; an operation without one is skipped;
        - a DUPLICATE of a fact merged meanwhile (by this very plan) confirms the fact holding its words.
        `refreshed` carries fresh vectors for facts listed by `stale_facts()`, `refreshed_episodes` for
        episodes listed by `stale_episodes()` (with the summary each was made from).
        """
        faults = [fault for planned in operations if (fault := _incomplete(planned)) is not None]
        faults += [f"an episode of {e.scope} has no {what}" for e in episodes for what in _missing(e)]
        if faults:
            raise ValueError(f"cannot apply the flush's plan: {'; '.join(faults)}")
        now = iso(utcnow())
        applied: list[AppliedChange] = []
        with self._tx():
            self._write_vectors(refreshed)
            self._refresh_episode_vectors(refreshed_episodes)
            opted_out = self.opted_out()
            # Messages deleted, forgotten or dropped by an opt-out while the model was thinking must teach nothing.
            current = buffered_texts(self.conn, {*consumed_message_ids, *(read_texts or {})})
            withdrawn = {mid for mid in consumed_message_ids if current[mid] is None}
            edited = {mid for mid, text in (read_texts or {}).items() if current[mid] not in (None, text)}
            # What is made of several people's messages is checked against each message's author.
            made_of = {
                m for op in operations if op.fact.user_id == COMMUNITY_ID for m in op.fact.source_message_ids
            }
            authors = buffered_authors(self.conn, made_of | {m for e in episodes for m in e.sources})
            for (scope, user_id), name in (user_names or {}).items():
                upsert_user(self.conn, scope, user_id, name)
            for planned in operations:
                op = _admitted(planned, opted_out, withdrawn, edited, authors)
                if op is None:
                    continue
                if not op.decision.has_target:
                    applied.append(self._add(op, op.decision, now, actor))
                elif (found := self._target(op)) is None:  # gone meanwhile: the plan's fallback, or skipped
                    if op.fallback is not None:
                        applied.append(self._add(op, op.fallback, now, actor))
                elif op.decision is Decision.DUPLICATE:
                    applied.append(self._confirm(op, found[0], now, actor))
                else:
                    applied.append(self._replace(op, *found, now, actor))
            for episode in episodes:
                if _from_buffer(episode.scope, episode.sources, opted_out, edited, authors) and (
                    episode.continues is None or not self._extend_episode(episode, episode.continues)
                ):
                    self._insert_episode(episode, now)
            for mid in consumed_message_ids:
                if mid not in edited:
                    self.conn.execute("DELETE FROM pending_messages WHERE message_id = ?", (mid,))
        return applied

    def _target(self, op: Operation) -> tuple[int, Owner] | None:
        """The id and owner of the active fact an operation acts on; None when it is not the person's now."""
        target_id = op.target_id
        if target_id is None:
            return None
        if op.decision is Decision.DUPLICATE:
            # Another operation of this plan may have merged the target already: repeat its successor.
            target_id = [target_id, *self._merged_into(target_id)][-1]
        owner = self._active_owner(target_id)
        if owner is None or (owner.scope, owner.user_id) != (op.fact.scope, op.fact.user_id):
            return None
        return target_id, owner

    def _add(self, op: Operation, decision: Decision, now: str, actor: str) -> AppliedChange:
        """ADD or KEEP: the new fact is stored beside what is known."""
        fact = op.fact
        fact_id = self._insert_fact(fact, fact.text, fact.embedding or (), now)
        detail = {"decision": decision.value, "reason": op.reason}
        self._event(fact_id, fact.scope, fact.user_id, "added", detail, actor)
        return AppliedChange(decision, fact.scope, fact.user_id, fact.user_name, fact_id)

    def _confirm(self, op: Operation, target_id: int, now: str, actor: str) -> AppliedChange:
        """DUPLICATE: the known fact gains the new fact's messages as sources that repeat it."""
        fact = op.fact
        self._add_sources(target_id, fact, confirms=True)
        self.conn.execute("UPDATE facts SET updated_at = ? WHERE id = ?", (now, target_id))
        # The repeat's words are the fact's own: the event records the decision, never the text (a deleted
        # repeat would otherwise leave them here).
        self._event(target_id, fact.scope, fact.user_id, "duplicate", {"reason": op.reason}, actor)
        return AppliedChange(op.decision, fact.scope, fact.user_id, fact.user_name, target_id, target_id)

    def _replace(self, op: Operation, target_id: int, target: Owner, now: str, actor: str) -> AppliedChange:
        """MERGE or INVALIDATE: a new fact supersedes the known one, which keeps its row as history."""
        fact = op.fact
        merge = op.decision is Decision.MERGE
        text = op.merged_text if merge and op.merged_text else fact.text
        if (
            merge
        ):  # the merged text holds both facts' words: sensitive if either was, the server's only if both
            fact = replace(
                fact,
                sensitive=fact.sensitive or target.sensitive,
                speaks_for_server=fact.speaks_for_server and target.speaks_for_server,
            )
        fact_id = self._insert_fact(fact, text, fact.embedding or (), now)
        if merge:
            self._inherit_sources(fact_id, target_id)
            # Searchable at once with the new fact's vector; the merged text's own vector rides along
            # with the next flush's embedding request (`refreshed`).
            self.conn.execute("INSERT INTO stale_vectors (fact_id) VALUES (?)", (fact_id,))
        status = FactStatus.MERGED if merge else FactStatus.INVALIDATED
        self._supersede(target_id, fact_id, status, now)
        added = {"decision": op.decision.value, "replaces": target_id, "reason": op.reason}
        self._event(fact_id, fact.scope, fact.user_id, "added", added, actor)
        replaced = {"superseded_by": fact_id, "reason": op.reason}  # the row keeps its words, not the event
        self._event(target_id, fact.scope, fact.user_id, status.value, replaced, actor)
        return AppliedChange(op.decision, fact.scope, fact.user_id, fact.user_name, fact_id, target_id)

    # ---- import and re-embedding ---------------------------------------------------------------------------

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

    # ---- statistics ----------------------------------------------------------------------------------------

    def stats(self, scope: str | None = None) -> dict[str, Any]:
        where, params = ("WHERE scope = ?", (scope,)) if scope else ("", ())
        by_status = {
            r["status"]: r["count"]
            for r in select(
                self.conn, f"SELECT status, count(*) AS count FROM facts {where} GROUP BY status", params
            )
        }
        people = scalar(
            self.conn,
            "SELECT count(*) FROM (SELECT DISTINCT scope, user_id FROM facts WHERE user_id != ? "
            f"{'AND scope = ?' if scope else ''}) AS people",  # the community is no person
            (COMMUNITY_ID, *params),
        )
        scopes = scalar(self.conn, "SELECT count(DISTINCT scope) FROM facts")
        return {
            "facts": {s.value: by_status.get(s.value, 0) for s in FactStatus},
            "people": people,
            "scopes": scopes,
            "episodes": scalar(self.conn, f"SELECT count(*) FROM episodes {where}", params),
            "pending_messages": self.count_pending(scope),
        }


def _incomplete(op: Operation) -> str | None:
    """What a planned operation lacks to be applied as it stands, if anything."""
    if op.decision.has_target and op.target_id is None:
        return f"a {op.decision} names no fact"
    if op.decision is Decision.MERGE and not op.merged_text:
        return f"a MERGE into fact {op.target_id} has no merged text"
    if op.fallback is not None and op.fallback not in (Decision.ADD, Decision.KEEP):
        return f"a fallback must store the new fact (ADD or KEEP), not {op.fallback}"
    stores_fact = op.decision is not Decision.DUPLICATE or op.fallback is not None
    if stores_fact and op.fact.embedding is None:
        return f"{op.fact.text!r} has no embedding"
    return None


def _missing(episode: NewEpisode) -> list[str]:
    """What an episode lacks to be stored: the messages it was made from, its vector."""
    return [
        what for what, there in (("sources", episode.sources), ("embedding", episode.embedding)) if not there
    ]


def _from_buffer(
    scope: str,
    sources: Collection[str],
    opted_out: set[tuple[str, str]],
    edited: set[str],
    authors: dict[str, str],
) -> bool:
    """Whether something made of all these messages may be stored: each is still buffered (`authors`:
    neither deleted, forgotten nor dropped meanwhile), unedited, and by someone who has not opted out."""
    return bool(sources) and all(
        mid in authors and mid not in edited and (scope, authors[mid]) not in opted_out for mid in sources
    )


def _admitted(
    op: Operation,
    opted_out: set[tuple[str, str]],
    withdrawn: set[str],
    edited: set[str],
    authors: dict[str, str],
) -> Operation | None:
    """The operation as its sources stand at the write; None when it must teach nothing (see apply_flush).
    `authors`: the buffered authors of community facts' sources."""
    fact = op.fact
    if fact.user_id == COMMUNITY_ID:
        return op if _from_buffer(fact.scope, fact.source_message_ids, opted_out, edited, authors) else None
    sources = set(fact.source_message_ids)
    if (fact.scope, fact.user_id) in opted_out or sources & edited:
        return None
    if withdrawn and sources and sources <= withdrawn:
        return None
    if withdrawn & sources:  # keep no trace of a message deleted meanwhile
        kept = [m for m in fact.source_message_ids if m not in withdrawn]
        return replace(op, fact=replace(fact, source_message_ids=kept))
    return op
