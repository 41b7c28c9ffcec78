"""What a reply reads of the conversation: the turns the chat model is sent, and the query recall searches for."""

from __future__ import annotations

from collections.abc import Mapping

import discord

from bot.discord_bot.discord_text import speaker_name
from bot.memory.model_ports import ChatTurn, TurnPart
from bot.memory.text import clean, strip_background_blocks


def said_turns(
    messages: list[discord.Message],
    *,
    me: discord.abc.User | None,
    turn_limit: int,
    attached: Mapping[int, list[TurnPart]] | None = None,
) -> list[ChatTurn]:
    """The chat's turns, oldest first: people by name as user turns, the bot's (`me`) own messages as model
    turns, each person's message followed by its `attached` parts (images, files' text, notes).

    Each message is cut at `turn_limit` (CHAT_TURN_MAX_CHARS), so one huge message cannot make a huge and
    costly prompt; the reply (`bot/chat/reply.py`) keeps the newest that fit its budget, and images are
    bounded by ATTACHMENTS_PER_PROMPT instead.
    """
    said: list[ChatTurn] = []
    for m in messages:
        text = clean(strip_background_blocks(m.clean_content), turn_limit)
        parts = list((attached or {}).get(m.id, ()))
        if not text and not parts:
            continue
        if me is not None and m.author.id == me.id:
            said.append(ChatTurn("model", text))
        else:
            said.append(ChatTurn("user", f"{speaker_name(m.author)}: {text}".rstrip(), parts))
    return said


def recall_query(
    message: discord.Message, messages: list[discord.Message], *, me: discord.abc.User | None
) -> tuple[str, list[str]]:
    """What recall searches for: the message being answered (without the bot's own @mention, which says
    nothing about anyone), and the human turns before it, of which the reply takes the last few as
    context, so a short follow-up still finds what the talk is about."""
    earlier = [
        m.clean_content
        for m in messages
        if m.id != message.id and not m.author.bot and m.clean_content.strip()
    ]
    text = message.clean_content
    if me is not None:
        for name in {me.display_name, me.name}:
            text = text.replace(f"@{name}", "")
    return text.strip(), earlier
