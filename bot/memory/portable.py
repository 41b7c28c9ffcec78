"""Facts as portable JSON: what `/memory export` hands a person and `facts export` writes for `facts import`.

A record carries where the fact was learned (its sources with their channels), so that moving to
another instance keeps each fact with the audience it was told to; a fact without sources is treated
on import as learned in the most private place, like any fact whose origin is unknown.
"""

from __future__ import annotations

from typing import Any

from bot.memory.models import Fact, Origin, is_discord_id


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
