"""`/help` and the welcome: what the bot remembers, where, and how people see, correct and erase it.

Members otherwise learn of `!nomem`, opting out and the recap only from the README. Both texts are built
from what is in force (the no-memory marker, whether community memory is on), so they stay true.
"""

from __future__ import annotations

import logging

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_bot.client import MemoryBot
from bot.discord_bot.menu_names import FORGET_TAUGHT, REMEMBER_THIS

log = logging.getLogger(__name__)


def help_text(bot_name: str, *, marker: str, community: bool) -> str:
    """The /help answer: what is remembered and where, the commands to see, correct and erase it."""
    shared = ", and what the channels talk about and decide" if community else ""
    lines = [
        f"**What {bot_name} remembers**",
        f"What people say about themselves in the channels I can read{shared}, learned in the background "
        "from ordinary chat. Each server is kept apart, and DMs too; something said in a channel is used "
        "only in replies everyone there could read. Sensitive things (health, beliefs, money, contact "
        "details ...) only when you ask me, and only in replies to you.",
        "",
        "**See, correct and erase it**",
        "`/facts`: what I remember about you here, where each was learned; its menu corrects one",
        "`/forget fact` · `/forget all`: erase one of your facts, or everything about you here",
        "`/remember <text>` (or “@me remember that ...”): tell me something about you now",
        "`/memory export`: a file of everything I hold about you here",
        f"On a message of yours, *Apps* › *{REMEMBER_THIS}* or *{FORGET_TAUGHT}* (admins may use the "
        "latter on anyone's, for what the server's shared memory made of it)",
        "",
        "**Keep things out**",
        f"Start a message with `{marker}` and I won't remember it; deleting a message takes back what I "
        "learned from it",
        "`/memory optout`: stop remembering you here (`/memory optin` undoes it); `/memory status`: "
        "where you stand",
    ]
    if community:
        lines += [
            "",
            "**What was discussed**",
            "`/memory recap [channel] [since]`: what the channels you can read talked about, with links",
        ]
    lines += [
        "",
        "**Chat with me**: mention me, reply to me, or DM me.",
        "**Admins** (Manage Server): `/memory-admin` sets the log channel, ignored channels and personas, "
        "and lists, corrects and forgets what the server's memory holds.",
        "**More**: the bot's README (*What it does*); server admins read a log of what is learned and "
        "forgotten (names and counts, never the texts).",
    ]
    return "\n".join(lines)


def welcome_text(bot_name: str, *, marker: str, community: bool) -> str:
    """The three lines posted when the bot joins a server: /help in short."""
    shared = " and what channels decide" if community else ""
    return "\n".join(
        [
            f"Hi, I'm {bot_name}. Mention me to chat; I remember what people here say about themselves"
            f"{shared}, to answer better later.",
            f"Your memory is yours: `/facts` shows it, `/forget` erases it, `/memory optout` stops it, and a "
            f"message starting with `{marker}` is never remembered.",
            "`/help` says more, privately.",
        ]
    )


class Help(commands.Cog, name="help"):
    """`/help`, and the welcome in a server's system channel when the bot joins it."""

    def __init__(self, bot: MemoryBot) -> None:
        self.bot = bot

    def _name(self) -> str:
        return self.bot.user.display_name if self.bot.user is not None else "the memory bot"

    @app_commands.command(name="help", description="What I remember, and how to see, correct and erase it")
    async def help(self, interaction: discord.Interaction) -> None:
        policy = self.bot.memory.policy
        text = help_text(self._name(), marker=policy.no_memory_marker, community=policy.community)
        await interaction.response.send_message(text, ephemeral=True)

    @commands.Cog.listener()
    async def on_guild_join(self, guild: discord.Guild) -> None:
        """Greet in the system channel, only where the bot may write: nowhere else, and no error."""
        channel = guild.system_channel
        if channel is None or not channel.permissions_for(guild.me).send_messages:
            return
        policy = self.bot.memory.policy
        text = welcome_text(self._name(), marker=policy.no_memory_marker, community=policy.community)
        try:
            await channel.send(text)
        except discord.HTTPException as exc:  # permissions changed meanwhile, the channel went ...
            log.info("could not post the welcome in %s: %s", guild.id, exc)


async def setup(bot: MemoryBot) -> None:
    await bot.add_cog(Help(bot))
