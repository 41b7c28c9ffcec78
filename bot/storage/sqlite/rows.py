"""Rows to the engine's models, read by column name.

A query whose rows become a model runs on `named(conn)`: a cursor whose rows are the driver's `Row`,
read by the names in the SELECT list (`row["text"]`), so a column added to or moved in a query cannot
shift what a model is built from. The connection itself keeps plain tuples for everyone else.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import fields
from typing import Any, NamedTuple, TypeVar

from bot.memory.models import BufferedMessage, Fact, FactStatus, GuildSettings, Origin, PendingChannel, Source
from bot.storage.sqlite.connection import row_type

Row = sqlite3.Row  # the driver's Row type (sqlean's or the standard one): indexed by column name
M = TypeVar("M")

FACT_COLUMNS = (
    "f.id, f.scope, f.user_id, f.text, f.status, f.superseded_by, f.valid_from, f.recorded_at, "
    "f.updated_at, f.retrieval_count, f.sensitive"
)
BUFFERED_COLUMNS = (
    "message_id, scope, channel_id, author_id, author_name, content, created_at, is_bot, attempts, "
    "parent_channel_id, reply_to, private_thread"
)


def named(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor whose rows are read by column name."""
    cursor = conn.cursor()
    cursor.row_factory = row_type(conn)
    return cursor


def select(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    """Every row of a query, read by column name."""
    return named(conn).execute(sql, params).fetchall()


def select_one(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> Row | None:
    """The first row of a query (None: no row), read by column name."""
    row: Row | None = named(conn).execute(sql, params).fetchone()
    return row


def scalar(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> Any:
    """The one value a one-column, one-row query (a count, a pragma) answers."""
    return conn.execute(sql, params).fetchone()[0]


def build(model: type[M], row: Row, **given: Any) -> M:
    """A model (a dataclass) from the row's columns named like its fields.

    `given`: the fields a column does not fill as it is (a flag stored as 0/1, an enum, the sources).
    """
    columns = set(row.keys())
    values = {f.name: row[f.name] for f in fields(model) if f.name in columns and f.name not in given}  # type: ignore[arg-type]
    return model(**values, **given)


def fact_from(row: Row, sources: tuple[Source, ...] = ()) -> Fact:
    """A fact from a row of FACT_COLUMNS."""
    return build(
        Fact, row, status=FactStatus(row["status"]), sensitive=bool(row["sensitive"]), sources=sources
    )


def origin_from(row: Row) -> Origin | None:
    """Where a message was said, from its channel_id, parent_channel_id and private_thread (None: unknown)."""
    if row["channel_id"] is None:
        return None
    return Origin(row["channel_id"], row["parent_channel_id"], bool(row["private_thread"]))


def sources_of(conn: sqlite3.Connection, fact_ids: Sequence[int]) -> dict[int, tuple[Source, ...]]:
    """Each fact's source messages with where they were said, in message order."""
    out: dict[int, list[Source]] = {}
    for start in range(0, len(fact_ids), 500):
        chunk = fact_ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row in named(conn).execute(
            "SELECT fact_id, message_id, confirms, channel_id, parent_channel_id, private_thread "
            f"FROM fact_sources WHERE fact_id IN ({marks}) ORDER BY message_id",
            chunk,
        ):
            source = Source(row["message_id"], origin_from(row), bool(row["confirms"]))
            out.setdefault(row["fact_id"], []).append(source)
    return {k: tuple(v) for k, v in out.items()}


def source_ids_of(conn: sqlite3.Connection, fact_ids: Sequence[int]) -> dict[int, tuple[str, ...]]:
    return {fid: tuple(s.message_id for s in found) for fid, found in sources_of(conn, fact_ids).items()}


def facts_from(conn: sqlite3.Connection, rows: Sequence[Row]) -> list[Fact]:
    """Facts from rows of FACT_COLUMNS, each with its sources."""
    sources = sources_of(conn, [row["id"] for row in rows])
    return [fact_from(row, sources.get(row["id"], ())) for row in rows]


def buffered_message_from(row: Row) -> BufferedMessage:
    """A buffered message from a row of BUFFERED_COLUMNS."""
    return build(BufferedMessage, row, is_bot=bool(row["is_bot"]), private_thread=bool(row["private_thread"]))


def pending_channel_from(row: Row) -> PendingChannel:
    """A channel's summary from a row of channel_id, scope, count, first_captured_at, last_captured_at."""
    return build(PendingChannel, row)


def guild_settings_from(row: Row) -> GuildSettings:
    return build(
        GuildSettings,
        row,
        memory_enabled=bool(row["memory_enabled"]),
        members_see_others=bool(row["members_see_others"]),
    )


def event_from(row: Row) -> dict[str, Any]:
    """An audit event as `events()` reports it: its columns by name, the detail parsed."""
    return {**dict(zip(row.keys(), row, strict=True)), "detail": json.loads(row["detail"])}


class Owner(NamedTuple):
    """Whose an active fact is, with its text and flag: what a flush checks a target against."""

    scope: str
    user_id: str
    text: str
    sensitive: bool


def owner_from(row: Row) -> Owner:
    return Owner(row["scope"], row["user_id"], row["text"], bool(row["sensitive"]))
