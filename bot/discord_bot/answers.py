"""Answering interactions within Discord's three seconds, even when the database is slow.

Discord forgets an interaction that is not acknowledged within 3 seconds ("Unknown interaction"), and a
command's store call can wait behind a long write (a big flush, a forget with its checkpoint). Commands
and buttons build their answer through `answer()`: a fast answer goes out as the response, in one
request; a slow one is acknowledged (deferred) first and then edited in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass

import discord

DEFER_AFTER_SECONDS = 1.5


@dataclass
class Reply:
    content: str
    view: discord.ui.View | None = None


async def answer(interaction: discord.Interaction, work: Awaitable[Reply], *, update: bool = False) -> None:
    """Answer privately with what `work` produces; `update` edits the message a button sits on instead.

    Components of the reply are removed when `view` is None (for an update) or never added (otherwise).
    """
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=DEFER_AFTER_SECONDS)
    if not done and not interaction.response.is_done():
        # A command gets "thinking..." (ephemeral); a button keeps its message as it is until the edit.
        await interaction.response.defer(ephemeral=True, thinking=not update)
    reply = await task
    if interaction.response.is_done():
        await interaction.edit_original_response(content=reply.content, view=reply.view)
    elif update:
        await interaction.response.edit_message(content=reply.content, view=reply.view)
    elif reply.view is not None:
        await interaction.response.send_message(reply.content, view=reply.view, ephemeral=True)
    else:
        await interaction.response.send_message(reply.content, ephemeral=True)
