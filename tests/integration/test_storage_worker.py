"""The async worker: a port method runs as the store's own method, a function gets the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.memory.ports import Storage
from bot.storage import AsyncStore, DatabaseError, Store
from tests.fakes import DIMS


async def test_a_port_method_runs_the_stores_method_and_a_function_is_given_the_store(tmp_path: Path) -> None:
    worker = await AsyncStore.open(tmp_path / "w.sqlite3", embedding_model="fake-embedding", dimensions=DIMS)

    def get_state(store: Storage, key: str) -> str:  # named like a port method, but not one
        return f"mine:{key}"

    await worker.call(Storage.set_state, "k", "v")
    assert await worker.call(Storage.get_state, "k") == "v"
    assert await worker.call(Store.get_state, "k") == "v"
    assert await worker.call(get_state, "k") == "mine:k"
    assert await worker.call(lambda store: store) is worker.sync
    assert DatabaseError not in worker.row_errors and ValueError in worker.row_errors
    await worker.close()
    with pytest.raises(DatabaseError, match="closed"):
        await worker.call(Storage.get_state, "k")
