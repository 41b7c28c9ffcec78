"""A tool call's arguments, read and bounded by the bot, refused in one short line.

The tools declare their arguments' shapes for clients (`schema`), but take them as they come: a value of
the wrong type, too long or too many is refused by these readers as a `ConsultError`, one line that
quotes at most a short prefix of what was sent, rather than by pydantic, whose multi-line errors (with
links) would reach the client, and a 100 kB name would come back whole.
"""

from __future__ import annotations

from typing import Any

from bot.memory.consult import ConsultError

SHOWN_CHARS = 40  # of a refused value, quoted back


def shown(value: Any) -> str:
    """A refused value as the error quotes it: its first SHOWN_CHARS characters, cut with an ellipsis."""
    try:
        text = value if isinstance(value, str) else repr(value)
    except ValueError:  # an int past Python's 4,300 digits cannot even be written
        return "a number too long to read"
    return repr(text[:SHOWN_CHARS] + "…") if len(text) > SHOWN_CHARS else repr(text)


def text(value: Any, name: str, limit: int, *, required: bool = False) -> str | None:
    """A text argument of at most `limit` characters (None when not given and not `required`)."""
    if value is None or (isinstance(value, str) and not value.strip() and not required):
        if required:
            raise ConsultError(f"{name} is missing")
        return None
    if not isinstance(value, str):
        raise ConsultError(f"{name} must be text, not {type(value).__name__}")
    if len(value) > limit:
        raise ConsultError(f"{name} is {len(value):,} characters; at most {limit:,}: {shown(value)}")
    return value


def texts(value: Any, name: str, limit: int, most: int) -> list[str]:
    """A list of at most `most` texts of at most `limit` characters each (empty when not given)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConsultError(f"{name} must be a list")
    if len(value) > most:
        raise ConsultError(f"{name} has {len(value):,} items; at most {most}")
    return [t for item in value if (t := text(item, f"an item of {name}", limit)) is not None]


def number(value: Any, name: str, default: int, most: int) -> int:
    """A whole number from 1 to `most` (`default` when not given)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ConsultError(f"{name} must be a whole number from 1 to {most:,}, not {shown(value)}")
    return value


def ids(value: Any, most: int) -> list[int | str]:
    """The ids a client asks for: a list of at most `most` numbers or short texts (read by `parse_ids`)."""
    if not isinstance(value, list):
        raise ConsultError('ids must be a list, such as ["f12", "e7"]')
    if len(value) > most:
        raise ConsultError(f"at most {most} ids at a time")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise ConsultError(f"{shown(item)} is not an id: ids are as recall returns them, f12 or e7")
    return list(value)


def schema(kind: str, description: str, **more: Any) -> dict[str, Any]:
    """What a client is told an argument is (a JSON schema fragment), the bot's own reading aside."""
    return {"type": kind, "description": description, **more}
