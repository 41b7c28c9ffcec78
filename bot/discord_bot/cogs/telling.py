"""`/remember`: telling the bot something about yourself, stored and confirmed as a "remember that ..."
in a chat message is (remember_request.py)."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_bot.answers import Reply, answer
from bot.discord_bot.client import MemoryBot
from bot.discord_bot.remember_request import remember_asked
from bot.memory.models import MAX_FACT_CHARS


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
            return Reply(await remember_asked(self.bot.memory, interaction, text))

        await answer(interaction, store())


async def setup(bot: MemoryBot) -> None:
    await bot.add_cog(Telling(bot))
