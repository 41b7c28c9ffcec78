"""The per-guild admin log: memory events and admin actions, coalesced into few Discord messages.

Lines are queued cheaply from anywhere on the event loop and a background task sends each guild's lines
as one message at most every `interval` seconds, so a busy server never runs into Discord's rate limits.
Everything also goes to Python logging. The log never pings anyone and never shows forgotten text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import discord

from bot.app import model_name, provider_name
from bot.config import Settings
from bot.discord_bot.discord_text import split_message
from bot.gist import plural as plural  # the widgets, cogs and MCP count with it from here
from bot.memory.events import Forgotten, Learned, MemoryEvent, ModelFailed, OptedIn, OptedOut, Skipped
from bot.memory.model_ports import Purpose
from bot.memory.models import COMMUNITY_ID, AppliedChange, Decision, guild_id_of

log = logging.getLogger(__name__)


@runtime_checkable
class LogChannel(Protocol):
    """Where a log line can go: any channel or thread the bot can send to (or a partial one)."""

    id: int

    async def send(self, content: str, *, allowed_mentions: discord.AllowedMentions) -> Any: ...


MAX_QUEUED_LINES = 500
MAX_NAMES_SHOWN = 5
MAX_ERROR_CHARS = 200
_KEY_PARAM = re.compile(r"(key=)[^&\s]+", re.IGNORECASE)
_DECISION_WORDS = (
    ((Decision.ADD, Decision.KEEP), "added"),
    ((Decision.MERGE,), "merged"),
    ((Decision.INVALIDATE,), "invalidated"),
)


def _names(changes: list[AppliedChange]) -> str:
    names = list(dict.fromkeys(discord.utils.escape_markdown(c.user_name or c.user_id) for c in changes))
    shown = ", ".join(names[:MAX_NAMES_SHOWN])
    if len(names) > MAX_NAMES_SHOWN:
        shown += f" +{len(names) - MAX_NAMES_SHOWN} more"
    return shown


def flush_line(changes: list[AppliedChange], messages: int) -> str:
    """One line per flush: counts per decision and who they were about (names only, no fact text)."""
    parts = []
    for decisions, word in _DECISION_WORDS:
        matching = [c for c in changes if c.decision in decisions]
        if matching:
            parts.append(f"{len(matching)} {word} ({_names(matching)})")
    duplicates = Counter(c.decision for c in changes)[Decision.DUPLICATE]
    if duplicates:
        parts.append(plural(duplicates, "duplicate"))
    return f"Learned from {plural(messages, 'message')}: {', '.join(parts) or 'nothing new'}"


def short_error(text: str, secret: str | Sequence[str] = "") -> str:
    """The first line of an error, bounded, with the secrets (every key and token the bot holds) or any
    `key=` parameter blanked out."""
    for value in [secret] if isinstance(secret, str) else secret:
        if value:
            text = text.replace(value, "****")
    first = _KEY_PARAM.sub(r"\1****", text.strip().splitlines()[0] if text.strip() else "unknown error")
    return first if len(first) <= MAX_ERROR_CHARS else first[: MAX_ERROR_CHARS - 1] + "…"


@dataclass
class _Batch:
    due: float
    lines: list[str] = field(default_factory=list)
    dropped: int = 0


class AdminLog:
    """Queues lines per guild and posts them, coalesced, to that guild's log channel."""

    def __init__(
        self,
        bot: Any,
        *,
        default_channel_id: int | None,
        interval: float = 5.0,
        max_queued_lines: int = MAX_QUEUED_LINES,
    ) -> None:
        self.bot = bot
        self.default_channel_id = default_channel_id
        self.interval = interval
        self.max_queued_lines = max_queued_lines
        self._batches: dict[int, _Batch] = {}
        self._last_sent: dict[int, float] = {}
        self._warned_channels: set[int] = set()
        self._said: set[tuple[int, str]] = set()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    # ---- queueing ----------------------------------------------------------------------------------------

    def post(self, guild_id: int, line: str) -> None:
        """Queue a line for this guild's log channel; never waits. Lines posted after `stop()` are only logged."""
        log.info("admin log [guild %s] %s", guild_id, line)
        if self._stopped:
            return
        batch = self._batches.get(guild_id)
        if batch is None:
            due = max(time.monotonic(), self._last_sent.get(guild_id, float("-inf"))) + self.interval
            batch = self._batches[guild_id] = _Batch(due)
        if len(batch.lines) >= self.max_queued_lines:
            batch.dropped += 1
            return
        batch.lines.append(line)
        self._wakeup.set()

    def post_once(self, guild_id: int, topic: str, line: str) -> None:
        """Queue a line only the first time `topic` comes up in this guild (a rejected key fails everything)."""
        if (guild_id, topic) not in self._said:
            self._said.add((guild_id, topic))
            self.post(guild_id, line)

    def on_memory_event(self, event: MemoryEvent) -> None:
        """Listener for MemoryService: turn an event into one line for the guild it happened in."""
        line = self.describe(event)
        if line is None:
            log.debug("memory event %s in %s not logged", event.kind, event.scope)
            return
        guild_id = guild_id_of(event.scope)
        if guild_id is None:
            log.info("memory [%s] %s", event.scope, line)
        elif isinstance(event, ModelFailed) and event.key_rejected:
            self.post_once(guild_id, "model-key", line)
        else:
            self.post(guild_id, line)

    def describe(self, event: MemoryEvent) -> str | None:
        """The admin-log line for an event, with counts and names but never a fact's text."""
        guild_id = guild_id_of(event.scope)
        match event:
            case Learned():
                return flush_line(event.changes, event.messages)
            case Forgotten():
                return self._forgotten(guild_id, event)
            case OptedOut() | OptedIn():
                what = "out of" if isinstance(event, OptedOut) else "back in to"
                return f"{self.name_of(guild_id, event.user_id)} opted {what} being remembered."
            case ModelFailed():
                line = f"{self._provider(event.purpose)} {event.purpose} failed: " + short_error(
                    event.error, self._secret()
                )
                if event.pending:
                    line += f" ({plural(event.pending, 'message')} kept for a retry)"
                return line
            case Skipped():
                count = plural(event.messages, "message") + (
                    f" in <#{event.channel_id}>" if event.channel_id else ""
                )
                if event.refused:
                    return (
                        f"Skipped {count} that {self._provider()} refused to read (safety or recitation); "
                        "the rest was learned."
                    )
                return (
                    f"Gave up on {count}: the answers of {self._provider()} stayed unusable, read alone too "
                    f"({short_error(event.error, self._secret())})"
                )
        return None

    def _forgotten(self, guild_id: int | None, event: Forgotten) -> str:
        line = f"Forgot {plural(event.count, 'fact')} of {self.name_of(guild_id, event.user_id)}"
        notes = []
        if event.everything:
            notes.append("everything")
        actor = event.actor or event.user_id
        if actor != event.user_id:
            notes.append(f"by {self.name_of(guild_id, actor)}")
        if event.reason:
            notes.append(event.reason)
        return line + (f" ({', '.join(notes)})" if notes else "") + "."

    def _secret(self) -> list[str]:
        """Every key and token the bot holds, whatever the provider, so that an error line quoting a
        request never shows one."""
        settings = getattr(self.bot, "settings", None)
        return settings.secret_values() if isinstance(settings, Settings) else []

    def _provider(self, purpose: str = "extract") -> str:
        """The provider and model doing `purpose`, as every line names them ("OpenAI (gpt-4o-mini)",
        "Gemini (gemini-embedding-001)", a local server's host and its model)."""
        settings = getattr(self.bot, "settings", None)
        if not isinstance(settings, Settings):
            return "The model"
        embeds = purpose == Purpose.EMBED.value
        name = provider_name(settings, Purpose.EMBED if embeds else None)
        return f"{name} ({model_name(settings, purpose)})"

    def name_of(self, guild_id: int | None, user_id: str) -> str:
        """A display name that cannot ping (markdown escaped), or 'user <id>' when the member is unknown."""
        if user_id == COMMUNITY_ID:  # the owner of the server's community facts is no member
            return "the server (community memory)"
        if not user_id.isdigit():
            return discord.utils.escape_markdown(user_id) or "someone"
        guild = self.bot.get_guild(guild_id) if guild_id is not None else None
        member = guild.get_member(int(user_id)) if guild is not None else None
        user = member or self.bot.get_user(int(user_id))
        if user is None:
            return f"user {user_id}"
        return discord.utils.escape_markdown(getattr(user, "display_name", None) or user.name)

    # ---- sending -----------------------------------------------------------------------------------------

    def channel_for(self, guild_id: int) -> LogChannel | None:
        """The guild's configured log channel, else the default channel if it belongs to this guild."""
        configured = self.bot.memory.guild(str(guild_id)).log_channel_id
        if configured:
            channel = self.bot.get_channel(int(configured)) or self.bot.get_partial_messageable(
                int(configured), guild_id=guild_id
            )
        elif self.default_channel_id is not None:
            channel = self.bot.get_channel(self.default_channel_id)
            owner = getattr(channel, "guild", None)
            if owner is None or owner.id != guild_id:
                return None
        else:
            return None
        return channel if isinstance(channel, LogChannel) else None

    async def _send(self, guild_id: int, batch: _Batch) -> None:
        """Post one batch; Discord refusing it is logged (once per channel for Forbidden/NotFound), never raised."""
        self._last_sent[guild_id] = time.monotonic()
        try:
            channel = self.channel_for(guild_id)
        except Exception:
            log.exception("admin log could not find the log channel of guild %s", guild_id)
            return
        if channel is None:
            return
        lines = batch.lines + ([f"({plural(batch.dropped, 'more line')} dropped)"] if batch.dropped else [])
        for part in split_message("\n".join(lines)):
            try:
                await channel.send(part, allowed_mentions=discord.AllowedMentions.none())
            except (discord.Forbidden, discord.NotFound) as exc:
                if channel.id not in self._warned_channels:
                    self._warned_channels.add(channel.id)
                    log.warning(
                        "cannot post the admin log of guild %s to channel %s (%s); check the channel "
                        "and the bot's Send Messages permission",
                        guild_id,
                        channel.id,
                        "missing permission" if isinstance(exc, discord.Forbidden) else "channel not found",
                    )
                return
            except discord.HTTPException as exc:
                log.warning("admin log message to channel %s failed: %s", channel.id, exc)
                return
            except Exception:
                log.exception("admin log message to channel %s failed", channel.id)
                return
        self._warned_channels.discard(channel.id)

    def _take_due(self, now: float) -> list[tuple[int, _Batch]]:
        due = [(gid, b) for gid, b in self._batches.items() if b.due <= now]
        for gid, _ in due:
            del self._batches[gid]
        return due

    async def _run(self) -> None:
        # A flag rather than Task.cancel() stops the loop: a cancel racing the wake-up event is lost in
        # Python 3.11's wait primitives, and a half-sent batch is better finished than dropped.
        while not self._stopped:
            for guild_id, batch in self._take_due(time.monotonic()):
                await self._send(guild_id, batch)
            self._wakeup.clear()
            next_due = min((b.due for b in self._batches.values()), default=None)
            delay = None if next_due is None else max(0.0, next_due - time.monotonic())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wakeup.wait()

    def start(self) -> None:
        """Start the background sender (idempotent); lines queued before it are sent once due."""
        if self._task is None or self._task.done():
            self._stopped = False
            self._task = asyncio.create_task(self._run(), name="admin-log")

    async def stop(self, timeout: float = 3.0) -> None:
        """Send everything still queued at once (within `timeout`), then stop; later lines are only logged."""
        self._stopped = True
        self._wakeup.set()
        task, self._task = self._task, None
        try:
            async with asyncio.timeout(timeout):
                if task is not None:
                    await task
                for guild_id, batch in self._take_due(float("inf")):
                    await self._send(guild_id, batch)
        except TimeoutError:
            log.warning("admin log stopped before every queued line was posted")
        finally:
            if task is not None and not task.done():
                task.cancel()
