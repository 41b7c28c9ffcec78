"""Views only one person may use: everyone else is told so privately, and while the bot shuts down
(the database may already be closed) nobody's press is run."""

from __future__ import annotations

import logging
from typing import Any

import discord

from bot.discord_bot.client import RESTARTING
from bot.discord_bot.error_replies import report_error

log = logging.getLogger(__name__)

NOT_YOURS = "These buttons are not yours."


class OwnerOnlyView(discord.ui.View):
    """Controls only one person may use; anyone else is told so privately."""

    def __init__(self, owner_id: int, *, timeout: float) -> None:
        super().__init__(timeout=timeout)
        self.owner_id = owner_id

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        if getattr(interaction.client, "shutting_down", False):  # the database may already be closed
            await interaction.response.send_message(RESTARTING, ephemeral=True)
            return False
        if interaction.user.id == self.owner_id:
            return True
        await interaction.response.send_message(NOT_YOURS, ephemeral=True)
        return False

    async def on_error(self, interaction: discord.Interaction, error: Exception, item: Any, /) -> None:
        await report_error(interaction, error)


class OwnedView(OwnerOnlyView):
    """Buttons only the person who ran the command may press; on timeout they are disabled."""

    def __init__(self, origin: discord.Interaction, *, timeout: float) -> None:
        super().__init__(origin.user.id, timeout=timeout)
        self.origin = origin

    async def edit_origin(self, **changes: Any) -> None:
        """Edit the message this view was sent with (through the command's token, valid for 15 minutes)."""
        try:
            await self.origin.edit_original_response(**changes)
        except discord.HTTPException as exc:
            log.debug("could not edit an expired view's message: %s", exc)

    async def on_timeout(self) -> None:
        for item in self.children:
            if isinstance(item, discord.ui.Button):
                item.disabled = True
        await self.edit_origin(view=self)
