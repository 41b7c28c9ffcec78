"""What the stand-in records for tests to assert on: REST requests, messages and interactions."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

Waiter = Callable[[Callable[[], T | None], float], Awaitable[T]]


class Changes:
    """Lets tests wait until a condition on the stand-in's state holds, without polling."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        """Wake every waiter so it re-checks its condition."""
        self._event.set()
        self._event = asyncio.Event()

    async def wait_until(self, check: Callable[[], T | None], timeout: float, what: str = "condition") -> T:
        """Return the first non-None result of `check()`, re-checked after every change (and every 50 ms)."""
        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result is not None:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            event = self._event
            try:
                # Re-check now and then too, so conditions on state outside the stand-in work.
                await asyncio.wait_for(event.wait(), min(remaining, 0.05))
            except TimeoutError:
                continue


@dataclass
class RecordedRequest:
    """One REST request the bot made, with the status the stand-in answered."""

    method: str
    path: str
    query: dict[str, str]
    json: Any
    headers: dict[str, str]
    files: list[dict[str, Any]] = field(default_factory=list)
    status: int | None = None
    response: Any = None
    at: float = field(default_factory=time.monotonic)

    @property
    def route(self) -> str:
        """`METHOD /path`, handy in assertion messages."""
        return f"{self.method} {self.path}"


@dataclass
class StoredMessage:
    """A message in the model; `data` is its wire payload without guild-only gateway extras."""

    data: dict[str, Any]
    guild_id: int | None
    ephemeral: bool = False
    deleted: bool = False
    allowed_mentions: dict[str, Any] | None = None
    interaction_token: str | None = None

    @property
    def id(self) -> int:
        """The message id."""
        return int(self.data["id"])

    @property
    def channel_id(self) -> int:
        """The channel (or thread, or DM) id."""
        return int(self.data["channel_id"])

    @property
    def author_id(self) -> int:
        """The author's user id."""
        return int(self.data["author"]["id"])


class InteractionRecord:
    """One interaction the test started, and everything the bot answered to it, in order.

    `responses` holds dicts with `kind` ("callback", "followup", "edit_original", "delete_original",
    "edit_message", "delete_message"), `body` (the JSON the bot sent) and `message` (the resulting
    message payload, when there is one).
    """

    def __init__(self, interaction_id: int, token: str, payload: dict[str, Any], changes: Changes) -> None:
        self.id = interaction_id
        self.token = token
        self.payload = payload
        self.type: int = payload["type"]
        self.created = time.monotonic()
        self.responses: list[dict[str, Any]] = []
        self.original_message_id: int | None = None
        self.followup_ids: list[int] = []
        self.acknowledged = False
        self.errors: list[str] = []
        self._changes = changes

    def __repr__(self) -> str:
        return f"<InteractionRecord id={self.id} type={self.type} responses={len(self.responses)}>"

    @property
    def callback(self) -> dict[str, Any] | None:
        """The initial callback body (type + data), once the bot sent it."""
        for response in self.responses:
            if response["kind"] == "callback":
                return response["body"]
        return None

    def add(self, kind: str, body: Any, message: dict[str, Any] | None = None) -> dict[str, Any]:
        """Record one response and wake waiters."""
        entry = {"kind": kind, "body": body, "message": message}
        self.responses.append(entry)
        self._changes.notify()
        return entry

    async def wait_response(self, timeout: float = 5.0) -> dict[str, Any]:
        """The initial callback body (`{"type": 4, "data": {...}}` and so on)."""
        return await self._changes.wait_until(lambda: self.callback, timeout, f"the callback of {self!r}")

    async def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 5.0
    ) -> dict[str, Any]:
        """The first response entry (`{"kind", "body", "message"}`) matching `predicate`."""

        def check() -> dict[str, Any] | None:
            return next((r for r in self.responses if predicate(r)), None)

        return await self._changes.wait_until(check, timeout, f"a matching response to {self!r}")
