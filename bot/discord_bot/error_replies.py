"""One error handler for every app command, button and form: a useful ephemeral answer, details for
operators.

The person gets a short message whether or not the interaction was already answered; the traceback goes
to logging and a one-line note to the guild's admin log. The errors cog installs it on the command tree;
the views and forms call it from their own `on_error`.
"""

from __future__ import annotations

import logging

import discord
from discord import app_commands

log = logging.getLogger(__name__)

NEED_MANAGE_SERVER = "You need Manage Server for that."
GUILD_ONLY = "That command only works in a server."
GENERIC_FAILURE = "Something went wrong; the admins have been told."


async def reply_ephemeral(interaction: discord.Interaction, content: str) -> None:
    """Answer privately: as the response if there is none yet, else as a followup."""
    if interaction.response.is_done():
        await interaction.followup.send(content, ephemeral=True)
    else:
        await interaction.response.send_message(content, ephemeral=True)


def user_message(error: Exception) -> str | None:
    """What to tell the person for an expected error; None for a bug (which the admins hear about)."""
    if isinstance(error, app_commands.MissingPermissions):
        if "manage_guild" in error.missing_permissions:
            return NEED_MANAGE_SERVER
        return f"You need these permissions for that: {', '.join(error.missing_permissions)}."
    if isinstance(error, app_commands.BotMissingPermissions):
        return f"I'm missing these permissions here: {', '.join(error.missing_permissions)}."
    if isinstance(error, app_commands.NoPrivateMessage):
        return GUILD_ONLY
    if isinstance(error, app_commands.CommandOnCooldown):
        return f"Slow down a little: try again in {error.retry_after:.0f} s."
    if isinstance(error, app_commands.TransformerError):
        return f"I couldn't use {error.value!r} there; please pick it from the list."
    if isinstance(error, app_commands.CheckFailure):
        return "You can't use that command here."
    return None


def command_name(interaction: discord.Interaction) -> str:
    command = interaction.command
    return f"/{command.qualified_name}" if command is not None else "a button"


async def report_error(interaction: discord.Interaction, error: Exception) -> None:
    """Tell the person what happened; log bugs with their traceback and note them in the admin log."""
    original = error.original if isinstance(error, app_commands.CommandInvokeError) else error
    message = user_message(original)
    if message is None:
        log.exception(
            "%s failed for user %s in guild %s",
            command_name(interaction),
            interaction.user.id,
            interaction.guild_id,
            exc_info=original,
        )
        admin_log = getattr(interaction.client, "admin_log", None)
        if admin_log is not None and interaction.guild_id is not None:
            admin_log.post(
                interaction.guild_id,
                f"{command_name(interaction)} failed for {discord.utils.escape_markdown(interaction.user.display_name)}: "
                f"{type(original).__name__} (details in the bot's log).",
            )
        message = GENERIC_FAILURE
    if interaction.type is discord.InteractionType.autocomplete:
        return
    try:
        await reply_ephemeral(interaction, message)
    except discord.HTTPException as exc:
        log.warning("could not tell user %s about an error: %s", interaction.user.id, exc)
