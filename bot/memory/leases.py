"""Leases in the shared database, so that processes on one database never do the same work twice.

A flush claims its channels (a channel another process is flushing is skipped), and consolidation
claims the people whose facts it writes (it waits for them: two flushes deciding against the same
facts at once could both add the same one). A lease lapses at its deadline, so a process that dies
holding one delays the work for at most `seconds`; work that holds a lease is bounded to less than
that, so it never runs on after its lease has passed to another process. A refused claim asks the
`Holder` whether the lease's holder is dead (the composition root's check knows this machine's
processes: a crashed process restarted on its host resumes at once); a holder it cannot judge is
waited for until its deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from bot.memory.ports import Storage, StorageWorker

log = logging.getLogger(__name__)

POLL_SECONDS = 0.2  # how often a wait for a held lease asks again


def _unknown(name: str) -> bool:
    return False


@dataclass(frozen=True)
class Holder:
    """This process's name in the leases, and how it tells that another holder has died.

    The default knows no processes: a random name, and no holder is ever known dead (each lease is
    waited for until its deadline).
    """

    name: str = field(default_factory=lambda: uuid.uuid4().hex)
    dead: Callable[[str], bool] = _unknown


class Leases:
    def __init__(self, store: StorageWorker, seconds: float, holder: Holder | None = None) -> None:
        self.store = store
        self.seconds = seconds
        self.holder = holder or Holder()  # this service (one per process, but tests run several)

    @property
    def owner(self) -> str:
        return self.holder.name

    @property
    def work_deadline(self) -> float:
        """How long leased work may run: well inside the lease, so it ends before the lease can lapse."""
        return self.seconds * 0.8

    async def try_claim(self, keys: Sequence[str]) -> bool:
        if await self.store.call(Storage.claim, keys, self.owner, self.seconds):
            return True
        # Refused, the rare case: a holder known to be dead holds nothing, whatever its deadline says.
        holders = await self.store.call(Storage.lease_holders, keys)
        dead = [name for name in holders if name != self.owner and self.holder.dead(name)]
        if not dead or not await self.store.call(Storage.claim, keys, self.owner, self.seconds, dead):
            return False
        log.info("took over the leases on %s of %s, which no longer runs", ", ".join(keys), ", ".join(dead))
        return True

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
