"""Who goes first at a model endpoint: a member's reply before the bot's learning.

A local server answers one request at a time: llama-cpp-python's serves them in turn, and by default
(`interrupt_requests`) it ends the stream it is sending as soon as another request arrives. Run that way,
a flush five seconds after a question cut both streamed replies off (issue 34). So every call to such an
endpoint takes a turn at its `EndpointGate`: replies, and the query embeddings they recall with, are in
the foreground; learning (extraction, consolidation, the community reading, embeddings of new facts) is
in the background. A background call waits while any foreground call runs or waits, and for a moment
after one ends (a reply's rounds follow each other: a lookup, a tool's result); at most `slots` calls
are in flight at once. A reply therefore never waits behind the queue of a flush,
only, at worst, for the one background call already in flight, which a one-at-a-time server cannot put
down. An endpoint with no limit (`slots` 0: a hosted API) gives every call its turn at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import time
from collections.abc import AsyncIterator
from urllib.parse import urlparse

QUIET_SECONDS = 0.5  # how long learning waits after a reply's call, for the reply's next round


class EndpointGate:
    """Turns at one endpoint: at most `slots` calls at once (0: no limit), the foreground first."""

    def __init__(self, slots: int = 0, *, quiet_seconds: float = QUIET_SECONDS) -> None:
        self.slots = max(0, slots)
        self.quiet_seconds = quiet_seconds
        self.background_waits = 0  # how often learning stood aside (for stats)
        self._running = 0
        self._foreground = 0  # foreground calls running or waiting
        self._quiet_until = 0.0
        self._waiting: list[tuple[bool, asyncio.Future[None]]] = []
        self._timer: asyncio.TimerHandle | None = None

    @contextlib.asynccontextmanager
    async def turn(self, *, foreground: bool) -> AsyncIterator[None]:
        """Hold one of the endpoint's slots for the body; a background call waits for the foreground."""
        if not self.slots:
            yield
            return
        await self._enter(foreground)
        try:
            yield
        finally:
            self._leave(foreground)

    async def _enter(self, foreground: bool) -> None:
        if foreground:
            self._foreground += 1
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((foreground, waiter))
        self._grant()
        if not waiter.done() and not foreground:
            self.background_waits += 1
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():  # granted just as it was cancelled
                self._running -= 1
            else:
                self._waiting.remove((foreground, waiter))
            if foreground:
                self._foreground -= 1
            self._grant()
            raise

    def _leave(self, foreground: bool) -> None:
        self._running -= 1
        if foreground:
            self._foreground -= 1
            self._quiet_until = time.monotonic() + self.quiet_seconds
        self._grant()

    def _grant(self) -> None:
        """Give free slots to the waiting: the first foreground call, else (when no foreground call runs
        or waits and the quiet moment is over) the first background one."""
        while self._running < self.slots and self._waiting:
            chosen = next((w for w in self._waiting if w[0]), None)
            if chosen is None:
                if self._foreground:
                    return
                left = self._quiet_until - time.monotonic()
                if left > 0:
                    if self._timer is None:
                        self._timer = asyncio.get_running_loop().call_later(left, self._wake)
                    return
                chosen = self._waiting[0]
            self._waiting.remove(chosen)
            self._running += 1
            chosen[1].set_result(None)

    def _wake(self) -> None:
        self._timer = None
        self._grant()


def serves_one_at_a_time(base_url: str) -> bool:
    """Whether an OpenAI-compatible base URL is a server on this machine or this network (llama.cpp,
    llama-cpp-python, Ollama, LM Studio as usually run): one request at a time, measured on
    llama-cpp-python 0.3.16's server, which has no parallel slots at all. A hosted API is not."""
    host = urlparse(base_url).hostname or ""
    if not host:
        return False  # OpenAI's own API
    if host == "localhost" or host.endswith((".local", ".lan", ".internal", ".home.arpa")) or "." not in host:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local
