"""Splitting a long answer into Discord messages without breaking paragraphs or code fences."""

from __future__ import annotations

import re

DISCORD_LIMIT = 2000
_FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")


def _open_fence(text: str) -> str | None:
    """The opening line of a code fence left open at the end of `text`, if any (e.g. "```python")."""
    opened: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if not match:
            continue
        if opened is None:
            opened = match.group(2) + match.group(3).strip()
        elif match.group(2).startswith(opened[:3]) and not match.group(3).strip():
            opened = None
    return opened


def _cut(text: str, limit: int) -> int:
    """Where to cut `text` (len > limit): the last paragraph break, else line break, else space, before limit."""
    window = text[:limit]
    for sep, min_pos in (("\n\n", limit // 3), ("\n", limit // 3), (" ", limit // 2)):
        pos = window.rfind(sep)
        if pos >= min_pos:
            return pos + len(sep)
    return limit


def split_message(text: str, limit: int = DISCORD_LIMIT) -> list[str]:
    """Parts of at most `limit` characters, cut on paragraph, line, then word boundaries.

    A part that ends inside a code fence is closed with ``` and the next part reopens the fence with
    the same language, so every part renders as valid markdown on its own.
    """
    text = text.strip()
    if not text:
        return []
    parts: list[str] = []
    reopen = ""
    while text:
        available = limit - len(reopen)
        if len(text) <= available:
            parts.append(reopen + text)
            break
        # Leave room for a closing fence if this part might end inside one.
        cut = _cut(text, available - 4)
        head, text = text[:cut].rstrip("\n "), text[cut:].lstrip("\n")
        part = reopen + head
        fence = _open_fence(part)
        if fence is not None:
            part += "\n```"
            reopen = fence + "\n"
        else:
            reopen = ""
        parts.append(part)
    return parts
