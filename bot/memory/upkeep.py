"""The rounds a running bot does in the background, away from any message: the keyword index folded
together, the erasure of servers the bot was removed from long enough ago, what forgets deleted
vacuumed away, and the use per day counted in memory written in a batch. Each round's failure (a busy database) is logged and the next round tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.memory.policy import MemoryPolicy
from bot.memory.ports import Storage, StorageWorker

log = logging.getLogger(__name__)

INDEX_UPKEEP_PAGES = 200  # pages of keyword-index merging per step: ~25 ms of the store's time
INDEX_UPKEEP_PIECES = 4  # the keyword index is folded once it is in this many pieces
INDEX_UPKEEP_STEPS = 500  # steps in a round at most (100,000 pages: the index of ~4M facts)
USE_PER_DAY_SECONDS = 60.0  # how often the use per day counted in memory is written (a crash loses one)


async def tidy_word_index(store: StorageWorker) -> int:
    """Fold the keyword index into one piece once it is in `INDEX_UPKEEP_PIECES` or more, in steps
    that are each their own call on the store (a recall waits one step at most); returns the steps.

    SQLite: a keyword search reads every piece of the index, and FTS5 adds one per write (0.36 ms
    p50 with 8 pieces at a million facts, 0.09 ms with one). Folding rewrites the whole index, so it
    waits for a few pieces rather than following every write, and a round stops after
    `INDEX_UPKEEP_STEPS` steps: facts written while it runs add pieces, and the next round goes on.
    """
    if await store.call(Storage.word_index_pieces) < INDEX_UPKEEP_PIECES:
        return 0
    steps = 0
    while steps < INDEX_UPKEEP_STEPS and await store.call(Storage.tidy_word_index, INDEX_UPKEEP_PAGES):
        steps += 1
    return steps


class Upkeep:
    """The background rounds of one service. `forget_removed_servers` is the service's erasure of the
    servers the bot was removed from longer than the grace period ago; `write_use_per_day` writes the
    use per day counted since its last batch."""

    def __init__(
        self,
        store: StorageWorker,
        policy: MemoryPolicy,
        forget_removed_servers: Callable[[], Awaitable[Any]],
        write_use_per_day: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self.store = store
        self.policy = policy
        self._forget_removed_servers = forget_removed_servers
        self._write_use_per_day = write_use_per_day
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._keep_word_index_tidy(), name="word-index-upkeep"),
            asyncio.create_task(self._vacuum_after_forgets(), name="vacuum-after-forgets"),
        ]
        if self._write_use_per_day is not None:
            self._tasks.append(asyncio.create_task(self._write_use(), name="use-per-day"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _vacuum_after_forgets(self) -> None:
        """Every `vacuum_seconds`, what forgets deleted leaves the files where the backend keeps it until a
        VACUUM (PostgreSQL's dead tuples), so an erasure is done in minutes, not at autovacuum's pace."""
        while True:
            await asyncio.sleep(self.policy.vacuum_seconds)
            try:
                await self.store.call(Storage.vacuum_deleted)
            except Exception as exc:  # a busy database: the next pass tries again
                log.warning("could not vacuum after forgets: %s", exc)

    async def _keep_word_index_tidy(self) -> None:
        """Every `index_upkeep_seconds`, a round of `tidy_word_index`, and the erasure of the servers the
        bot was removed from longer than the grace period ago (`forget_removed_servers`)."""
        while True:
            await asyncio.sleep(self.policy.index_upkeep_seconds)
            try:
                await tidy_word_index(self.store)
            except Exception as exc:  # a busy database: the next round tries again
                log.warning("could not tidy the keyword index: %s", exc)
            try:
                await self._forget_removed_servers()
            except Exception as exc:
                log.warning("could not erase the memory of servers the bot was removed from: %s", exc)

    async def _write_use(self) -> None:
        """Every `USE_PER_DAY_SECONDS`, the use per day counted in memory is added to the database in one
        batch (never a write per message); a failed batch is kept and tried with the next."""
        assert self._write_use_per_day is not None
        while True:
            await asyncio.sleep(USE_PER_DAY_SECONDS)
            try:
                await self._write_use_per_day()
            except Exception as exc:
                log.warning("could not write the use per day: %s", exc)
