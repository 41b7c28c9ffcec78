"""Facts as portable JSON: what `/memory export` hands a person and `facts export` writes for `facts import`,
and the reading of such a file back, one line at a time.

A record carries where the fact was learned (its sources with their channels) and when it was said
(`said_at`), so that moving to another instance keeps each fact with the audience it was told to and
its day; a fact without sources is treated on import as learned in the most private place, like any
fact whose origin is unknown.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.memory.models import (
    MAX_FACT_CHARS,
    Fact,
    NewFact,
    Origin,
    discord_id_time,
    is_discord_id,
    iso,
    valid_scope,
)
from bot.memory.text import clean, worth_reading


class UnreadableFile(Exception):
    """A JSONL file that cannot be read at all (missing, unreadable, UTF-16): one line says why."""


def fact_record(fact: Fact, user_name: str = "") -> dict[str, Any]:
    """One fact as a JSON object; `facts import` reads it back (its `id` and `status` are informative)."""
    return {
        "scope": fact.scope,
        "user_id": fact.user_id,
        "user_name": user_name,
        "id": fact.id,
        "text": fact.text,
        "status": str(fact.status),
        "superseded_by": fact.superseded_by,
        "sensitive": fact.sensitive,
        "said_at": fact.said_at,
        "recorded_at": fact.recorded_at,
        "updated_at": fact.updated_at,
        "valid_from": fact.valid_from,
        "sources": [
            {
                "message_id": s.message_id,
                "channel_id": s.origin.channel_id if s.origin else None,
                "parent_channel_id": s.origin.parent_channel_id if s.origin else None,
                "private_thread": bool(s.origin and s.origin.private_thread),
                "repeat": s.confirms,
            }
            for s in fact.sources
        ],
    }


def _id_or_none(value: Any, name: str) -> str | None:
    if value is None:
        return None
    text = str(value) if isinstance(value, str | int) and not isinstance(value, bool) else ""
    if not is_discord_id(text):
        raise ValueError(f"'{name}' of a source must be a Discord id or null")
    return text


def read_sources(value: Any) -> tuple[list[str], dict[str, Origin]]:
    """The message ids and where each was said, from a record's `sources` (absent: none known).

    Repeats are left out: they added no words, and where a fact may be used is decided by the messages
    that said it.
    """
    if value is None:
        return [], {}
    if not isinstance(value, list) or not all(isinstance(s, dict) for s in value):
        raise ValueError("'sources' must be a list of objects")
    ids: list[str] = []
    origins: dict[str, Origin] = {}
    for source in value:
        if source.get("repeat") is True:
            continue
        message_id = source.get("message_id")
        if not isinstance(message_id, str | int) or isinstance(message_id, bool) or not str(message_id):
            raise ValueError("every source needs a 'message_id'")
        ids.append(str(message_id))
        channel = _id_or_none(source.get("channel_id"), "channel_id")
        if channel is not None:
            origins[str(message_id)] = Origin(
                channel,
                _id_or_none(source.get("parent_channel_id"), "parent_channel_id"),
                source.get("private_thread") is True,
            )
    return ids, origins


def jsonl_objects(path: Path) -> Iterator[tuple[int, dict[str, Any] | ValueError]]:
    """(line number, object) for each non-blank line, or (line number, error) for a line that is not one.

    Lines are decoded one by one, so a single undecodable line is reported instead of spoiling the file.
    """
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise UnreadableFile(f"cannot read {path}: {exc.strerror or exc}") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                raise UnreadableFile(f"{path} is UTF-16 text; save it as UTF-8")
            item = _parse_line(raw, first=number == 1)
            if item is not None:
                yield number, item


def _parse_line(raw: bytes, *, first: bool = False) -> dict[str, Any] | ValueError | None:
    """One JSONL line as an object, a ValueError saying why it is not one, or None when it is blank."""
    try:
        text = raw.decode("utf-8-sig" if first else "utf-8")  # a BOM is what Windows editors write
    except UnicodeDecodeError as exc:
        return ValueError(f"not UTF-8 text (undecodable byte at column {exc.start + 1})")
    if not text.strip():
        return None
    try:
        item = json.loads(text)
    except RecursionError:
        return ValueError("not JSON: nested too deeply")
    except json.JSONDecodeError as exc:
        return ValueError(f"not JSON: {exc}")
    except ValueError:  # an integer longer than Python agrees to convert (4300 digits)
        return ValueError("not JSON: a number too long to read")
    return item if isinstance(item, dict) else ValueError("expected a JSON object")


def scope_field(item: dict[str, Any]) -> str:
    """A line's `scope`, or a ValueError naming the forms it may take."""
    scope = item.get("scope")
    if not isinstance(scope, str) or not valid_scope(scope):
        raise ValueError("'scope' must be guild:<id>, dm or terminal")
    return scope


def user_field(value: Any, name: str = "user_id") -> str:
    """A Discord user id written as a string or a number (spreadsheets and scripts write both)."""
    text = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    if not is_discord_id(text):
        raise ValueError(f"'{name}' must be a Discord user id (digits, as a string or a number)")
    return text


def _text_field(item: dict[str, Any]) -> str:
    raw = item.get("text")
    if not isinstance(raw, str) or not worth_reading(raw):
        raise ValueError("'text' must be a non-empty string")
    text = clean(raw, len(raw))
    if len(text) > MAX_FACT_CHARS:
        raise ValueError(f"'text' is {len(text)} characters, over the {MAX_FACT_CHARS} a fact may have")
    return text


def _time_field(item: dict[str, Any], name: str) -> str | None:
    """A record's time (ISO date or date and time, UTC unless it says otherwise) as `iso` writes it."""
    value = item.get(name)
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise ValueError(f"'{name}' must be an ISO date or time, such as 2026-11-25T18:30:00Z")
    return iso(moment if moment.tzinfo else moment.replace(tzinfo=UTC))


def read_import_lines(path: Path) -> tuple[list[tuple[int, NewFact]], list[str]]:
    """Parse a JSONL import file into (line number, fact); bad lines are reported by number, good ones kept."""
    facts: list[tuple[int, NewFact]] = []
    problems: list[str] = []
    for number, item in jsonl_objects(path):
        try:
            if isinstance(item, ValueError):
                raise item
            scope, user_id, text = scope_field(item), user_field(item.get("user_id")), _text_field(item)
            name = item.get("user_name")
            name = clean(str(name)) if isinstance(name, str | int) and not isinstance(name, bool) else ""
            if item.get("status", "active") != "active":
                raise ValueError("only active facts can be imported (this line is history)")
            sources, origins = read_sources(item.get("sources"))
            sensitive = item.get("sensitive", False)
            if not isinstance(sensitive, bool):
                raise ValueError("'sensitive' must be true or false")
            said_at = _time_field(item, "said_at")
            if said_at is None and not any(map(discord_id_time, sources)):  # else storage reads the ids
                said_at = _time_field(item, "recorded_at")  # learned then, so said no later
            fact = NewFact(
                scope, user_id, name, text, sources, origins=origins, sensitive=sensitive, said_at=said_at
            )
            facts.append((number, fact))
        except ValueError as exc:
            problems.append(f"{path}:{number}: {exc}")
    return facts, problems
