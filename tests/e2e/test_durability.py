"""A crash between capture and flush loses nothing: the next start flushes what the killed process captured."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from bot.app import memory_policy
from bot.llm.gemini import GeminiClient
from bot.memory.capture import FlushPolicy
from bot.memory.model_ports import ModelError, Purpose
from bot.memory.service import MemoryService
from bot.storage import AsyncStore, Store
from standins.brain import FakeBrain
from standins.gemini import GeminiStandIn
from tests.conftest import make_settings
from tests.fakes import DIMS, FakeEmbedder, FakeLLM
from tests.integration.test_capture import echo_extractor, wait_until
from tests.integration.test_pipeline import msg

ROOT = Path(__file__).resolve().parents[2]


async def test_messages_captured_before_a_sigkill_are_flushed_after_restart(tmp_path: Path) -> None:
    db = tmp_path / "crash.sqlite3"
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.e2e.durability_child",
        str(db),
        "9",
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), timeout=30)
        assert line == b"CAPTURED\n"
    finally:
        child.send_signal(signal.SIGKILL)
    assert await child.wait() == -signal.SIGKILL

    settings = make_settings(tmp_path, database_path=db)
    store = await AsyncStore.open(db, embedding_model="fake-embedding", dimensions=DIMS)
    assert await store.call(Store.count_pending) == 9
    llm = FakeLLM(extract=echo_extractor)
    service = MemoryService(store, llm, FakeEmbedder(), memory_policy(settings))
    service.capture_buffer.policy = FlushPolicy(quiet_seconds=0.1, tick_seconds=0.05)
    await service.start()
    try:

        async def all_learned() -> bool:
            stats = await service.stats()
            return stats["facts"]["active"] == 9 and stats["pending_messages"] == 0

        await wait_until(all_learned, timeout=10)
        assert llm.count(Purpose.EXTRACT) == 1
        texts = sorted(f.text for f in await service.list_facts("guild:100", "user0"))
        assert texts == sorted(f"User0 said: I have a pet number {i}" for i in (0, 3, 6))
    finally:
        await service.close()


async def test_gemini_failing_for_the_whole_retry_budget_keeps_messages_until_it_answers(
    tmp_path: Path,
) -> None:
    async with GeminiStandIn() as gemini:
        gemini.generate_handler = FakeBrain()
        client = GeminiClient(
            api_key="k",
            base_url=gemini.base_url,
            chat_model="chat",
            memory_model="memory",
            embedding_model="fake-embedding",
            embedding_dimensions=DIMS,
            max_retries=2,
            backoff_base_seconds=0.01,
        )
        settings = make_settings(tmp_path)
        store = await AsyncStore.open(
            settings.database_path, embedding_model="fake-embedding", dimensions=DIMS
        )
        service = MemoryService(store, client, client, memory_policy(settings))
        await service.start()
        try:
            service.capture(msg("m1", "alice", "I live in Tromsø"), guild_id="100")
            gemini.fail_next(503, count=3, kind="generate")
            with pytest.raises(ModelError):
                await service.flush_now()
            assert len(gemini.of_kind("generate")) == 3  # the first try and both retries
            assert await store.call(Store.count_pending) == 1
            assert client.usage.snapshot()["extract"]["errors"] == 1
            await service.flush_now()
            assert await store.call(Store.count_pending) == 0
            assert [f.text for f in await service.list_facts("guild:100", "alice")] == [
                "Alice lives in Tromsø"
            ]
        finally:
            await service.close()
