"""Rows to the engine's models, read by column name.

A query whose rows become a model runs through `select` (`Database.select`): its rows are read by the
names in the SELECT list (`row["text"]`), so a column added to or moved in a query cannot shift what a
model is built from. `Database.execute` keeps plain tuples for everyone else.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields
from functools import cache
from typing import Any, NamedTuple, TypeVar

from bot.memory.models import (
    BufferedMessage,
    Episode,
    Fact,
    FactStatus,
    GuildSettings,
    Origin,
    PendingChannel,
    Point,
    Source,
)
from bot.storage.sql.database import Database, Row, SourceValues

M = TypeVar("M")

FACT_COLUMNS = (
    "f.id, f.scope, f.user_id, f.text, f.status, f.superseded_by, f.valid_from, f.recorded_at, "
    "f.updated_at, f.retrieval_count, f.sensitive, f.speaks_for_server, f.said_at"
)
# What `source_from` reads, from `fact_sources AS s`.
SOURCE_COLUMNS = "s.message_id, s.confirms, s.channel_id, s.parent_channel_id, s.private_thread, s.author_id"
EPISODE_COLUMNS = (
    "e.id, e.scope, e.channel_id, e.parent_channel_id, e.private_thread, e.summary, e.started_at, "
    "e.ended_at, e.recorded_at"
)
BUFFERED_COLUMNS = (
    "message_id, scope, channel_id, author_id, author_name, content, created_at, is_bot, attempts, "
    "parent_channel_id, reply_to, private_thread, decides"
)


def select(conn: Database, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    """Every row of a query, read by column name."""
    return conn.select(sql, params)


def select_one(conn: Database, sql: str, params: Sequence[Any] = ()) -> Row | None:
    """The first row of a query (None: no row), read by column name."""
    rows = conn.select(sql, params)
    return rows[0] if rows else None


def scalar(conn: Database, sql: str, params: Sequence[Any] = ()) -> Any:
    """The one value a one-column, one-row query (a count, a pragma) answers."""
    return conn.execute(sql, params).fetchone()[0]


def build(model: type[M], row: Row, **given: Any) -> M:
    """A model (a dataclass) from the row's columns named like its fields.

    `given`: the fields a column does not fill as it is (a flag stored as 0/1, an enum, the sources).
    """
    columns = set(row.keys())
    names = field_names(model)  # type: ignore[arg-type]
    values = {name: row[name] for name in names if name in columns and name not in given}
    return model(**values, **given)


@cache
def field_names(model: type) -> tuple[str, ...]:
    """A dataclass's field names, read once per class: `fields()` costs more than building a fact."""
    return tuple(f.name for f in fields(model))


# A fact's status by its column's value: a dict lookup, where calling the enum costs a microsecond.
STATUSES = {status.value: status for status in FactStatus}


def fact_from(row: Row, sources: tuple[Source, ...] = ()) -> Fact:
    """A fact from a row of FACT_COLUMNS, field by field, without `Fact.__init__`: a frozen dataclass
    sets each of its 14 fields through `object.__setattr__`, three times the cost of the rest of building
    one, and a recall builds a few dozen. Every field is set here (tests/unit/test_fact_rows.py checks
    that the fact equals the one its constructor builds), and `Fact` has no `__post_init__` to skip."""
    fact = object.__new__(Fact)
    fact.__dict__.update(
        id=row["id"],
        scope=row["scope"],
        user_id=row["user_id"],
        text=row["text"],
        status=STATUSES[row["status"]],
        superseded_by=row["superseded_by"],
        valid_from=row["valid_from"],
        recorded_at=row["recorded_at"],
        updated_at=row["updated_at"],
        retrieval_count=row["retrieval_count"],
        sources=sources,
        said_at=row["said_at"],
        sensitive=bool(row["sensitive"]),
        speaks_for_server=bool(row["speaks_for_server"]),
    )
    return fact


def origin_from(row: Row) -> Origin | None:
    """Where a message was said, from its channel_id, parent_channel_id and private_thread (None: unknown)."""
    return origin_of(row["channel_id"], row["parent_channel_id"], row["private_thread"])


def origin_of(channel_id: str | None, parent_channel_id: str | None, private_thread: int) -> Origin | None:
    """Where a message was said, from those columns' values (None: unknown)."""
    if channel_id is None:
        return None
    return Origin(channel_id, parent_channel_id, bool(private_thread))


def source_from(row: Row) -> Source:
    """A source from a row of fact_sources' message_id, confirms, author_id and where it was said."""
    return Source(row["message_id"], origin_from(row), bool(row["confirms"]), row["author_id"])


def sources_json(sources: Sequence[SourceValues]) -> str | None:
    """The text PostgreSQL's triggers write as a fact's copy of its `sources` (message order, as
    `json_agg` of `json_build_array` prints them; None without sources): `sources_in` reads it back."""
    if not sources:
        return None
    return json.dumps([list(s) for s in sorted(sources, key=lambda s: s[0])], ensure_ascii=False)


