"""A message's own menu (Discord's message commands, under Apps): "Remember this" and "Forget what you
learned from it".

"Remember this" is `/remember` with the message's words: only its author may ask, and it goes through the
same checks (remember_request.py: opt-out, memory off, ignored channels, the person's own words only,
sensitive facts kept because they asked). "Forget what you learned from it" is what deleting the message
does (the engine's `forget_taught`), without deleting it: its author takes back everything it taught;
an admin (Manage Server) only what the server's memory made of someone else's message, whose author's
own facts stay theirs to forget. Nothing is forgotten before a Confirm; every answer is ephemeral.
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_bot.adminlog import plural
from bot.discord_bot.answers import Reply, answer
from bot.discord_bot.client import MemoryBot
from bot.discord_bot.discord_text import display_name
from bot.discord_bot.menu_names import FORGET_TAUGHT, REMEMBER_THIS
from bot.discord_bot.remember_request import remember_asked
from bot.discord_bot.ui.confirm import ConfirmView
from bot.discord_bot.ui.forgetting import facts_list
from bot.memory.models import COMMUNITY_ID, FactStatus, Taught
from bot.memory.text import strip_mentions

ONLY_YOUR_OWN = (
    "I can only remember a message of yours this way: I keep what people tell me about themselves, in "
    "their own words."
)
NO_TEXT = "That message has no words I could remember."
NOT_YOURS_TO_FORGET = (
    "Only the message's author can make me forget what it taught (an admin with Manage Server can for "
    "the server's shared memory)."
)
NOTHING_LEARNED = "I hadn't learned anything from that message, and now I won't."
NOTHING_SHARED = (
    "The server's shared memory (its facts and conversation summaries) holds nothing from that message. "
    "What it may have taught about its author is theirs to forget."
)


def shared_part(taught: Taught) -> str:
    """'1 community fact and 2 summary points', what the server's memory made of a message; '' if none."""
    parts = []
    if community := taught.of(COMMUNITY_ID):
        parts.append(plural(len(community), "community fact"))
    if taught.points:
        parts.append(plural(taught.points, "conversation summary point"))
    return " and ".join(parts)


def own_question(taught: Taught, author_id: str) -> str:
    """What its author is asked before a message's lessons go: their facts listed, the shared part counted."""
    mine = taught.of(author_id)
    current = [f for f in mine if f.status is FactStatus.ACTIVE]
    lines = ["Forget what I learned from that message? This can't be undone."]
    if current:
        lines.append(facts_list(current))
    if earlier := len(mine) - len(current):
        lines.append(f"(and {plural(earlier, 'earlier version')} of what I knew about you)")
    if shared := shared_part(taught):
        lines.append(f"Also the server's memory made of it: {shared}.")
    return "\n".join(lines)


class MessageMenu(commands.Cog, name="message_menu"):
    """The two message commands, added to the tree while the cog is loaded."""

    def __init__(self, bot: MemoryBot) -> None:
        self.bot = bot
        self.menus = [
            app_commands.ContextMenu(name=REMEMBER_THIS, callback=self.remember_this),
            app_commands.ContextMenu(name=FORGET_TAUGHT, callback=self.forget_taught),
        ]

    async def cog_load(self) -> None:
        for menu in self.menus:
            self.bot.tree.add_command(menu)

    async def cog_unload(self) -> None:
        for menu in self.menus:
            self.bot.tree.remove_command(menu.name, type=menu.type)

    async def remember_this(self, interaction: discord.Interaction, message: discord.Message) -> None:
        """Remember what the invoker's own message says about them, as `/remember` would."""
        if message.author.id != interaction.user.id:
            await interaction.response.send_message(ONLY_YOUR_OWN, ephemeral=True)
            return
        text = strip_mentions(message.content).strip()
        if not text:
            await interaction.response.send_message(NO_TEXT, ephemeral=True)
            return

        async def store() -> Reply:
            memory = self.bot.memory
            return Reply(
                await remember_asked(memory, interaction, text, channel=message.channel, source_id=message.id)
            )

        await answer(interaction, store())

    async def forget_taught(self, interaction: discord.Interaction, message: discord.Message) -> None:
        """Take back what a message taught: all of it for its author, the shared part for an admin."""
        own = message.author.id == interaction.user.id
        if not own and not (interaction.guild_id is not None and interaction.permissions.manage_guild):
            await interaction.response.send_message(NOT_YOURS_TO_FORGET, ephemeral=True)
            return
        await answer(interaction, self._forget_question(interaction, message, own=own))

    async def _forget_question(
        self, interaction: discord.Interaction, message: discord.Message, *, own: bool
    ) -> Reply:
        memory = self.bot.memory
        message_id = str(message.id)
        actor = str(interaction.user.id)
        taught = await memory.taught_by(message_id)
        if own and taught.nothing:  # nothing to lose: it leaves the buffer at once, unlearned
            await memory.forget_taught(message_id, actor=actor)
            return Reply(NOTHING_LEARNED)
        shared = shared_part(taught)
        if not own and not shared:
            return Reply(NOTHING_SHARED)

        async def forget() -> str:
            count = await memory.forget_taught(message_id, actor=actor, community_only=not own)
            if own:
                return (
                    f"Forgot {plural(count, 'fact')} learned from that message; I won't learn from it again."
                )
            return (
                f"Forgot what the server's memory made of that message ({plural(count, 'community fact')})."
            )

        if own:
            question = own_question(taught, str(message.author.id))
        else:
            question = (
                f"Forget what the server's memory made of {display_name(message.author)}'s message ({shared})? "
                "What it taught about them stays theirs to forget. This can't be undone."
            )
        return Reply(question, ConfirmView(interaction, forget, confirm_label="Forget"))


async def setup(bot: MemoryBot) -> None:
    await bot.add_cog(MessageMenu(bot))
