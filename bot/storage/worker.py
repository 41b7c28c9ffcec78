"""`AsyncStore`: the store's own thread, so the event loop never blocks on SQLite.

It is the engine's `StorageWorker` (bot/memory/ports.py) over a `Store`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from bot.memory.ports import Storage
from bot.storage.connection import DatabaseError, row_errors
from bot.storage.store import Store

P = ParamSpec("P")
R = TypeVar("R")

# The port's methods by their function objects: `Storage.knn` stands for the store's own `knn`.
_PORT_METHODS: dict[object, str] = {
    member: name
    for name, member in vars(Storage).items()
    if inspect.isfunction(member) and not name.startswith("_")
}


class AsyncStore:
    """Runs `Store` methods on one dedicated thread so the event loop never blocks on SQLite.

    `await store.call(Storage.method, args...)` is the single entry point: methods stay defined once, in
    `Store`, and each call is atomic with respect to every other call.
    """

    def __init__(self, store: Store) -> None:
        self.sync = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-store")
        self._closed = threading.Event()
        self._row_errors = row_errors()

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

    @property
    def row_errors(self) -> tuple[type[Exception], ...]:
        """What a statement raises because of its values (see connection.row_errors)."""
        return self._row_errors

    async def call(self, fn: Callable[Concatenate[Store, P], R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run `fn` with the store first, on the store's thread, and await its result.

        A method of the `Storage` port (`Storage.knn`, a protocol stub) runs as the store's own method of
        that name. Anything else, a `Store` method or a function such as `recall.gather_hits`, is called
        with the store as its first argument.
        """
        if self._closed.is_set():
            raise DatabaseError("the store is closed")
        name = _PORT_METHODS.get(fn)
        bound: Callable[P, R] = getattr(self.sync, name) if name else functools.partial(fn, self.sync)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: bound(*args, **kwargs))

    async def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self.sync.close)
        self._executor.shutdown(wait=True)
