"""Telling the bot directly: `/remember`, and "remember that ..." / "forget that ..." in words.

Both the command and a chat message the model recognises as an explicit request end here, so they
store, refuse and confirm alike. The bot confirms in its own words, never the model's: a reply can
only say something was remembered when it was, and a forget in words is never done silently, only
after the person confirms privately (Confirm/Cancel, as /forget does).
"""

from __future__ import annotations

import logging
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_bot.adminlog import plural
from bot.discord_bot.answers import Reply, answer
from bot.discord_bot.client import MemoryBot
from bot.discord_bot.cogs.memory_commands import ConfirmView, OwnerOnlyView, forgot_text
from bot.discord_bot.discord_text import speaker_name
from bot.memory.models import MAX_FACT_CHARS, Decision, Fact, Origin, guild_scope
from bot.memory.service import MemoryService

log = logging.getLogger(__name__)

REVIEW_TIMEOUT_SECONDS = 600.0
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
NOTHING_MATCHES = (
    "I don't have anything like that about you here. /facts shows what I remember, and /forget "
    "removes any of it."
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
    """Why nothing may be remembered for this person here, or None when it may."""
    if memory.is_opted_out(guild_scope(guild_id), str(user_id)):
        return OPTED_OUT
    if guild_id is not None:
        settings = memory.guild(str(guild_id))
        if not settings.memory_enabled:
            return MEMORY_OFF
        ignored = settings.ignored_channel_ids
        channels = [str(c) for c in (channel.id, getattr(channel, "parent_id", None)) if c is not None]
        for channel_id in channels:  # the channel itself, or the channel of its thread
            if channel_id in ignored:
                return IGNORED.format(channel=channel_id)
    return None


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

    `text` is their own words only; `pointer` and `asked` as in `MemoryService.remember_now`.
    """
    refused = refusal(memory, user.id, guild_id, channel)
    if refused is not None:
        return refused
    name = speaker_name(user)
    result = await memory.remember_now(
        guild_scope(guild_id),
        str(user.id),
        name,
        text,
        message_id=str(source_id),
        origin=origin_of(channel),
        pointer=pointer,
        asked=asked,
    )
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


def facts_list(facts: list[Fact]) -> str:
    return "\n".join(f"#{f.id} · {f.text}" for f in facts)


class ForgetRequest(OwnerOnlyView):
    """On a reply to "forget that ...": a button that shows its author, privately, what would be
    forgotten, with Confirm/Cancel. Nothing is forgotten before they confirm."""

    def __init__(self, memory: MemoryService, *, scope: str, owner_id: int, facts: list[Fact]) -> None:
        super().__init__(owner_id, timeout=REVIEW_TIMEOUT_SECONDS)
        self.memory = memory
        self.scope = scope
        self.facts = facts
        self.message: discord.Message | None = None

    async def on_timeout(self) -> None:
        await self.retire()

    async def retire(self) -> None:
        """Take the button off the reply: it expired, or the review it opens is done."""
        self.stop()
        if self.message is not None:
            try:
                await self.message.edit(view=None)
            except discord.HTTPException as exc:
                log.debug("could not remove a forget button: %s", exc)

    @discord.ui.button(
        label="Review privately", style=discord.ButtonStyle.secondary, custom_id="forgetwords:review"
    )
    async def review(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        ids = [f.id for f in self.facts]

        async def forget_them() -> str:
            count = await self.memory.forget(self.scope, str(self.owner_id), ids, actor=str(self.owner_id))
            await self.retire()  # confirmed: nothing is left to review
            return forgot_text(count) if count else "Those facts were already gone."

        view = ConfirmView(interaction, forget_them, confirm_label="Forget")
        question = f"Forget {plural(len(ids), 'fact')}? This can't be undone.\n{facts_list(self.facts)}"
        await interaction.response.send_message(question, view=view, ephemeral=True)


async def forget_request(
    memory: MemoryService, *, user: discord.abc.User, guild_id: int | None, text: str
) -> tuple[str, ForgetRequest | None]:
    """The reply to "forget that ...": a private review of the matching facts, or where to look."""
    scope = guild_scope(guild_id)
    facts = await memory.matching_facts(scope, str(user.id), text)
    if not facts:
        return NOTHING_MATCHES, None
    view = ForgetRequest(memory, scope=scope, owner_id=user.id, facts=facts)
    return (
        f"I found {plural(len(facts), 'fact')} of yours that may match. Nothing is forgotten until you "
        "confirm: press the button to review them privately.",
        view,
    )


class Telling(commands.Cog, name="telling"):
    """`/remember`: store something about yourself now, without waiting for the next flush."""

    def __init__(self, bot: MemoryBot) -> None:
        self.bot = bot

    @app_commands.command(name="remember", description="Tell me something about you to remember now")
    @app_commands.describe(text="What to remember about you, e.g. I'm vegetarian")
    async def remember(
        self, interaction: discord.Interaction, text: app_commands.Range[str, 1, MAX_FACT_CHARS]
    ) -> None:
        async def store() -> Reply:
            return Reply(
                await remember(
                    self.bot.memory,
                    user=interaction.user,
                    guild_id=interaction.guild_id,
                    channel=interaction.channel,
                    text=text,
                    source_id=interaction.id,
                )
            )

        await answer(interaction, store())


async def setup(bot: MemoryBot) -> None:
    await bot.add_cog(Telling(bot))
