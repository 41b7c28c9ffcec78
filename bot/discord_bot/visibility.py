"""What the caller of a command may see of others: someone else's facts, and episodes and community
facts, only where they could read what they were made from (the audience rule, from current
permissions)."""

from __future__ import annotations

from collections.abc import Callable

import discord

from bot.discord_bot.audience import Said
from bot.discord_bot.client import MemoryBot
from bot.memory.models import Fact


def may_view_facts(
    *, caller_id: int, subject_id: int, in_guild: bool, manage_guild: bool, members_see_others: bool
) -> bool:
    """Your own facts always; someone else's only in a server, for managers or where the server allows it."""
    if caller_id == subject_id:
        return True
    return in_guild and (manage_guild or members_see_others)


def readable_by(bot: MemoryBot, interaction: discord.Interaction) -> Callable[[Fact], bool]:
    """Which of someone else's facts the caller may see: not sensitive ones, and only those said where
    the caller can read."""
    guild, member = interaction.guild, interaction.user
    if guild is None or not isinstance(member, discord.Member):
        return lambda fact: False
    return lambda fact: not fact.sensitive and bot.audience.member_can_read(guild, member, fact)


def readable_here(bot: MemoryBot, interaction: discord.Interaction) -> Callable[[Said], bool]:
    """Whether the caller can read, now, where an episode or a community fact was said: every such place,
    or the very channel they ask in (a private thread's own episodes, to those who can ask there)."""
    guild, member = interaction.guild, interaction.user
    if guild is None or not isinstance(member, discord.Member):
        return lambda said: False
    here = frozenset({str(interaction.channel_id)})
    return lambda said: said.audience_keys == here or bot.audience.member_can_read(guild, member, said)
