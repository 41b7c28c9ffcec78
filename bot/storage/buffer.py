"""The durable message buffer: captured messages waiting to be read by a flush.

A message counts as captured once it is committed here; a flush removes what it consumed in the same
transaction that writes its facts (`Store.apply_flush`). The bot's own replies are kept as context
(`is_bot`) and never counted as waiting.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from bot.memory.models import BufferedMessage, Origin, PendingChannel
from bot.storage.connection import Connected


def drop_pending_of(conn: sqlite3.Connection, scope: str, user_id: str) -> int:
    """Drop a person's buffered messages, and every buffered turn of the bot in the scope.

    The bot's replies are only context for extraction, but any of them may repeat what the person
    said or what was just forgotten, so they go too. Returns how many of the person's own messages
    were dropped.
    """
    drop_bot_turns(conn, scope)
    return conn.execute(
        "DELETE FROM pending_messages WHERE scope = ? AND author_id = ? AND is_bot = 0", (scope, user_id)
    ).rowcount


def drop_bot_turns(conn: sqlite3.Connection, scope: str) -> None:
    conn.execute("DELETE FROM pending_messages WHERE scope = ? AND is_bot = 1", (scope,))


def buffered_origin(conn: sqlite3.Connection, message_id: str) -> Origin | None:
    row = conn.execute(
        "SELECT channel_id, parent_channel_id, private_thread FROM pending_messages WHERE message_id = ?",
        (message_id,),
    ).fetchone()
    return Origin(row[0], row[1], bool(row[2])) if row else None


def buffered_texts(conn: sqlite3.Connection, message_ids: Iterable[str]) -> dict[str, str | None]:
    """Each message's buffered text as it is now; None for one that left the buffer."""
    texts: dict[str, str | None] = {}
    for mid in message_ids:
        row = conn.execute("SELECT content FROM pending_messages WHERE message_id = ?", (mid,)).fetchone()
        texts[mid] = row[0] if row is not None else None
    return texts


class Buffer(Connected):
    """Appending, editing, reading and dropping buffered messages."""

    def buffer_messages(self, messages: Sequence[tuple[BufferedMessage, float]]) -> int:
        """Append (message, captured_at) pairs in order; a message id seen before is ignored."""
        with self._tx():
            cur = self.conn.executemany(
                "INSERT OR IGNORE INTO pending_messages (message_id, scope, channel_id, author_id, author_name, "
                "is_bot, content, created_at, captured_at, parent_channel_id, reply_to, private_thread) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        m.message_id,
                        m.scope,
                        m.channel_id,
                        m.author_id,
                        m.author_name,
                        int(m.is_bot),
                        m.content,
                        m.created_at,
                        at,
                        m.parent_channel_id,
                        m.reply_to,
                        int(m.private_thread),
                    )
                    for m, at in messages
                ],
            )
        return cur.rowcount

    def update_pending_message(self, message_id: str, content: str) -> bool:
        with self._tx():
            return (
                self.conn.execute(
                    "UPDATE pending_messages SET content = ? WHERE message_id = ?", (content, message_id)
                ).rowcount
                > 0
            )

    def delete_pending_messages(self, message_ids: Sequence[str]) -> int:
        with self._tx():
            deleted = sum(
                self.conn.execute("DELETE FROM pending_messages WHERE message_id = ?", (mid,)).rowcount
                for mid in message_ids
            )
        if deleted:
            self.checkpoint()  # a deleted message's text must not linger in the WAL
        return deleted

    def drop_lone_bot_turns(self) -> int:
        """Drop the bot's buffered turns in channels with no person's message left to give them context.

        They are only ever read beside people's messages, and a restart would otherwise keep them forever.
        """
        with self._tx():
            return self.conn.execute(
                "DELETE FROM pending_messages WHERE is_bot = 1 AND channel_id NOT IN "
                "(SELECT channel_id FROM pending_messages WHERE is_bot = 0)"
            ).rowcount

    def pending_channels(self) -> list[PendingChannel]:
        rows = self.conn.execute(
            "SELECT channel_id, min(scope), count(*), min(captured_at), max(captured_at) FROM pending_messages "
            "WHERE is_bot = 0 GROUP BY channel_id"
        ).fetchall()
        return [PendingChannel(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def pending_messages(self, channel_id: str, limit: int) -> list[BufferedMessage]:
        """The oldest `limit` buffered messages of a channel, in arrival order."""
        rows = self.conn.execute(
            "SELECT message_id, scope, channel_id, author_id, author_name, content, created_at, is_bot, attempts, "
            "parent_channel_id, reply_to, private_thread FROM pending_messages WHERE channel_id = ? "
            "ORDER BY seq LIMIT ?",
            (channel_id, limit),
        ).fetchall()
        return [
            BufferedMessage(
                r[0], r[1], r[2], r[3], r[4], r[5], r[6], bool(r[7]), r[8], r[9], r[10], bool(r[11])
            )
            for r in rows
        ]

    def count_pending(self, scope: str | None = None) -> int:
        if scope is None:
            return self.conn.execute("SELECT count(*) FROM pending_messages WHERE is_bot = 0").fetchone()[0]
        return self.conn.execute(
            "SELECT count(*) FROM pending_messages WHERE is_bot = 0 AND scope = ?", (scope,)
        ).fetchone()[0]

    def mark_attempt(self, message_ids: Sequence[str]) -> None:
        with self._tx():
            self.conn.executemany(
                "UPDATE pending_messages SET attempts = attempts + 1 WHERE message_id = ?",
                [(m,) for m in message_ids],
            )
