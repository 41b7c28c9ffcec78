"""Discord text: people's names as the bot writes them, times in each reader's time zone, and splitting
a long answer into messages without breaking paragraphs or code fences."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import discord

from bot.memory.text import clean

DISCORD_LIMIT = 2000
# Trails the last part of a reply while it streams (as llmcord shows it); the last edit removes it.
STREAMING_MARKER = " ⚪"
_FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$", re.M)


def speaker_name(user: Any) -> str:
    """A member's display name (or user name), cleaned like message text: names reach prompts and files."""
    return clean(getattr(user, "display_name", None) or user.name) or str(user.id)


def display_name(user: discord.abc.User) -> str:
    """A name safe to put in bold text (markdown escaped; mentions never ping in our messages anyway)."""
    return discord.utils.escape_markdown(getattr(user, "display_name", None) or user.name)


def discord_time(moment: str, style: str = "f") -> str:
    """A stored ISO time as Discord's timestamp markup, which each reader sees in their own time zone."""
    return f"<t:{int(datetime.fromisoformat(moment).timestamp())}:{style}>"


def _open_fence(text: str) -> tuple[str, str] | None:
    """The fence left open at the end of `text`, as (marker, info), e.g. ("```", "python"), if any.

    As in CommonMark: a fence closes only with a bare line of the same character at least as long
    (so "```" inside a "````" block is content), and a backtick line with more backticks after the
    marker ("```x```") is inline code, not a fence.
    """
    opened: tuple[str, str] | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if not match:
            continue
        marker, info = match.group(2), match.group(3).strip()
        if opened is None:
            if not (marker[0] == "`" and "`" in info):
                opened = (marker, info)
        elif marker[0] == opened[0][0] and len(marker) >= len(opened[0]) and not info:
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
    # Room for the longest closing fence this text could need ("\n" + marker).
    reserve = 1 + max((len(m.group(2)) for m in _FENCE.finditer(text)), default=3)
    parts: list[str] = []
    reopen = ""
    while text:
        available = limit - len(reopen)
        if len(text) <= available:
            parts.append(reopen + text)
            break
        cut = _cut(text, available - reserve)
        head, text = text[:cut].rstrip("\n "), text[cut:].lstrip("\n")
        part = reopen + head
        fence = _open_fence(part)
        if fence is not None:
            marker, info = fence
            part += "\n" + marker
            reopen = marker + info + "\n"
        else:
            reopen = ""
        parts.append(part)
    return parts


def streaming_parts(text: str, *, final: bool) -> tuple[list[str], list[str]]:
    """The parts of a reply as shown and as said: while it streams (`final` False) the shown last part
    ends with STREAMING_MARKER. Both are cut with room for the marker, so no part changes its cut when
    the marker goes, and the said parts (what memory keeps) never hold it."""
    said = split_message(text, DISCORD_LIMIT - len(STREAMING_MARKER))
    shown = list(said)
    if shown and not final:
        shown[-1] += STREAMING_MARKER
    return shown, said
