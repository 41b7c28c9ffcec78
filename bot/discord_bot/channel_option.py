"""A channel given as a command's option: a channel or a thread, never a category."""

from __future__ import annotations

from discord import app_commands

ChannelOption = app_commands.AppCommandChannel | app_commands.AppCommandThread
NOT_A_CATEGORY = "Pick a channel or a thread, not a category."
