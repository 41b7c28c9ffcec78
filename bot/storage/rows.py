"""Rows to the engine's models: the columns a fact is read with, and its sources."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from bot.memory.models import Fact, FactStatus, Origin, Source

FACT_COLUMNS = (
    "f.id, f.scope, f.user_id, f.text, f.status, f.superseded_by, f.valid_from, f.recorded_at, "
    "f.updated_at, f.retrieval_count, f.sensitive"
)


def fact_from(row: Sequence[Any], sources: tuple[Source, ...] = ()) -> Fact:
    return Fact(
        id=row[0],
        scope=row[1],
        user_id=row[2],
        text=row[3],
        status=FactStatus(row[4]),
        superseded_by=row[5],
        valid_from=row[6],
        recorded_at=row[7],
        updated_at=row[8],
        retrieval_count=row[9],
        sources=sources,
        sensitive=bool(row[10]),
    )


def sources_of(conn: sqlite3.Connection, fact_ids: Sequence[int]) -> dict[int, tuple[Source, ...]]:
    """Each fact's source messages with where they were said, in message order."""
    out: dict[int, list[Source]] = {}
    for start in range(0, len(fact_ids), 500):
        chunk = fact_ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for fid, mid, confirms, channel, parent, private in conn.execute(
            "SELECT fact_id, message_id, confirms, channel_id, parent_channel_id, private_thread "
            f"FROM fact_sources WHERE fact_id IN ({marks}) ORDER BY message_id",
            chunk,
        ):
            origin = None if channel is None else Origin(channel, parent, bool(private))
            out.setdefault(fid, []).append(Source(mid, origin, bool(confirms)))
    return {k: tuple(v) for k, v in out.items()}


def source_ids_of(conn: sqlite3.Connection, fact_ids: Sequence[int]) -> dict[int, tuple[str, ...]]:
    return {fid: tuple(s.message_id for s in found) for fid, found in sources_of(conn, fact_ids).items()}
