"""The durable message buffer: captured messages waiting to be read by a flush.

A message counts as captured once it is committed here; a flush removes what it consumed in the same
transaction that writes its facts (`Store.apply_flush`). The bot's own replies are kept as context
(`is_bot`) and never counted as waiting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bot.memory.models import BufferedMessage, Origin, PendingChannel
from bot.storage.sql.database import Connected, Database
from bot.storage.sql.rows import (
    BUFFERED_COLUMNS,
    buffered_message_from,
    origin_from,
    pending_channel_from,
    scalar,
    select,
    select_in,
    select_one,
)


def drop_pending_of(conn: Database, scope: str, user_id: str) -> int:
    """Drop a person's buffered messages, and every buffered turn of the bot in the scope.

    The bot's replies are only context for extraction, but any of them may repeat what the person
    said or what was just forgotten, so they go too. Returns how many of the person's own messages
    were dropped.
    """
    drop_bot_turns(conn, scope)
    return conn.execute(
        "DELETE FROM pending_messages WHERE scope = ? AND author_id = ? AND is_bot = 0", (scope, user_id)
    ).rowcount


def drop_bot_turns(conn: Database, scope: str) -> None:
    conn.execute("DELETE FROM pending_messages WHERE scope = ? AND is_bot = 1", (scope,))


def buffered_source(conn: Database, message_id: str) -> tuple[Origin | None, str | None]:
    """Where a buffered message was said and who said it ((None, None): it is not in the buffer)."""
    row = select_one(
        conn,
        "SELECT channel_id, parent_channel_id, private_thread, author_id FROM pending_messages "
        "WHERE message_id = ?",
        (message_id,),
    )
    return (origin_from(row), row["author_id"]) if row else (None, None)


def buffered_times(conn: Database, message_ids: Iterable[str]) -> dict[str, str]:
    """When each of these messages that is still buffered was sent (one that left the buffer is absent)."""
    return _buffered(conn, message_ids, "created_at")


def buffered_authors(conn: Database, message_ids: Iterable[str]) -> dict[str, str]:
    """The author of each of these messages that is still buffered (one that left the buffer is absent)."""
    return _buffered(conn, message_ids, "author_id")


def _buffered(conn: Database, message_ids: Iterable[str], column: str) -> dict[str, str]:
    """One column of each of these messages that is still buffered, by message id."""
    rows = select_in(
        conn,
        f"SELECT message_id, {column} FROM pending_messages WHERE message_id IN ({{marks}})",
        list(message_ids),
    )
    return {r["message_id"]: r[column] for r in rows}


def buffered_texts(conn: Database, message_ids: Iterable[str]) -> dict[str, str | None]:
    """Each message's buffered text as it is now; None for one that left the buffer."""
    texts: dict[str, str | None] = {}
    for mid in message_ids:
        row = select_one(conn, "SELECT content FROM pending_messages WHERE message_id = ?", (mid,))
        texts[mid] = row["content"] if row is not None else None
    return texts


def _forgotten_at(message: BufferedMessage, marks: dict[str, dict[str, str]]) -> str:
    """The forget-all a message must be newer than to be kept: its author's in its scope, or for a turn
    of the bot's the latest of anyone's there (it may repeat what was forgotten, as `drop_pending_of`
    says); "" when there is none."""
    here = marks.get(message.scope, {})
    return max(here.values(), default="") if message.is_bot else here.get(message.author_id, "")


class Buffer(Connected):
    """Appending, editing, reading and dropping buffered messages."""

    def buffer_messages(self, messages: Sequence[tuple[BufferedMessage, float]]) -> int:
        """Append (message, captured_at) pairs in order; a message id seen before is ignored, and so is one
        its author said before they last asked to forget everything there (`forget_marks`: the forget
        may have run in another process while this one still held the message)."""
        with self._tx():
            marks = self._forget_marks(sorted({m.scope for m, _ in messages}))
            messages = [(m, at) for m, at in messages if m.created_at > _forgotten_at(m, marks)]
            if not messages:
                return 0
            cur = self.conn.executemany(
                "INSERT INTO pending_messages (message_id, scope, channel_id, author_id, author_name, "
                "is_bot, content, created_at, captured_at, parent_channel_id, reply_to, private_thread, decides) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING",
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
                        int(m.decides),
                    )
                    for m, at in messages
                ],
            )
        return cur.rowcount

    def _forget_marks(self, scopes: Sequence[str]) -> dict[str, dict[str, str]]:
        """When each person of these scopes last asked to forget everything there, by scope and person."""
        marks: dict[str, dict[str, str]] = {}
        for row in select_in(
            self.conn, "SELECT scope, user_id, at FROM forget_marks WHERE scope IN ({marks})", scopes
        ):
            marks.setdefault(row["scope"], {})[row["user_id"]] = row["at"]
        return marks

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
            self._scrub()  # a deleted message's text must not linger in the files
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
        rows = select(
            self.conn,
            "SELECT channel_id, min(scope) AS scope, count(*) AS count, min(captured_at) AS first_captured_at, "
            "max(captured_at) AS last_captured_at FROM pending_messages WHERE is_bot = 0 GROUP BY channel_id",
        )
        return [pending_channel_from(r) for r in rows]

    def pending_messages(self, channel_id: str, limit: int) -> list[BufferedMessage]:
        """The oldest `limit` buffered messages of a channel, in arrival order."""
        rows = select(
            self.conn,
            f"SELECT {BUFFERED_COLUMNS} FROM pending_messages WHERE channel_id = ? ORDER BY seq LIMIT ?",
            (channel_id, limit),
        )
        return [buffered_message_from(r) for r in rows]

    def count_pending(self, scope: str | None = None) -> int:
        count: int
        if scope is None:
            count = scalar(self.conn, "SELECT count(*) FROM pending_messages WHERE is_bot = 0")
        else:
            count = scalar(
                self.conn, "SELECT count(*) FROM pending_messages WHERE is_bot = 0 AND scope = ?", (scope,)
            )
        return count

    def mark_attempt(self, message_ids: Sequence[str]) -> None:
        with self._tx():
            self.conn.executemany(
                "UPDATE pending_messages SET attempts = attempts + 1 WHERE message_id = ?",
                [(m,) for m in message_ids],
            )
