"""People and servers: who opted out, names, guild settings, and the bot's own small state.

Writes that also drop buffered messages (opting out, switching memory off, ignoring a channel) span
tables, so they live with the `Store` that composes this part with the buffer.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.memory.models import GuildSettings, PersonSettings, iso, utcnow
from bot.storage.sql.database import Connected, Database
from bot.storage.sql.rows import guild_settings_from, select, select_in, select_one


def upsert_user(conn: Database, scope: str, user_id: str, name: str) -> None:
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
        rows = select(self.conn, "SELECT scope, user_id FROM users WHERE opted_out = 1")
        return {(r["scope"], r["user_id"]) for r in rows}

    def opted_out_among(self, scope: str, user_ids: Iterable[str]) -> set[str]:
        """Which of these people of a scope have opted out (read by the key: what serving shared memory
        asks of the authors it would show)."""
        return {
            r["user_id"]
            for r in select_in(
                self.conn,
                "SELECT user_id FROM users WHERE scope = ? AND opted_out = 1 AND user_id IN ({marks})",
                list(dict.fromkeys(user_ids)),
                [scope],
            )
        }

    def person_settings(self) -> dict[tuple[str, str], PersonSettings]:
        """The people whose own settings differ from the defaults, by (scope, user id)."""
        rows = select(
            self.conn,
            "SELECT scope, user_id, in_replies, notify_learned FROM users "
            "WHERE in_replies = 0 OR notify_learned = 1",
        )
        return {
            (r["scope"], r["user_id"]): PersonSettings(bool(r["in_replies"]), bool(r["notify_learned"]))
            for r in rows
        }

    def user_names(self, scope: str, user_ids: Iterable[str]) -> dict[str, str]:
        ids = list(user_ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = select(
            self.conn,
            f"SELECT user_id, name FROM users WHERE scope = ? AND user_id IN ({marks})",
            (scope, *ids),
        )
        return {r["user_id"]: r["name"] for r in rows}

    def guild_settings(self) -> dict[str, GuildSettings]:
        out: dict[str, GuildSettings] = {}
        for row in select(
            self.conn,
            "SELECT guild_id, memory_enabled, log_channel_id, members_see_others, persona, moderator_role_id, "
            "removed_at FROM guild_settings",
        ):
            out[row["guild_id"]] = guild_settings_from(row)
        for row in select(self.conn, "SELECT guild_id, channel_id FROM ignored_channels"):
            out.setdefault(row["guild_id"], GuildSettings(row["guild_id"])).ignored_channel_ids.add(
                row["channel_id"]
            )
        for row in select(self.conn, "SELECT guild_id, channel_id, persona FROM channel_personas"):
            settings = out.setdefault(row["guild_id"], GuildSettings(row["guild_id"]))
            settings.channel_personas[row["channel_id"]] = row["persona"]
        for row in select(self.conn, "SELECT guild_id, channel_id, replies FROM auto_reply_channels"):
            settings = out.setdefault(row["guild_id"], GuildSettings(row["guild_id"]))
            settings.auto_reply[row["channel_id"]] = bool(row["replies"])
        return out

    def get_state(self, key: str) -> str | None:
        row = select_one(self.conn, "SELECT value FROM app_state WHERE key = ?", (key,))
        return row["value"] if row else None

    def set_state(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO app_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
