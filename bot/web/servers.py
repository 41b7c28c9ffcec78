"""The servers as the bot sees them now, for the admin pages: one REST view per server (bot/discord_rest.py,
the MCP server's), read with the bot's token, so who manages a server and who can read a channel come
from Discord's current permissions, never from what the browser or the sign-in's list says.
"""

from __future__ import annotations

import logging

from bot.discord_rest import DiscordView, RestBot
from bot.memory.models import is_discord_id

log = logging.getLogger(__name__)

MAX_VIEWS = 100  # servers whose last reading is kept (each is read again when older than 5 seconds)


class ServerViews:
    """Each server's current permissions; with no bot (no DISCORD_TOKEN, or Discord unreachable at start)
    no server can be read, and nobody is anyone's admin here."""

    def __init__(self, bot: RestBot | None) -> None:
        self.bot = bot
        self._views: dict[str, DiscordView] = {}

    async def read(self, guild_id: str) -> DiscordView | None:
        """The server as the bot reads it now; None when it cannot be read (not a server the bot is in,
        or Discord unreachable)."""
        if self.bot is None or not is_discord_id(guild_id):
            return None
        view = self._views.pop(guild_id, None) or DiscordView(self.bot, int(guild_id))
        self._views[guild_id] = view  # the most recently used last
        while len(self._views) > MAX_VIEWS:
            del self._views[next(iter(self._views))]
        return view if await view.refresh() is not None else None

    async def managed_by(self, guild_id: str, user_id: str) -> DiscordView | None:
        """The server's view when `user_id` has Manage Server there now, else None."""
        view = await self.read(guild_id)
        return view if view is not None and view.manages(user_id) else None

    async def close(self) -> None:
        if self.bot is not None:
            await self.bot.close()
