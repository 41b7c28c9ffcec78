"""The listings the commands page through: a person's (or the server's) facts, with a Correct menu on
one's own, and a server's episodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import discord

from bot.discord_bot.ui.episode_entries import episode_entry
from bot.discord_bot.ui.fact_entries import choice_name, fact_entry
from bot.discord_bot.ui.forms import fact_form
from bot.discord_bot.ui.pages import MAX_LISTED, Pager
from bot.memory.models import Episode, Fact
from bot.memory.service import MemoryService

EPISODES_PER_PAGE = 5


class FactsPager(Pager[Fact]):
    """A person's facts (or the server's community facts) with where each was learned; your own facts
    get a Correct menu.

    `visible` keeps only the facts the caller may see (someone else's facts only where the caller could
    read what was said); None shows them all.
    """

    def __init__(
        self,
        origin: discord.Interaction,
        memory: MemoryService,
        *,
        scope: str,
        subject_id: str,
        heading: str,
        empty: str,
        visible: Callable[[Fact], bool] | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(origin, name="facts", heading=heading, empty=empty, timeout=timeout)
        self.memory = memory
        self.scope = scope
        self.subject_id = subject_id
        self.visible = visible
        self.correctable = subject_id == str(origin.user.id)

    async def items(self) -> list[Fact]:
        facts = await self.memory.list_facts(self.scope, self.subject_id, limit=MAX_LISTED)
        return facts if self.visible is None else [f for f in facts if self.visible(f)]

    def entry(self, item: Fact) -> str:
        return fact_entry(item)

    def extras(self) -> list[discord.ui.Item[Any]]:
        return [CorrectMenu(self, self.shown)] if self.correctable and self.shown else []


class EpisodesPager(Pager[Episode]):
    """A server's episodes, newest first, each summary whole with a link to where it began: those of
    one channel (and its threads) when `channel_id` is given, ending after `since`, and `visible` to the
    caller; with their ids for admins."""

    noun = "episode"
    per_page = EPISODES_PER_PAGE

    def __init__(
        self,
        origin: discord.Interaction,
        memory: MemoryService,
        *,
        name: str,
        scope: str,
        visible: Callable[[Episode], bool],
        heading: str,
        empty: str,
        channel_id: str | None = None,
        since: str | None = None,
        with_ids: bool = False,
    ) -> None:
        super().__init__(origin, name=name, heading=heading, empty=empty)
        self.memory = memory
        self.scope = scope
        self.visible = visible
        self.channel_ids = None if channel_id is None else [channel_id]
        self.since = since
        self.with_ids = with_ids

    async def items(self) -> list[Episode]:
        episodes = await self.memory.list_episodes(
            self.scope, channel_ids=self.channel_ids, since=self.since, limit=MAX_LISTED
        )
        return [e for e in episodes if self.visible(e)]

    def entry(self, item: Episode) -> str:
        return episode_entry(item, with_id=self.with_ids)


class CorrectMenu(discord.ui.Select[FactsPager]):
    """Pick one of your facts on this page to fix its text."""

    def __init__(self, pager: FactsPager, facts: list[Fact]) -> None:
        super().__init__(
            custom_id="facts:correct",
            placeholder="Correct a fact…",
            options=[discord.SelectOption(label=choice_name(f), value=str(f.id)) for f in facts],
        )
        self.pager = pager

    async def callback(self, interaction: discord.Interaction) -> None:
        fact = next((f for f in self.pager.shown if str(f.id) == self.values[0]), None)
        if fact is None:
            await interaction.response.send_message("That fact is no longer on this page.", ephemeral=True)
            return
        await interaction.response.send_modal(fact_form(self.pager.memory, fact))
