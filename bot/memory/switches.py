"""The switches people and admins set (opt-outs and people's own settings; a server's memory switch,
ignored channels, auto-reply channels, personas, removal), held in memory so that a capture never waits on the database, and kept in step with the
other processes on it.

The rule of where a person may be remembered is written here once (`Switches.not_here`): capture, the
flush, `/remember`, the terminal and the MCP tools all ask it, and each front-end says the reason in
its own words.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from bot.memory.models import BufferedMessage, GuildSettings, PersonSettings, guild_id_of
from bot.memory.ports import Storage, StorageWorker
from bot.memory.text import clean, worth_reading

log = logging.getLogger(__name__)

PERSONA_MAX_CHARS = 2000  # a persona is part of every reply's prompt in its server or channel

# Lets queued captures reach the database, so that a change about to be written covers them too.
Settle = Callable[[], Awaitable[None]]


class Reason(Enum):
    """Why nothing of a person may be remembered somewhere."""

    OPTED_OUT = "opted out"
    MEMORY_OFF = "memory switched off in the server"
    IGNORED = "channel ignored"


@dataclass(frozen=True)
class NotHere:
    """The answer of `Switches.not_here` when the answer is no; the front-ends put it into words."""

    reason: Reason
    channel_id: str = ""  # IGNORED: the channel an admin ignored (the one spoken in, or its thread's parent)


def place_of(message: BufferedMessage) -> tuple[str | None, tuple[str, ...]]:
    """A buffered message's guild (None outside servers), and its channel with the parent of its thread."""
    guild_id = guild_id_of(message.scope)
    channels = tuple(c for c in (message.channel_id, message.parent_channel_id) if c is not None)
    return None if guild_id is None else str(guild_id), channels


