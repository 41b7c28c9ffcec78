"""A one-shot confirmation before something that cannot be undone (a forget, an opt-out's forget)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import discord

from bot.discord_bot.answers import Reply, answer
from bot.discord_bot.ui.owned import OwnedView

CONFIRM_TIMEOUT_SECONDS = 60.0
NOTHING_FORGOTTEN = "Nothing was forgotten."
NOTHING_FORGOTTEN_TIMEOUT = "Nothing was forgotten (timed out)."


class ConfirmView(OwnedView):
    """A one-shot confirmation: on confirm `action` runs and its text replaces the message.

    Cancel (if offered) says nothing was forgotten; on timeout the buttons go away and the message becomes
    `timeout_content` (or stays as it was when that is None).
    """

    def __init__(
        self,
        origin: discord.Interaction,
        action: Callable[[], Awaitable[str]],
        *,
        confirm_label: str,
        confirm_id: str = "forget:confirm",
        cancel_id: str | None = "forget:cancel",
        timeout_content: str | None = NOTHING_FORGOTTEN_TIMEOUT,
        timeout: float | None = None,
    ) -> None:
        super().__init__(origin, timeout=timeout if timeout is not None else CONFIRM_TIMEOUT_SECONDS)
        self.action = action
        self.timeout_content = timeout_content
        confirm: discord.ui.Button[Any] = discord.ui.Button(
            label=confirm_label, style=discord.ButtonStyle.danger, custom_id=confirm_id
        )
        confirm.callback = self._confirm  # type: ignore[method-assign]
        self.add_item(confirm)
        if cancel_id is not None:
            cancel: discord.ui.Button[Any] = discord.ui.Button(
                label="Cancel", style=discord.ButtonStyle.secondary, custom_id=cancel_id
            )
            cancel.callback = self._cancel  # type: ignore[method-assign]
            self.add_item(cancel)

    async def _confirm(self, interaction: discord.Interaction) -> None:
        self.stop()

        async def done() -> Reply:
            return Reply(await self.action())

        await answer(interaction, done(), update=True)

    async def _cancel(self, interaction: discord.Interaction) -> None:
        self.stop()
        await interaction.response.edit_message(content=NOTHING_FORGOTTEN, view=None)

    async def on_timeout(self) -> None:
        if self.timeout_content is None:
            await self.edit_origin(view=None)
        else:
            await self.edit_origin(content=self.timeout_content, view=None)
