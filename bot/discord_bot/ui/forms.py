"""The forms (modals) that correct a text in place: one's own fact, a community fact, an episode's
summary. The old words leave no trace; what a form cannot take is refused with the reason."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import discord

from bot.discord_bot.answers import Reply, answer
from bot.discord_bot.discord_text import speaker_name
from bot.discord_bot.error_replies import report_error
from bot.memory.community import MAX_SUMMARY_CHARS
from bot.memory.models import COMMUNITY_ID, COMMUNITY_NAME, MAX_FACT_CHARS, Episode, Fact
from bot.memory.service import MemoryService
from bot.memory.shared import also_removed


class CorrectText(discord.ui.Modal):
    """A text to edit, prefilled; on submit `apply` replaces it (the old words leave no trace) and its
    answer is shown, or why nothing was changed when it refuses the text (ValueError)."""

    def __init__(
        self,
        *,
        title: str,
        label: str,
        text: str,
        max_length: int,
        apply: Callable[[discord.Interaction, str], Awaitable[str]],
    ) -> None:
        super().__init__(title=title, custom_id="correct:modal")
        self.apply = apply
        self.text: discord.ui.TextInput[CorrectText] = discord.ui.TextInput(
            label=label,
            custom_id="correct:text",
            style=discord.TextStyle.paragraph,
            default=text,
            max_length=max_length,
        )
        self.add_item(self.text)

    async def on_submit(self, interaction: discord.Interaction, /) -> None:
        async def correct() -> Reply:
            try:
                return Reply(await self.apply(interaction, self.text.value))
            except ValueError as exc:  # empty, or longer than it may be
                return Reply(f"{str(exc).capitalize()}; nothing was changed.")

        await answer(interaction, correct())

    async def on_error(self, interaction: discord.Interaction, error: Exception, /) -> None:  # type: ignore[override]  # a modal's errors come without an item
        await report_error(interaction, error)


def fact_form(
    memory: MemoryService,
    fact: Fact,
    *,
    community: bool = False,
    corrected: Callable[[Fact, str], None] | None = None,
) -> CorrectText:
    """The form that corrects one of the submitter's own facts, or (`community`) a community fact;
    `corrected` hears of each correction made, with what else went in words (episode points made from
    the same messages, `shared.also_removed`)."""

    async def correct(interaction: discord.Interaction, text: str) -> str:
        owner, name = (
            (COMMUNITY_ID, COMMUNITY_NAME)
            if community
            else (str(interaction.user.id), speaker_name(interaction.user))
        )
        # The episode points made from the same messages go with the old words: counted before they do.
        also = also_removed(await memory.points_made_from(fact.scope, fact.id)) if community else ""
        fixed = await memory.correct_fact(fact.scope, owner, name, fact.id, text)
        if fixed is None:
            whose = "a community fact" if community else "one of yours"
            return f"Fact #{fact.id} is no longer {whose} here; nothing was changed."
        if corrected is not None:
            corrected(fixed, also)
        return f"Corrected #{fixed.id}: {fixed.text}" + (f"\nAlso removed {also}." if also else "")

    return CorrectText(
        title="Correct a fact",
        label=f"Fact #{fact.id}",
        text=fact.text,
        max_length=MAX_FACT_CHARS,
        apply=correct,
    )


def episode_form(
    memory: MemoryService, episode: Episode, *, corrected: Callable[[Episode], None]
) -> CorrectText:
    """The form that corrects an episode's summary (an admin's); `corrected` hears of the correction."""

    async def correct(interaction: discord.Interaction, text: str) -> str:
        fixed = await memory.correct_episode(episode.scope, episode.id, text, actor=str(interaction.user.id))
        if fixed is None:
            return f"Episode #{episode.id} is no longer here; nothing was changed."
        corrected(fixed)
        return f"Corrected episode #{fixed.id}:\n{fixed.summary}"

    return CorrectText(
        title="Correct an episode",
        label=f"Episode #{episode.id}",
        text=episode.summary,
        max_length=MAX_SUMMARY_CHARS,
        apply=correct,
    )
