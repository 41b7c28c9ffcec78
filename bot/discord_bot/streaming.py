"""A reply as Discord shows it while the model streams it: edits paced at what Discord allows, a note
when the first word is slow to come, and sends and edits that wait out Discord's rate limits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, TypeVar

import discord

from bot.memory.text import looks_blank

log = logging.getLogger(__name__)

T = TypeVar("T")

EDIT_INTERVAL_SECONDS = 1.5
SLOW_REPLY_SECONDS = 15.0  # no word of an answer by then: the member is told it is on its way
SLOW_REPLY_NOTE = "The model is slow right now; your answer is on its way."
RATE_LIMIT_DEADLINE_SECONDS = 60.0  # how long a reply's send or edit waits out a storm of 429s


async def past_rate_limits(
    call: Callable[[], Awaitable[T]], deadline: float = RATE_LIMIT_DEADLINE_SECONDS
) -> T:
    """`call` (a send or an edit), tried again when Discord still answers 429 after discord.py's own
    retries, waiting longer each time, until `deadline` seconds have passed. A 429 means nothing was
    sent, so trying again never sends a message twice; the parts of a reply go one after the other."""
    ends = time.monotonic() + deadline
    wait = 1.0
    while True:
        try:
            return await call()
        except discord.HTTPException as exc:
            if exc.status != 429 or time.monotonic() + wait > ends:
                raise
            log.info("Discord kept rate-limiting a reply; trying again in %.0f s", wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, 16.0)


class Shows(Protocol):
    """What puts a reply's text on Discord (the chat cog): edits the parts sent, sends the new ones."""

    async def show(
        self,
        trigger: discord.Message,
        sent: list[discord.Message],
        text: str,
        *,
        remember: bool,
        final: bool,
        view: discord.ui.View | None = None,
    ) -> None: ...


class Streamed:
    """A reply as Discord shows it while it streams (the use case's sink): the sent messages edited at
    most every EDIT_INTERVAL_SECONDS, the last part with the streaming marker until `finish`."""

    def __init__(
        self, chat: Shows, trigger: discord.Message, sent: list[discord.Message], *, remember: bool
    ) -> None:
        self.chat = chat
        self.trigger = trigger
        self.sent = sent
        self.remember = remember
        self.text = ""
        self.last_sync = 0.0
        self._showing = asyncio.Lock()  # the slow-answer note and the stream never send at once

    async def add(self, piece: str) -> None:
        # A new piece means the text so far is not the end: shown with the marker.
        if not looks_blank(self.text) and time.monotonic() - self.last_sync >= EDIT_INTERVAL_SECONDS:
            async with self._showing:
                await self.chat.show(self.trigger, self.sent, self.text, remember=self.remember, final=False)
            self.last_sync = time.monotonic()
        self.text += piece

    async def finish(self, view: discord.ui.View | None = None) -> None:
        """Show the whole text without the marker; its last part with `view` (the sign that memory was
        used: put on with the last edit, never while the text still changes)."""
        if self.sent:  # keep edits at least EDIT_INTERVAL_SECONDS apart, the last one too
            await asyncio.sleep(max(0.0, self.last_sync + EDIT_INTERVAL_SECONDS - time.monotonic()))
        async with self._showing:
            await self.chat.show(
                self.trigger, self.sent, self.text, remember=self.remember, final=True, view=view
            )

    @contextlib.asynccontextmanager
    async def saying_when_slow(self) -> AsyncIterator[None]:
        """While the body runs: once SLOW_REPLY_SECONDS pass without a word of the answer (a model on a
        CPU reads a long prompt first, or waits for the one call ahead of it), the member is told the
        answer is coming, in the message the answer then takes over."""
        noted = asyncio.Event()

        async def note() -> None:
            await asyncio.sleep(SLOW_REPLY_SECONDS)
            noted.set()
            async with self._showing:
                if not self.sent and looks_blank(self.text):
                    await self.chat.show(
                        self.trigger, self.sent, SLOW_REPLY_NOTE, remember=False, final=False
                    )
                    self.last_sync = time.monotonic()

        task = asyncio.create_task(note())
        try:
            yield
        finally:
            if noted.is_set():  # sending: let it finish, or its message would be lost to the answer
                with contextlib.suppress(Exception):
                    await task
            else:
                task.cancel()
