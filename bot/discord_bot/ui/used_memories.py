"""The quiet sign on a reply that used memory: a grey "Memories used" button. Pressed by the person the
reply answered, it shows them privately which memories it used (ids, texts, where each was learned), as
the reply's place may show them now; anyone else is told politely that it is not theirs to open.

The button is a dynamic item (its custom id carries the id of the message answered), so it still answers
after a restart, though the record of what was used is then gone (`reply_memories`).
"""

from __future__ import annotations

import re
from typing import Any, cast

import discord

from bot.discord_bot.client import RESTARTING, MemoryBot
from bot.discord_bot.discord_text import discord_time
from bot.discord_bot.error_replies import report_error
from bot.discord_bot.ui.fact_entries import fact_entry
from bot.memory.models import Episode, Fact

LABEL = "Memories used"
CUSTOM_ID = "memories:{trigger}"
NOT_THE_ASKER = "Only the person I was answering can see which memories this reply used."
NO_LONGER_KNOWN = (
    "I no longer know which memories that reply used: I keep that for a day, and not across a restart."
)
NONE_LEFT = "The memories this reply used are no longer held here (forgotten or changed since)."
SOME_GONE = "Some of them are no longer held here (forgotten or changed since)."
HEADING = "The memories I used for this reply:"
MESSAGE_CHARS = 2000


class UsedMemoriesButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=r"memories:(?P<trigger>[0-9]+)"
):
    """The sign, and the way to see what a reply used."""

    def __init__(self, trigger_id: int) -> None:
        super().__init__(
            discord.ui.Button(
                label=LABEL,
                style=discord.ButtonStyle.secondary,
                custom_id=CUSTOM_ID.format(trigger=trigger_id),
            )
        )
        self.trigger_id = trigger_id

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction,
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> UsedMemoriesButton:
        return cls(int(match["trigger"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        try:
            await interaction.response.send_message(await self.answer(interaction), ephemeral=True)
        except Exception as exc:
            await report_error(interaction, exc)

    async def answer(self, interaction: discord.Interaction) -> str:
        bot = cast(MemoryBot, interaction.client)
        if bot.shutting_down:  # the database may already be closed
            return RESTARTING
        record = bot.reply_memories.get(self.trigger_id)
        if record is not None and interaction.user.id != record.asker_id:
            return NOT_THE_ASKER
        if record is None:
            return NO_LONGER_KNOWN
        audience = await bot.audience.for_place(interaction.guild, interaction.channel, str(record.asker_id))
        facts, episodes = await bot.memory.used_memories(
            record.scope, record.fact_ids, record.episode_ids, audience=audience
        )
        return used_text(facts, episodes, missing=len(record.fact_ids) + len(record.episode_ids))


def used_text(facts: list[Fact], episodes: list[Episode], *, missing: int) -> str:
    """The answer: each fact as /facts lists it, each conversation by its id, channel and start, within
    one message; `missing` (the ids the reply used) tells whether some are no longer shown."""
    entries = [fact_entry(f) for f in facts] + [
        f"Conversation #{e.id} in <#{e.origin.channel_id}>, from {discord_time(e.started_at)}"
        for e in episodes
    ]
    if not entries:
        return NONE_LEFT
    lines = [HEADING, *entries]
    if len(entries) < missing:
        lines.append(SOME_GONE)
    text = "\n".join(lines)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def used_view(trigger_id: int) -> discord.ui.View:
    """The view a reply that used memory carries: the button alone."""
    view = discord.ui.View(timeout=None)
    view.add_item(UsedMemoriesButton(trigger_id))
    return view
