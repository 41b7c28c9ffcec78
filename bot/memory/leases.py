"""Leases in the shared database, so that processes on one database never do the same work twice.

A flush claims its channels (a channel another process is flushing is skipped), and consolidation
claims the people whose facts it writes (it waits for them: two flushes deciding against the same
facts at once could both add the same one). A lease lapses at its deadline, so a process that dies
holding one delays the work for at most `seconds`; work that holds a lease is bounded to less than
that, so it never runs on after its lease has passed to another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence

from bot.memory.ports import Storage, StorageWorker

POLL_SECONDS = 0.2  # how often a wait for a held lease asks again


class Leases:
    def __init__(self, store: StorageWorker, seconds: float, owner: str | None = None) -> None:
        self.store = store
        self.seconds = seconds
        self.owner = owner or uuid.uuid4().hex  # this process (one service per process)

    @property
    def work_deadline(self) -> float:
        """How long leased work may run: well inside the lease, so it ends before the lease can lapse."""
        return self.seconds * 0.8

    async def try_claim(self, keys: Sequence[str]) -> bool:
        return await self.store.call(Storage.claim, keys, self.owner, self.seconds)

    async def release(self, keys: Sequence[str]) -> None:
        await self.store.call(Storage.release, keys, self.owner)

    @contextlib.asynccontextmanager
    async def holding(self, keys: Sequence[str]) -> AsyncIterator[None]:
        """Hold every key, waiting while another process does (at most one lease's length)."""
        keys = sorted(set(keys))
        async with asyncio.timeout(self.seconds):
            while not await self.try_claim(keys):
                await asyncio.sleep(POLL_SECONDS)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):  # a lease left behind lapses on its own
                await self.release(keys)


def channel_key(channel_id: str) -> str:
    return f"channel:{channel_id}"


def person_key(scope: str, user_id: str) -> str:
    return f"person:{scope}:{user_id}"
