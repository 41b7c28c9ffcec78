"""The command tree's error handler: `error_replies.report_error`, installed while this cog is loaded."""

from __future__ import annotations

from typing import Any

from discord.ext import commands

from bot.discord_bot.error_replies import report_error


class Errors(commands.Cog, name="errors"):
    """Installs `report_error` as the command tree's error handler while loaded."""

    def __init__(self, bot: commands.Bot) -> None:
        self.bot = bot
        self._previous: Any = None

    async def cog_load(self) -> None:
        self._previous = self.bot.tree.on_error
        self.bot.tree.error(report_error)

    async def cog_unload(self) -> None:
        self.bot.tree.error(self._previous)


async def setup(bot: commands.Bot) -> None:
    await bot.add_cog(Errors(bot))
