"""Words for a line a person reads (the terminal, `check`, `stats`, the admin log): the gist of a
connection error, and a count with its noun."""

from __future__ import annotations

import re

# What aiohttp and asyncio print of their objects: "ssl:<ssl.SSLContext object at 0x7f...>", "ssl:default",
# "[Connect call failed ('127.0.0.1', 1)]".
_NOISE = re.compile(r" ssl:(?:<[^<>]*>|\S+)| \[[^\]]*\]|<[^<>]* object at 0x[0-9a-fA-F]+>")


def first_line(exc: BaseException) -> str:
    """The first line of an error's text, without the SSL context and socket details it may print."""
    text = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _NOISE.sub("", text).strip() or type(exc).__name__


def plural(count: int, word: str, many: str | None = None) -> str:
    """'1 fact', '3 facts', '1,200 people'."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"
