"""One MCP session: the scope and audience it was started for, fixed for its whole life.

`--channel ID`: what a reply in that channel could use (no one is being answered, so nobody's sensitive
facts); `--user ID --scope S`: what that person sees with /facts, their sensitive facts included, and the
server's conversations they can read; `--terminal`: the terminal chat's person. There is no other kind,
so no session sees everything. Permissions come from Discord's REST API (`bot/discord_rest.py`); where they
cannot be known, a channel's session reads only what was said in that channel, and a person's session
only their own facts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import discord

from bot.discord_bot.adminlog import AdminLog, plural
from bot.discord_bot.audience import audience_key
from bot.discord_rest import DiscordUnavailable, DiscordView, RestBot
from bot.memory.consult import ConsultError, Reader
from bot.memory.lookup import find_person
from bot.memory.models import TERMINAL_SCOPE, guild_id_of, is_discord_id, iso, utcnow
from bot.memory.recall import Audience, Participant
from bot.memory.service import MemoryService
from bot.memory.timespan import SINCE_EXAMPLES, since_start

log = logging.getLogger(__name__)
LOG_EVERY = 60.0  # seconds between two admin-log lines of one tool's calls in a session

T = TypeVar("T")


@dataclass(frozen=True)
class Binding:
    """What a session is started for, as the command line says it."""

    channel_id: int | None = None
    user_id: str | None = None
    scope: str | None = None
    name: str | None = None  # the terminal's person


@dataclass
class Session:
    """The reader a session is bound to, the server's view it is judged by, and where calls are logged."""

    service: MemoryService
    reader: Reader
    view: DiscordView | None = None
    admin_log: AdminLog | None = None
    channel: dict[str, Any] | None = None  # the bound channel's payload (a thread is read with the guild)
    channel_id: int | None = None
    _logged_at: dict[str, float] = field(default_factory=dict)  # per tool, when its last line was posted
    _quiet: dict[str, int] = field(default_factory=dict)  # per tool, calls not posted since

    @property
    def guild_id(self) -> int | None:
        return guild_id_of(self.reader.scope)

    @property
    def who(self) -> str:
        """Whom the session is for, as the admin log names it ("#general", "alice")."""
        if self.channel_id is not None:
            return self.reader.channel_name(str(self.channel_id))
        person = self.reader.person
        if person is None:
            return "nobody"
        if self.admin_log is not None:
            return self.admin_log.name_of(self.guild_id, person.user_id)
        return person.name or f"user {person.user_id}"

    @property
    def holds(self) -> str:
        """Whose memory the session holds, resolved at its start, in one sentence for the client's model
        (the server's instructions and every tool's description say it)."""
        person = self.reader.person
        if self.channel_id is not None:
            return (
                f"the memory a reply in {self.reader.channel_name(str(self.channel_id))} of {self._place()} "
                "could use: what all of that channel's readers may know, nobody's sensitive facts"
            )
        if person is None:
            return f"nobody's memory in {self._place()}"
        whose = f"{person.name or 'user ' + person.user_id} (Discord user {person.user_id})"
        if self.reader.scope == TERMINAL_SCOPE:
            whose = f"{person.name} (the terminal chat's person)"
        seen = ", and the server's conversations they can read" if self.reader.community else ""
        return f"the memory of {whose} in {self._place()}: their own facts, sensitive ones included{seen}"

    def _place(self) -> str:
        """The session's scope as a person would name it: the server (by name where Discord says it),
        the DMs or the terminal chat."""
        scope = self.reader.scope
        if scope == TERMINAL_SCOPE:
            return "the terminal chat (scope terminal)"
        guild = self.view.guild if self.view is not None else None
        if guild is not None:
            return f"the Discord server {guild.name!r} ({scope})"
        return f"the Discord server {scope}" if self.guild_id is not None else "direct messages with the bot"

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run one call on current permissions and settings (opt-outs, the server's switch)."""
        if self.view is not None:
            await self.view.refresh(extra_channels=(self.channel,) if self.channel else ())
        await self.service.reload_caches()
        return await work()

    def note(self, tool: str, line: str, *, now: float | None = None) -> None:
        """A call, in the admin log at most once a LOG_EVERY per tool: the first call's `line`, later
        ones counted and summed up with the next line or at the end (`close_log`), so a client looping
        on lookups posts a line a minute, not one per call."""
        moment = time.monotonic() if now is None else now
        if moment - self._logged_at.get(tool, -LOG_EVERY) < LOG_EVERY:
            self._quiet[tool] = self._quiet.get(tool, 0) + 1
            return
        self._logged_at[tool] = moment
        more = self._quiet.pop(tool, 0)
        self.log(
            line + (f" (and {plural(more, 'more ' + tool + ' call')} in the last minute)" if more else "")
        )

    def close_log(self) -> None:
        """The calls `note` counted and did not post yet, in one line."""
        if self._quiet:
            counts = ", ".join(f"{tool} {n}" for tool, n in sorted(self._quiet.items()))
            self.log(f"An MCP client for {self.who} made {sum(self._quiet.values())} more calls ({counts}).")
            self._quiet.clear()

    def log(self, line: str) -> None:
        """One admin-log line of the session's server (the Python log only, outside a server)."""
        guild = self.guild_id
        if self.admin_log is not None and guild is not None:
            self.admin_log.post(guild, line)
        else:
            log.info("MCP [%s] %s", self.reader.scope, line)

    def people(self, asked: Sequence[str]) -> list[Participant]:
        """The people a recall names, by Discord id or by name among the server's members; refused in a
        person's session for anyone but them."""
        members = self._members()
        chosen: list[Participant] = []
        for text in asked:
            text = text.strip()
            if not text:
                continue
            found = find_person(members, text)
            if found is None and is_discord_id(text.strip("<@!>")):
                found = Participant(text.strip("<@!>"), "")
            if found is None:
                shown = text if len(text) <= 40 else text[:40] + "…"
                raise ConsultError(f"{shown!r} names no member of this server; give their Discord id")
            chosen.append(found)
        person = self.reader.person
        if person is not None and any(p.user_id != person.user_id for p in chosen):
            raise ConsultError(f"this session reads only the facts of {person.name or person.user_id}")
        return chosen

    def _members(self) -> list[Participant]:
        guild = self.view.guild if self.view is not None else None
        if guild is None:
            return [self.reader.person] if self.reader.person is not None else []
        return [Participant(str(m.id), m.display_name) for m in guild.members if not m.bot]


def since_of(phrase: str | None) -> str | None:
    """The ISO start of `since`: an ISO date or time, or a phrase /memory recap reads ("2 weeks",
    "yesterday", "Monday", "20 Nov"); None when not given."""
    if phrase is None or not phrase.strip():
        return None
    text = phrase.strip()
    try:
        moment = datetime.fromisoformat(text)
        iso(moment if moment.tzinfo is not None else moment.replace(tzinfo=utcnow().tzinfo))
    except OverflowError:  # "9999-12-31T23:59-14:00" is past the last day a time can hold in UTC
        raise ConsultError(f"since={text[:40]!r} is out of range: give a date such as 2026-05-01") from None
    except ValueError:
        start = since_start(text, utcnow())  # the forms /memory recap reads, refused alike
        if start is None:
            raise ConsultError(f"cannot read since={text[:40]!r}: try {SINCE_EXAMPLES}") from None
        moment = start
    return iso(moment if moment.tzinfo is not None else moment.replace(tzinfo=utcnow().tzinfo))


async def open_session(service: MemoryService, binding: Binding, *, bot: RestBot | None) -> Session:
    """The session a binding starts; `bot` is None when Discord cannot be read (no token, unreachable)."""
    if binding.name is not None:  # the terminal chat's person: nothing of Discord
        from bot.terminal import local_user_id

        person = Participant(local_user_id(binding.name), binding.name)
        return Session(service, Reader(TERMINAL_SCOPE, Audience(person.user_id), person))
    if binding.channel_id is not None:
        return await _channel_session(service, binding.channel_id, binding.scope, bot)
    assert binding.user_id is not None and binding.scope is not None
    return await _person_session(service, binding.user_id, binding.scope, bot)


async def _channel_session(
    service: MemoryService, channel_id: int, scope: str | None, bot: RestBot | None
) -> Session:
    """What a reply in the channel could use: its readers' audience, no one's sensitive facts."""
    payload: dict[str, Any] | None = None
    if bot is not None:
        probe = DiscordView(bot, 0)
        payload = await probe.channel(channel_id)
        if not payload.get("guild_id"):
            raise ConsultError("that is a DM channel: a person's DMs are read with --user ID --scope dm")
        found = f"guild:{payload['guild_id']}"
        if scope is not None and scope != found:
            raise ConsultError(f"channel {channel_id} is in {found}, not {scope}")
        scope = found
    guild_id = guild_id_of(scope or "")
    if guild_id is None:
        raise ConsultError("without Discord (DISCORD_TOKEN) a channel's session needs --scope guild:<id>")
    view = DiscordView(bot, guild_id) if bot is not None else None
    reply_key = str(channel_id)
    if view is not None:
        guild = await view.refresh(extra_channels=(payload,) if payload else ())
        channel = guild.get_channel_or_thread(channel_id) if guild is not None else None
        reply_key = audience_key(channel) if channel is not None else reply_key

    def can_read(key: str) -> bool:
        return view.covers(reply_key, key) if view is not None else key == reply_key

    audience = Audience(None, can_read)
    reader = Reader(f"guild:{guild_id}", audience, community=audience, channel_name=_names_of(view))
    return Session(service, reader, view=view, channel=payload, channel_id=channel_id)


async def _person_session(service: MemoryService, user_id: str, scope: str, bot: RestBot | None) -> Session:
    """What the person sees with /facts (their sensitive facts too), and the server's conversations
    they can read now."""
    names = await service.names(scope, [user_id])
    guild_id = guild_id_of(scope)
    view = DiscordView(bot, guild_id) if bot is not None and guild_id is not None else None
    name = names.get(user_id, "")
    community: Audience | None = None
    if view is not None:
        guild = await view.refresh()
        member = guild.get_member(int(user_id)) if guild is not None else None
        if guild is not None and member is None:
            raise ConsultError(f"user {user_id} is not a member of server {guild_id}")
        name = name or (member.display_name if isinstance(member, discord.Member) else "")
        community = Audience(user_id, lambda key: view.member_can_read(user_id, key))
    person = Participant(user_id, name)
    reader = Reader(scope, Audience(user_id), person, community, _names_of(view))
    return Session(service, reader, view=view)


def _names_of(view: DiscordView | None) -> Callable[[str], str]:
    if view is None:
        return lambda channel_id: f"<#{channel_id}>"
    return view.channel_name


async def login(service: MemoryService, settings: Any) -> RestBot | None:
    """The bot over REST, or None (logged) when Discord cannot be read: permissions stay unknown."""
    try:
        return await DiscordView.login(settings, service)
    except DiscordUnavailable as exc:
        log.warning("%s: sessions read only what was said in their own channel", exc)
        return None
