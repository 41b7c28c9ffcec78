"""`AsyncStore`: a store's own thread, so the event loop never blocks on the database.

It is the engine's `StorageWorker` (bot/memory/ports.py) over any backend's `Storage`.
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
from bot.storage.errors import DatabaseError
from bot.storage.locations import backend_for, open_storage

P = ParamSpec("P")
R = TypeVar("R")

# The port's methods by their function objects: `Storage.knn` stands for the store's own `knn`.
_PORT_METHODS: dict[object, str] = {
    member: name
    for name, member in vars(Storage).items()
    if inspect.isfunction(member) and not name.startswith("_")
}


class AsyncStore:
    """Runs a store's methods on one dedicated thread so the event loop never blocks on the database.

    `await store.call(Storage.method, args...)` is the single entry point: methods stay defined once, in
    the backend's store, and each call is atomic with respect to every other call.
    """

    def __init__(
        self, store: Storage, row_errors: tuple[type[Exception], ...] = (ValueError, TypeError)
    ) -> None:
        self.sync = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-store")
        self._closed = threading.Event()
        self._row_errors = row_errors

    @classmethod
    async def open(
        cls, location: Path | str, *, embedding_model: str, dimensions: int, allow_model_change: bool = False
    ) -> AsyncStore:
        """The database at `location` (a file, or a postgresql:// URL), opened off the event loop."""
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-store")
        try:
            store = await loop.run_in_executor(
                executor,
                lambda: open_storage(
                    location,
                    embedding_model=embedding_model,
                    dimensions=dimensions,
                    allow_model_change=allow_model_change,
                ),
            )
        finally:
            executor.shutdown(wait=False)
        return cls(store, backend_for(location).row_errors)

    @property
    def row_errors(self) -> tuple[type[Exception], ...]:
        """What a statement raises because of its values (see the backend's `row_errors`)."""
        return self._row_errors

    async def call(self, fn: Callable[Concatenate[Storage, P], R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run `fn` with the store first, on the store's thread, and await its result.

        A method of the `Storage` port (`Storage.knn`, a protocol stub) runs as the store's own method of
        that name. Anything else, such as `recall.gather_hits`, is called with the store as its first
        argument.
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
