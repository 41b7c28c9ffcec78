"""What a reply reads of the conversation: the turns Gemini is sent, and the query recall searches for."""

from __future__ import annotations

from collections.abc import Mapping

import discord

from bot.discord_text import speaker_name
from bot.llm.prompts import fit_turns
from bot.memory.ports import ChatTurn, TurnPart
from bot.memory.text import clean, strip_background_blocks

QUERY_TURNS = 3


def chat_turns(
    messages: list[discord.Message],
    *,
    me: discord.abc.User | None,
    turn_limit: int,
    room: int,
    attached: Mapping[int, list[TurnPart]] | None = None,
) -> list[ChatTurn]:
    """Gemini turns: people by name as user turns, the bot's (`me`) own messages as model turns, each
    person's message followed by its `attached` parts (images, files' text, notes).

    Each message is cut at `turn_limit` (CHAT_TURN_MAX_CHARS), and the oldest are left out once the turns'
    text would pass `room` characters (the newest message is always sent), so one huge message cannot make
    a huge and costly prompt; images are bounded by ATTACHMENTS_PER_PROMPT instead.
    """
    room = max(room, turn_limit)
    said: list[ChatTurn] = []
    for m in messages:
        text = clean(strip_background_blocks(m.clean_content), turn_limit)
        parts = list((attached or {}).get(m.id, ()))
        if not text and not parts:
            continue
        if me is not None and m.author.id == me.id:
            said.append(ChatTurn("model", text[:room]))
        else:
            said.append(ChatTurn("user", f"{speaker_name(m.author)}: {text}".rstrip()[:room], parts))
    return fit_turns(said, room)


def recall_query(
    message: discord.Message, messages: list[discord.Message], *, me: discord.abc.User | None
) -> tuple[str, str]:
    """What recall searches for: the message being answered (without the bot's own @mention, which says
    nothing about anyone), and the few human turns before it as context, so a short follow-up still finds
    what the talk is about without the talk drowning the question."""
    earlier = [
        m.clean_content
        for m in messages
        if m.id != message.id and not m.author.bot and m.clean_content.strip()
    ]
    text = message.clean_content
    if me is not None:
        for name in {me.display_name, me.name}:
            text = text.replace(f"@{name}", "")
    return text.strip()[:2000], "\n".join(earlier[-(QUERY_TURNS - 1) :])[-2000:]
