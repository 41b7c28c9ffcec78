"""Who can read what in a server: the audience rule of recall, decided from current permissions.

A fact said in channel S may be used in a reply in channel C only when everyone who can read C could
also read S. A public thread has its parent's readers; a private thread is private to its members, so
its facts serve that thread only (and a reply in a private thread is judged as if its parent's readers
could read it, which only ever leaves more out). When the bot cannot tell (a channel it cannot see,
a member list it does not have yet) the fact is left out.

Answers are cached per (reply channel, source channel) and the cache is dropped whenever a channel,
role, membership or thread changes, so overwrites take effect at the next reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

import discord
from discord.ext import commands

from bot.memory.recall import Audience

log = logging.getLogger(__name__)

CHUNK_WAIT_SECONDS = 3.0  # how long a reply waits for a server's member list the first time
CHANGE_EVENTS = (
    "on_guild_channel_create",
    "on_guild_channel_update",
    "on_guild_channel_delete",
    "on_guild_role_create",
    "on_guild_role_update",
    "on_guild_role_delete",
    "on_guild_update",
    "on_member_join",
    "on_member_remove",
    "on_member_update",
    "on_thread_update",
    "on_thread_delete",
    "on_raw_thread_delete",
)

Channel = discord.abc.GuildChannel | discord.Thread


class Said(Protocol):
    """What was made from messages (a fact, an episode): the audiences of the places they were said."""

    @property
    def audience_keys(self) -> frozenset[str] | None: ...


def audience_key(channel: Any) -> str:
    """The channel whose readers are the readers of `channel` (see `Origin.audience_key`)."""
    if isinstance(channel, discord.Thread) and channel.type is not discord.ChannelType.private_thread:
        return str(channel.parent_id)
    return str(channel.id)


def open_to_everyone(guild: discord.Guild, channel: discord.abc.GuildChannel) -> bool:
    """Whether every member can read `channel`: @everyone may, and no overwrite takes it from anyone."""
    everyone = channel.overwrites_for(guild.default_role).view_channel
    base = guild.default_role.permissions.view_channel or guild.default_role.permissions.administrator
    if everyone is False or (not base and everyone is not True):
        return False
    return not any(o.view_channel is False for o in channel.overwrites.values())


def decides_here(message: discord.Message, moderator_role_id: str | None = None) -> bool:
    """Whether a message's author could decide for the server where they said it (Manage Server or
    Manage Messages in that channel, or the moderator role an admin named): a rule or decision made only
    of such messages speaks as the server; anyone else's is served as their own word."""
    author, channel = message.author, message.channel
    if (
        message.guild is None
        or not isinstance(author, discord.Member)
        or not hasattr(channel, "permissions_for")
    ):
        return False
    if moderator_role_id is not None and any(str(role.id) == moderator_role_id for role in author.roles):
        return True
    allowed = channel.permissions_for(author)
    return bool(allowed.manage_guild or allowed.manage_messages)


def can_view(channel: discord.abc.GuildChannel, member: discord.Member) -> bool:
    return channel.permissions_for(member).view_channel


