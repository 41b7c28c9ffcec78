"""A bot-like process that captures messages and then waits to be killed (for the durability test).

Usage: python -m tests.e2e.durability_child DATABASE_PATH COUNT
Prints CAPTURED once every message is committed to the buffer, then sleeps until SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bot.app import memory_policy
from bot.memory.service import MemoryService
from bot.storage import AsyncStore
from tests.conftest import make_settings
from tests.fakes import DIMS, FakeEmbedder, FakeLLM
from tests.integration.test_pipeline import msg


async def main(path: Path, count: int) -> None:
    settings = make_settings(path.parent, database_path=path)
    store = await AsyncStore.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    service = MemoryService(store, FakeLLM(), FakeEmbedder(), memory_policy(settings))
    await service.start()
    for i in range(count):
        service.capture(msg(f"m{i}", f"user{i % 3}", f"I have a pet number {i}"), guild_id="100")
    await service.capture_buffer.wait_written()
    sys.stdout.write("CAPTURED\n")
    sys.stdout.flush()
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