class Switches:
    """The caches of opt-outs and guild settings, their writes, and a watcher that reloads them when
    another process changed a setting."""

    def __init__(self, store: StorageWorker, poll_seconds: float) -> None:
        self.store = store
        self.poll_seconds = poll_seconds
        self._opted_out: set[tuple[str, str]] = set()
        self._people: dict[tuple[str, str], PersonSettings] = {}  # those who changed a default
        self._guilds: dict[str, GuildSettings] = {}
        self._seen = -1  # the settings version the caches hold
        self._watcher: asyncio.Task[None] | None = None
        # Held while this process changes a setting: its caches take the change before the database does
        # (so queued captures are refused), and the watcher's reload in between would undo that.
        self._changing = asyncio.Lock()

    async def reload(self) -> None:
        self._seen = await self.store.call(Storage.settings_version)
        self._opted_out = await self.store.call(Storage.opted_out)
        self._people = await self.store.call(Storage.person_settings)
        self._guilds = await self.store.call(Storage.guild_settings)

    def watch(self) -> None:
        """Start following the changes other processes make (`reload` first)."""
        self._watcher = asyncio.create_task(self._watch(), name="settings-watcher")

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher

    async def _watch(self) -> None:
        """Reload the caches when another process on the database changed a setting (one small read)."""
        while True:
            await asyncio.sleep(self.poll_seconds)
            try:
                async with self._changing:
                    if await self.store.call(Storage.settings_version) != self._seen:
                        await self.reload()
            except Exception as exc:  # a busy or briefly unreachable database: the next poll tries again
                log.warning("could not check for settings changed elsewhere: %s", exc)

    # ---- reading ---------------------------------------------------------------------------------------

    def guild(self, guild_id: str) -> GuildSettings:
        return self._guilds.get(guild_id) or GuildSettings(guild_id)

    def is_opted_out(self, scope: str, user_id: str) -> bool:
        return (scope, user_id) in self._opted_out

    def person(self, scope: str, user_id: str) -> PersonSettings:
        """A person's own settings in a scope (the defaults when they never changed one)."""
        return self._people.get((scope, user_id)) or PersonSettings()

    def withheld(self, scope: str) -> set[str]:
        """The people of a scope whose words shared memory no longer serves: those who opted out."""
        return {user for where, user in self._opted_out if where == scope}

    def removed_before(self, cutoff: str) -> list[str]:
        """The guilds the bot was removed from at `cutoff` (ISO) or earlier."""
        return [g for g, s in self._guilds.items() if s.removed_at is not None and s.removed_at <= cutoff]

    def not_here(
        self,
        guild_id: str | None,
        channel_ids: Collection[str] = (),
        *,
        person: tuple[str, str] | None = None,
    ) -> NotHere | None:
        """Why nothing of `person` (scope, user id; None: anyone) said in these channels (a thread and
        its parent) of this guild (None: outside servers) may be remembered, or None when it may.

        In this order, so a person who opted out hears that first: their opt-out, the server's memory
        switch, the first of the channels an admin ignored. A guild never configured has the defaults,
        memory on and nothing ignored.
        """
        if person is not None and person in self._opted_out:
            return NotHere(Reason.OPTED_OUT)
        settings = None if guild_id is None else self._guilds.get(guild_id)
        if settings is None:
            return None
        if not settings.memory_enabled:
            return NotHere(Reason.MEMORY_OFF)
        for channel_id in channel_ids:
            if channel_id in settings.ignored_channel_ids:
                return NotHere(Reason.IGNORED, channel_id)
        return None

    def still_captured(self, message: BufferedMessage) -> bool:
        """Whether the guild and channel of a buffered message are still remembered, checked at flush."""
        return self.not_here(*place_of(message)) is None

    def may_keep(self, message: BufferedMessage) -> bool:
        """`still_captured`, and its author (not the bot, whose turns are context) has not opted out."""
        author = None if message.is_bot else (message.scope, message.author_id)
        return self.not_here(*place_of(message), person=author) is None

    # ---- changing --------------------------------------------------------------------------------------

    async def set_opt_out(self, scope: str, user_id: str, opted_out: bool, *, settle: Settle) -> None:
        """Record the choice; an opt-out drops what is buffered of the person, queued messages included."""
        async with self._changing:
            if opted_out:
                # From here on nothing of theirs is captured, and what is still queued is refused when written
                # (`may_keep`); the store then drops what is buffered, with every buffered turn of the bot.
                self._opted_out.add((scope, user_id))
                await settle()
            try:
                await self.store.call(Storage.set_opt_out, scope, user_id, opted_out)
            except Exception:
                if opted_out:  # memory says what the database says
                    self._opted_out.discard((scope, user_id))
                raise
            if not opted_out:
                self._opted_out.discard((scope, user_id))

    async def set_person(self, scope: str, user_id: str, settings: PersonSettings) -> None:
        """Record a person's own settings in a scope; replies and notices follow them at once."""
        async with self._changing:
            await self.store.call(Storage.save_person_settings, scope, user_id, settings)
            if settings == PersonSettings():
                self._people.pop((scope, user_id), None)
            else:
                self._people[(scope, user_id)] = settings

    async def set_auto_reply(self, guild_id: str, channel_id: str, replies: bool) -> GuildSettings:
        """An admin's choice of whether the bot answers every message in a channel without a mention."""
        async with self._changing:
            await self.store.call(Storage.set_auto_reply, guild_id, channel_id, replies)
            self._guilds = await self.store.call(Storage.guild_settings)
            return self.guild(guild_id)

    async def update_guild(self, guild_id: str, settle: Settle, /, **changes: Any) -> GuildSettings:
        """Change a guild's settings; switching memory off drops its buffered messages, queued ones too."""
        async with self._changing:
            before = self._guilds.get(guild_id)
            if changes.get("memory_enabled") is False:
                self._guilds[guild_id] = replace(self.guild(guild_id), memory_enabled=False)
                await settle()
            try:
                settings = await self.store.call(Storage.update_guild_settings, guild_id, **changes)
            except Exception:
                self._restore_guild(guild_id, before)
                raise
            self._guilds[guild_id] = settings
            return settings

    def _restore_guild(self, guild_id: str, before: GuildSettings | None) -> None:
        """After a failed write the cache goes back to what the database still says."""
        if before is None:
            self._guilds.pop(guild_id, None)
        else:
            self._guilds[guild_id] = before

    async def set_channel_ignored(
        self, guild_id: str, channel_id: str, ignored: bool, *, settle: Settle
    ) -> None:
        """Ignore or watch a channel (and its threads); ignoring drops what is buffered there."""
        async with self._changing:
            before = self._guilds.get(guild_id)
            if ignored:
                current = self.guild(guild_id)
                self._guilds[guild_id] = replace(
                    current, ignored_channel_ids={*current.ignored_channel_ids, channel_id}
                )
                await settle()
            try:
                await self.store.call(Storage.set_channel_ignored, guild_id, channel_id, ignored)
            except Exception:
                self._restore_guild(guild_id, before)
                raise
            self._guilds = await self.store.call(Storage.guild_settings)

    async def set_persona(self, guild_id: str, channel_id: str | None, persona: str | None) -> str | None:
        """Set (or with None clear) the persona of a server or of one of its channels; returns the text
        stored, cleaned and cut to `PERSONA_MAX_CHARS`."""
        text = clean(persona, PERSONA_MAX_CHARS) if persona is not None else None
        if text is not None and not worth_reading(text):
            raise ValueError("a persona needs some text")
        async with self._changing:
            if channel_id is None:
                await self.store.call(Storage.update_guild_settings, guild_id, persona=text)
            else:
                await self.store.call(Storage.set_channel_persona, guild_id, channel_id, text)
            self._guilds = await self.store.call(Storage.guild_settings)
            return text