class AudienceResolver:
    """Builds the `Audience` of a reply, and answers "may this member read where that fact was said"."""

    def __init__(self, bot: commands.Bot) -> None:
        self.bot = bot
        self._cache: dict[tuple[int, str, str], bool] = {}
        self._chunking: dict[int, asyncio.Task[Any]] = {}
        for event in CHANGE_EVENTS:
            bot.add_listener(self._changed, event)

    async def _changed(self, *_: Any) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget every answer: permissions changed, or were read again (the MCP front-end's REST view)."""
        self._cache.clear()

    def shareable(self, channel_id: str) -> bool:
        """Whether a channel's buffered messages may be read in one extraction call with other such
        channels of its server: only channels every member can read (and their public threads), so a
        model never sees words of different readers together and cannot carry one channel's words into a
        fact sourced from another. Unknown channels (deleted, not cached) keep to themselves."""
        channel = self.bot.get_channel(int(channel_id)) if channel_id.isdigit() else None
        if isinstance(channel, discord.Thread):
            if channel.type is discord.ChannelType.private_thread:
                return False
            channel = channel.parent
        if not isinstance(channel, discord.abc.GuildChannel):
            return False
        return open_to_everyone(channel.guild, channel)

    async def for_message(self, message: discord.Message) -> Audience:
        """The audience of a reply to `message`: its author is the owner, its channel's readers the rest."""
        return await self.for_place(message.guild, message.channel, str(message.author.id))

    async def for_place(self, guild: discord.Guild | None, channel: Any, owner: str) -> Audience:
        """The audience of a reply to `owner` in `channel` of `guild` (None: their DMs, where their own
        facts alone are recalled)."""
        if guild is None:
            return Audience(owner)
        await self._wait_for_members(guild)
        reply_key = audience_key(channel)
        return Audience(owner, lambda key: self.covers(guild, reply_key, key))

    async def _wait_for_members(self, guild: discord.Guild) -> None:
        """Ask for the member list once per server, waiting a bounded time; until it comes, facts whose
        audience needs it are left out."""
        if guild.chunked:
            return
        task = self._chunking.get(guild.id)
        if task is None or task.done():
            task = asyncio.ensure_future(guild.chunk(cache=True))
            self._chunking[guild.id] = task
            task.add_done_callback(lambda t: self._chunked(guild.id, t))
        with contextlib.suppress(TimeoutError, asyncio.CancelledError, discord.DiscordException):
            await asyncio.wait_for(asyncio.shield(task), CHUNK_WAIT_SECONDS)

    def _chunked(self, guild_id: int, task: asyncio.Task[Any]) -> None:
        self._chunking.pop(guild_id, None)
        self.clear()
        if not task.cancelled() and task.exception() is not None:
            log.warning("could not load the member list of server %s: %s", guild_id, task.exception())

    def covers(self, guild: discord.Guild, reply_key: str, source_key: str) -> bool:
        """Whether everyone who can read the reply's channel can read the source channel."""
        if source_key == reply_key:
            return True
        cached = self._cache.get((guild.id, reply_key, source_key))
        if cached is None:
            cached = self._covers(guild, reply_key, source_key)
            self._cache[(guild.id, reply_key, source_key)] = cached
        return cached

    def _covers(self, guild: discord.Guild, reply_key: str, source_key: str) -> bool:
        source = _channel(guild, source_key)
        if source is None or isinstance(source, discord.Thread):
            return False  # gone, unknown, or a private thread other than the one replied in
        reply = _channel(guild, reply_key)
        if isinstance(reply, discord.Thread):  # a private thread: its readers are among its parent's
            reply = reply.parent
        if reply is None:
            return False
        if open_to_everyone(guild, source):
            return True
        if not guild.chunked:
            return False
        return all(can_view(source, m) for m in _representatives(guild, reply, source) if can_view(reply, m))

    def member_can_read(self, guild: discord.Guild, member: discord.Member, said: Said) -> bool:
        """Whether `member` could read every place a fact's or an episode's words were said (for /facts
        about others, /memory recap and the admins' lists); never a private thread's."""
        keys = said.audience_keys
        if keys is None:
            return False
        for key in keys:
            channel = _channel(guild, key)
            if channel is None or isinstance(channel, discord.Thread) or not can_view(channel, member):
                return False
        return True


def _channel(guild: discord.Guild, key: str) -> Channel | None:
    if not key.isdigit():
        return None
    return guild.get_channel_or_thread(int(key))


def _representatives(guild: discord.Guild, *channels: discord.abc.GuildChannel) -> list[discord.Member]:
    """One member per set of roles, plus every member the channels name in an overwrite and the owner:
    permissions depend on nothing else, so checking these is checking everyone."""
    named = {t.id for c in channels for t in c.overwrites if not isinstance(t, discord.Role)}
    named.add(guild.owner_id or 0)
    chosen: dict[Any, discord.Member] = {}
    for member in guild.members:
        key: Any = member.id if member.id in named else tuple(sorted(r.id for r in member.roles))
        chosen.setdefault(key, member)
    return list(chosen.values())
