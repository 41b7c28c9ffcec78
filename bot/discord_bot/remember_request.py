"""Telling the bot directly: what `/remember` and a "remember that ..." in a chat message store.

Both the command and a chat message the model recognises as an explicit request end here, so they
store, refuse and confirm alike. The bot confirms in its own words, never the model's: a reply can
only say something was remembered when it was. (A "forget that ..." in words is never done silently
either: ui/forgetting.py offers its author a private review, with Confirm/Cancel as /forget has.)
"""

from __future__ import annotations

from typing import Any

import discord

from bot.discord_bot.discord_text import speaker_name
from bot.memory.models import Decision, Fact, Origin, guild_scope
from bot.memory.remembering import RememberRequest
from bot.memory.service import MemoryService
from bot.memory.switches import Reason

OPTED_OUT = "You're opted out here, so I don't remember things about you. /memory optin turns that back on."
MEMORY_OFF = "Memory is switched off in this server, so I can't remember anything here."
IGNORED = (
    "An admin set \"I won't remember messages in <#{channel}>\" (/memory-admin ignore), so I don't "
    "remember anything said here, this included."
)
NOTHING_TO_REMEMBER = (
    "I couldn't find anything about you in that to remember (I only keep what people tell me about "
    "themselves)."
)


def origin_of(channel: Any) -> Origin:
    """Where something said in `channel` was said (a thread knows its parent and whether it is private)."""
    kind = getattr(channel, "type", None)
    parent = getattr(channel, "parent_id", None)
    return Origin(
        str(channel.id),
        None if parent is None else str(parent),
        kind is discord.ChannelType.private_thread,
    )


def refusal(memory: MemoryService, user_id: int, guild_id: int | None, channel: Any) -> str | None:
    """Why nothing may be remembered for this person here (the engine's rule, in words), or None."""
    guild = None if guild_id is None else str(guild_id)
    around = () if guild is None else (channel.id, getattr(channel, "parent_id", None))  # a thread's too
    channels = [str(c) for c in around if c is not None]
    refused = memory.not_here(guild, channels, person=(guild_scope(guild_id), str(user_id)))
    if refused is None:
        return None
    if refused.reason is Reason.IGNORED:
        return IGNORED.format(channel=refused.channel_id)
    return OPTED_OUT if refused.reason is Reason.OPTED_OUT else MEMORY_OFF


def fact_mention(fact: Fact) -> str:
    """'#12: alice is vegetarian', or only the id for a sensitive fact, whose text stays out of channels."""
    if fact.sensitive:
        return f"#{fact.id} (sensitive: used only when I talk with you)"
    return f"#{fact.id}: {fact.text}"


async def remember(
    memory: MemoryService,
    *,
    user: discord.abc.User,
    guild_id: int | None,
    channel: Any,
    text: str,
    source_id: int,
    pointer: str = "",
    asked: bool = True,
) -> str:
    """Store what `user` asked to be remembered and say what became of it (ids included).

    `text` is their own words only; `pointer` and `asked` as in `RememberRequest`.
    """
    refused = refusal(memory, user.id, guild_id, channel)
    if refused is not None:
        return refused
    name = speaker_name(user)
    request = RememberRequest(
        guild_scope(guild_id),
        str(user.id),
        name,
        text,
        message_id=str(source_id),
        origin=origin_of(channel),
        pointer=pointer,
        asked=asked,
    )
    result = await memory.remember_now(request)
    lines = []
    for decision, fact in result.changes:
        if decision is Decision.DUPLICATE:
            lines.append(f"I already knew that: {fact_mention(fact)}")
        elif decision in (Decision.MERGE, Decision.INVALIDATE):
            lines.append(f"Updated what I knew: {fact_mention(fact)}")
        else:
            lines.append(f"I'll remember that: {fact_mention(fact)}")
    lines += [reason.told for reason in dict.fromkeys(result.refused)]
    if not lines:
        return NOTHING_TO_REMEMBER
    return "\n".join(lines) + ("\nSee everything with /facts." if result.changes else "")


async def remember_asked(
    memory: MemoryService,
    interaction: discord.Interaction,
    text: str,
    *,
    channel: Any = None,
    source_id: int | None = None,
) -> str:
    """`remember` for a command's caller: `/remember` (said in the command's channel, the interaction its
    source) or "Remember this" on their message (`channel` and `source_id` that message's)."""
    return await remember(
        memory,
        user=interaction.user,
        guild_id=interaction.guild_id,
        channel=interaction.channel if channel is None else channel,
        text=text,
        source_id=interaction.id if source_id is None else source_id,
    )
