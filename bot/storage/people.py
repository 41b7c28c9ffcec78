"""People and servers: who opted out, names, guild settings, and the bot's own small state.

Writes that also drop buffered messages (opting out, switching memory off, ignoring a channel) span
tables, so they live with the `Store` that composes this part with the buffer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from bot.memory.models import GuildSettings, iso, utcnow
from bot.storage.connection import Connected


def upsert_user(conn: sqlite3.Connection, scope: str, user_id: str, name: str) -> None:
    """Remember a person's latest name in a scope (an empty name keeps the one known)."""
    conn.execute(
        "INSERT INTO users (scope, user_id, name, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (scope, user_id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at "
        "WHERE excluded.name != ''",
        (scope, user_id, name, iso(utcnow())),
    )


class People(Connected):
    """Opt-outs, names, guild settings and app state."""

    def opted_out(self) -> set[tuple[str, str]]:
        return {
            (r[0], r[1])
            for r in self.conn.execute("SELECT scope, user_id FROM users WHERE opted_out = 1").fetchall()
        }

    def user_names(self, scope: str, user_ids: Iterable[str]) -> dict[str, str]:
        ids = list(user_ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            f"SELECT user_id, name FROM users WHERE scope = ? AND user_id IN ({marks})", (scope, *ids)
        ).fetchall()
        return {r[0]: r[1] for r in rows}

    def guild_settings(self) -> dict[str, GuildSettings]:
        out: dict[str, GuildSettings] = {}
        for gid, enabled, log_channel, see_others in self.conn.execute(
            "SELECT guild_id, memory_enabled, log_channel_id, members_see_others FROM guild_settings"
        ):
            out[gid] = GuildSettings(gid, bool(enabled), log_channel, bool(see_others))
        for gid, cid in self.conn.execute("SELECT guild_id, channel_id FROM ignored_channels"):
            out.setdefault(gid, GuildSettings(gid)).ignored_channel_ids.add(cid)
        return out

    def get_state(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM app_state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_state(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO app_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
