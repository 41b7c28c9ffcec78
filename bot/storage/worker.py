"""`AsyncStore`: the store's own thread, so the event loop never blocks on SQLite."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from bot.storage.connection import DatabaseError
from bot.storage.store import Store

P = ParamSpec("P")
R = TypeVar("R")


class AsyncStore:
    """Runs `Store` methods on one dedicated thread so the event loop never blocks on SQLite.

    `await store.call(Store.method, args...)` is the single entry point: methods stay defined once, in
    `Store`, and each call is atomic with respect to every other call.
    """

    def __init__(self, store: Store) -> None:
        self.sync = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-store")
        self._closed = threading.Event()

    @classmethod
    async def open(cls, path: Path | str, *, embedding_model: str, dimensions: int) -> AsyncStore:
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-store")
        try:
            store = await loop.run_in_executor(
                executor, lambda: Store.open(path, embedding_model=embedding_model, dimensions=dimensions)
            )
        finally:
            executor.shutdown(wait=False)
        return cls(store)

    async def call(self, method: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        if self._closed.is_set():
            raise DatabaseError("the store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: method(self.sync, *args, **kwargs))

    async def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self.sync.close)
        self._executor.shutdown(wait=True)
