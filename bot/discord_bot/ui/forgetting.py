"""What forgetting looks like: the question before forgetting everything, what was forgotten, and the
private review a "forget that ..." in words offers (nothing is forgotten before its author confirms)."""

from __future__ import annotations

import logging
from typing import Any

import discord

from bot.discord_bot.adminlog import plural
from bot.discord_bot.answers import Reply
from bot.discord_bot.ui.confirm import ConfirmView
from bot.discord_bot.ui.owned import OwnerOnlyView
from bot.memory.models import Fact, guild_scope
from bot.memory.service import MemoryService

log = logging.getLogger(__name__)

REVIEW_TIMEOUT_SECONDS = 600.0
NOTHING_MATCHES = (
    "I don't have anything like that about you here. /facts shows what I remember, and /forget "
    "removes any of it."
)


async def forget_all(memory: MemoryService, scope: str, user_id: int, *, actor: str) -> str:
    """Forget everything of a person here; says how much as /facts counted it: '3 facts'.

    Superseded versions go too; they are named apart ('3 facts and 1 earlier version') so the number
    matches the one the confirmation question showed.
    """
    current = await memory.count_facts(scope, str(user_id))
    removed = await memory.forget(scope, str(user_id), None, actor=actor)
    earlier = removed - current
    return plural(current, "fact") + (f" and {plural(earlier, 'earlier version')}" if earlier > 0 else "")


async def forget_all_question(
    interaction: discord.Interaction, memory: MemoryService, scope: str, user_id: int, *, whom: str
) -> Reply:
    """'Forget everything I remember about <whom> (3 facts) ...?' with Confirm/Cancel; the caller acts."""
    count = await memory.count_facts(scope, str(user_id))

    async def forget_everything() -> str:
        return f"Forgot {await forget_all(memory, scope, user_id, actor=str(interaction.user.id))}."

    return Reply(
        f"Forget everything I remember about {whom} ({plural(count, 'fact')}), "
        "including messages I haven't read yet? This can't be undone.",
        ConfirmView(interaction, forget_everything, confirm_label="Forget everything"),
    )


def forgot_text(count: int, fact_id: int | None = None) -> str:
    """'Forgot 1 fact.'; a single fact's other versions go with it, which the text explains."""
    if fact_id is not None and count > 1:
        return f"Forgot {plural(count, 'fact')} (#{fact_id} and its other versions)."
    return f"Forgot {plural(count, 'fact')}."


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
