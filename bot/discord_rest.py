"""A server as the bot sees it, read from Discord's REST API with the bot's token: who can read what, and
who manages it.

The MCP front-end and the web dashboard run in processes of their own, without the gateway, so they have
no cache of channels, roles and members; both read a server through this module (moved here from
bot/mcp/ so that neither front-end imports the other). It reads them over REST (the guild with its roles, its channels with their
overwrites, its members) and builds the same `discord.Guild` the gateway would, so the audience rule is
the bot's own (`bot/discord_bot/audience.py`: `AudienceResolver.covers`, `member_can_read`), not a copy. The view is
read again before a call when it is older than `MAX_AGE_SECONDS`, so a changed overwrite holds at once.
When Discord cannot be read, `guild` is None: MCP sessions fall back to what was said in their own
channel (`bot/mcp/session.py`), and the dashboard's admin pages answer as for an unknown server.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import discord
from discord.ext import commands

from bot.config import Settings
from bot.discord_bot.audience import AudienceResolver, Said
from bot.discord_bot.client import point_discord_at

log = logging.getLogger(__name__)

MAX_AGE_SECONDS = 5.0  # calls this close together (recall, then get) share one reading of permissions
MEMBERS_PAGE = 1000  # Discord's largest page of GET /guilds/{id}/members


class DiscordUnavailable(Exception):
    """Discord could not be read (no token, refused, unreachable): permissions are not known."""


class RestBot(commands.Bot):
    """A bot that is never connected to the gateway: REST calls, and a cache this module fills.

    `memory` and `settings` are what the admin log reads of a bot (`bot/discord_bot/adminlog.py`)."""

    def __init__(self, settings: Settings, memory: Any) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        intents.members = True  # so members read over REST are cached with the guild
        super().__init__(command_prefix=commands.when_mentioned, intents=intents, help_command=None)
        self.settings = settings
        self.memory = memory


@dataclass(frozen=True)
class Place:
    """One channel as an audience key: what `AudienceResolver.member_can_read` reads of a fact."""

    key: str

    @property
    def audience_keys(self) -> frozenset[str]:
        return frozenset({self.key})


class DiscordView:
    """One server's channels, roles and members over REST, with the bot's audience rule over them."""

    def __init__(self, bot: RestBot, guild_id: int) -> None:
        self.bot = bot
        self.guild_id = guild_id
        self.resolver = AudienceResolver(bot)
        self.guild: discord.Guild | None = None
        self._read_at = float("-inf")

    @classmethod
    async def login(cls, settings: Settings, memory: Any) -> RestBot:
        """The bot logged in over REST (GET /users/@me), as the bot's start does before it connects."""
        if not settings.discord_token:
            raise DiscordUnavailable("DISCORD_TOKEN is not set")
        point_discord_at(settings.discord_api_base_url, settings.discord_gateway_url)
        bot = RestBot(settings, memory)
        try:
            await bot.login(settings.discord_token)
        except (discord.DiscordException, aiohttp.ClientError, OSError) as exc:
            await bot.close()
            raise DiscordUnavailable(f"cannot log in to Discord: {exc}") from exc
        return bot

    async def channel(self, channel_id: int) -> dict[str, Any]:
        """A channel's payload (its guild, type and parent), for where a session is bound."""
        try:
            payload: dict[str, Any] = await self.bot.http.get_channel(channel_id)  # type: ignore[assignment]
        except discord.NotFound as exc:
            raise DiscordUnavailable(f"channel {channel_id} does not exist or the bot cannot see it") from exc
        except discord.Forbidden as exc:
            raise DiscordUnavailable(f"the bot cannot see channel {channel_id}") from exc
        except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
            raise DiscordUnavailable(f"cannot read channel {channel_id} from Discord: {exc}") from exc
        return payload

    async def refresh(self, *, extra_channels: tuple[dict[str, Any], ...] = ()) -> discord.Guild | None:
        """The server's current permissions (read again when older than MAX_AGE_SECONDS); None when
        Discord cannot be read now, logged once per failure. `extra_channels`: threads to include."""
        if self.guild is not None and time.monotonic() - self._read_at < MAX_AGE_SECONDS:
            return self.guild
        try:
            self.guild = await self._read(extra_channels)
        except (discord.DiscordException, aiohttp.ClientError, OSError) as exc:
            log.warning("cannot read the permissions of server %s from Discord: %s", self.guild_id, exc)
            self.guild = None
        self._read_at = time.monotonic()
        self.resolver.clear()  # answers hold for one reading of permissions
        return self.guild

    async def _read(self, extra_channels: tuple[dict[str, Any], ...]) -> discord.Guild:
        http = self.bot.http
        payload: dict[str, Any] = dict(await http.get_guild(self.guild_id))
        channels = list(await http.get_all_guild_channels(self.guild_id))
        members: list[Any] = []
        after = 0
        while True:
            page = await http.get_members(self.guild_id, MEMBERS_PAGE, after)
            members += page
            if len(page) < MEMBERS_PAGE:
                break
            after = int(page[-1]["user"]["id"])
        known = {str(c["id"]) for c in channels}
        payload.update(
            channels=channels,
            threads=[c for c in extra_channels if str(c["id"]) not in known],
            members=members,
            member_count=len(members),  # every member was read: the list is whole ("chunked")
        )
        guild = discord.Guild(data=payload, state=self.bot._connection)  # type: ignore[arg-type]
        self.bot._connection._add_guild(guild)  # so the admin log finds its channels
        return guild

    def covers(self, reply_key: str, source_key: str) -> bool:
        """The bot's rule: whether everyone who can read the reply's channel can read the source's."""
        if self.guild is None:
            return source_key == reply_key
        return self.resolver.covers(self.guild, reply_key, source_key)

    def member_can_read(self, user_id: str, key: str) -> bool:
        """Whether a member can read, now, the channel `key` (the rule of /memory recap)."""
        member = self.guild.get_member(int(user_id)) if self.guild is not None else None
        if self.guild is None or member is None:
            return False
        return self.resolver.member_can_read(self.guild, member, Place(key))

    def reads(self, user_id: str, said: Said) -> bool:
        """Whether a member can read, now, every place an episode or a community fact was said (the rule of
        /memory-admin's lists: `AudienceResolver.member_can_read`); False when Discord cannot be read."""
        member = self.guild.get_member(int(user_id)) if self.guild is not None and user_id.isdigit() else None
        if self.guild is None or member is None:
            return False
        return self.resolver.member_can_read(self.guild, member, said)

    def manages(self, user_id: str) -> bool:
        """Whether a member has Manage Server here now (as owner, administrator or through a role): who
        may use /memory-admin; False when Discord cannot be read or they are not a member."""
        member = self.guild.get_member(int(user_id)) if self.guild is not None and user_id.isdigit() else None
        return member is not None and member.guild_permissions.manage_guild

    def channel_name(self, channel_id: str) -> str:
        """'#general' for a channel the view knows, else Discord's mention markup."""
        channel = (
            self.guild.get_channel_or_thread(int(channel_id))
            if self.guild is not None and channel_id.isdigit()
            else None
        )
        return f"#{channel.name}" if channel is not None else f"<#{channel_id}>"
