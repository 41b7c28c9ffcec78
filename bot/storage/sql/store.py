"""The store both backends share: its parts over one `Database`, and the writes that span their tables.

Each part owns some tables (`buffer`, `people`, `facts`, `search`, `use_per_day`; the meta and the backend's
connection below them). What must happen in ONE transaction across them has parts of its own, named
for the job: `flush_write` (a flush's facts with the removal of its messages), `erasure` (forgetting
with the buffered text it came from and what was made of it), `reembedding` (import and re-embedding).
`SqlStore` composes them all and keeps the settings whose change drops buffered messages (an opt-out
with the person's buffered messages) and the statistics.

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

from pathlib import Path
from typing import Any, Self

from bot.memory.models import (
    COMMUNITY_ID,
    FactStatus,
    GuildSettings,
    PersonSettings,
    guild_scope,
    iso,
    utcnow,
)
from bot.storage.sql.buffer import drop_pending_of
from bot.storage.sql.coordination import Coordination
from bot.storage.sql.database import Database
from bot.storage.sql.erasure import Erasure
from bot.storage.sql.flush_write import FlushWrite
from bot.storage.sql.meta import check_embedding, read_meta
from bot.storage.sql.reembedding import Reembedding
from bot.storage.sql.rows import scalar, select
from bot.storage.sql.search import Search
from bot.storage.sql.use_per_day import UsePerDay


class SqlStore(Erasure, FlushWrite, Reembedding, Search, Coordination, UsePerDay):
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