def sources_in(written: str | None) -> tuple[Source, ...]:
    """A fact's sources from PostgreSQL's copy of them in the fact's row (`facts.sources`: JSON arrays of
    SOURCE_COLUMNS' values in message order, None without sources), read as `source_from` reads a row."""
    if written is None:
        return ()
    return tuple(
        Source(message, origin_of(channel, parent, private), bool(confirms), author)
        for message, confirms, channel, parent, private, author in json.loads(written)
    )


def select_in(conn: Database, sql: str, values: Sequence[Any], before: Sequence[Any] = ()) -> list[Row]:
    """Every row of a query whose `IN ({marks})` takes `values` (after the parameters `before`), asked
    500 values at a time: a driver takes a limited number of parameters."""
    rows: list[Row] = []
    for start in range(0, len(values), 500):
        chunk = values[start : start + 500]
        rows += conn.select(sql.format(marks=",".join("?" * len(chunk))), [*before, *chunk])
    return rows


def sources_of(conn: Database, fact_ids: Sequence[int]) -> dict[int, tuple[Source, ...]]:
    """Each fact's source messages with where they were said, in message order."""
    out: dict[int, list[Source]] = {}
    for row in select_in(
        conn,
        f"SELECT s.fact_id, {SOURCE_COLUMNS} FROM fact_sources AS s WHERE s.fact_id IN ({{marks}}) "
        "ORDER BY s.message_id",
        fact_ids,
    ):
        out.setdefault(row["fact_id"], []).append(source_from(row))
    return {k: tuple(v) for k, v in out.items()}


def source_ids_of(conn: Database, fact_ids: Sequence[int]) -> dict[int, tuple[str, ...]]:
    return {fid: tuple(s.message_id for s in found) for fid, found in sources_of(conn, fact_ids).items()}


def facts_from(conn: Database, rows: Sequence[Row]) -> list[Fact]:
    """Facts from rows of FACT_COLUMNS, each with its sources."""
    sources = sources_of(conn, [row["id"] for row in rows])
    return [fact_from(row, sources.get(row["id"], ())) for row in rows]


def episodes_from(conn: Database, rows: Sequence[Row]) -> list[Episode]:
    """Episodes from rows of EPISODE_COLUMNS, each with its points (in order, each with its messages and
    their authors), its source messages (in message order) and its participants (their distinct
    authors, in that order)."""
    ids = [row["id"] for row in rows]
    sources: dict[int, list[Row]] = {}
    for source in select_in(
        conn,
        "SELECT episode_id, message_id, author_id FROM episode_sources WHERE episode_id IN ({marks}) "
        "ORDER BY message_id",
        ids,
    ):
        sources.setdefault(source["episode_id"], []).append(source)
    cited: dict[int, list[Row]] = {}
    for source in select_in(
        conn,
        "SELECT s.point_id, s.message_id, s.author_id FROM point_sources AS s, episode_points AS p "
        "WHERE p.id = s.point_id AND p.episode_id IN ({marks}) ORDER BY s.message_id",
        ids,
    ):
        cited.setdefault(source["point_id"], []).append(source)
    points: dict[int, list[Point]] = {}
    for point in select_in(
        conn,
        "SELECT id, episode_id, text FROM episode_points WHERE episode_id IN ({marks}) ORDER BY position, id",
        ids,
    ):
        its = cited.get(point["id"], [])
        points.setdefault(point["episode_id"], []).append(
            Point(
                point["id"],
                point["text"],
                tuple(s["message_id"] for s in its),
                tuple(dict.fromkeys(s["author_id"] for s in its)),
            )
        )
    return [
        build(
            Episode,
            row,
            origin=Origin(row["channel_id"], row["parent_channel_id"], bool(row["private_thread"])),
            participants=tuple(dict.fromkeys(s["author_id"] for s in sources.get(row["id"], ()))),
            source_message_ids=tuple(s["message_id"] for s in sources.get(row["id"], ())),
            points=tuple(points.get(row["id"], ())),
        )
        for row in rows
    ]


def buffered_message_from(row: Row) -> BufferedMessage:
    """A buffered message from a row of BUFFERED_COLUMNS."""
    return build(
        BufferedMessage,
        row,
        is_bot=bool(row["is_bot"]),
        private_thread=bool(row["private_thread"]),
        decides=bool(row["decides"]),
    )


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
    # keys(): a driver Row iterates over its values, a dict over its keys
    return {**{key: row[key] for key in row.keys()}, "detail": json.loads(row["detail"])}  # noqa: SIM118


class Owner(NamedTuple):
    """Whose an active fact is, with its text and flag: what a flush checks a target against."""

    scope: str
    user_id: str
    text: str
    sensitive: bool
    speaks_for_server: bool = False


def owner_from(row: Row) -> Owner:
    return Owner(
        row["scope"], row["user_id"], row["text"], bool(row["sensitive"]), bool(row["speaks_for_server"])
    )
