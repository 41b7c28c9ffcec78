"""Shared fixtures: temporary databases, settings, and the memory service wired to fakes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from bot.app import memory_policy
from bot.config import Settings
from bot.memory.service import MemoryService
from bot.storage import AsyncStore, Store
from standins.brain import FakeBrain
from standins.gemini import GeminiStandIn
from tests.fakes import DIMS, FakeEmbedder, FakeLLM


def make_settings(tmp_path: Path, **overrides: object) -> Settings:
    base = Settings(
        discord_token="test-token",
        gemini_api_key="test-key",
        database_path=tmp_path / "memory.sqlite3",
        embedding_model="fake-embedding",
        embedding_dimensions=DIMS,
        memory_flush_quiet_seconds=3600,
        memory_flush_max_age_seconds=3600,
        # Tests of other things flush one message on quiet; the minimum chunk has tests of its own.
        memory_flush_min_messages=1,
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "store.sqlite3", embedding_model="fake-embedding", dimensions=DIMS)
    yield s
    s.close()


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def llm() -> FakeLLM:
    return FakeLLM()


@pytest.fixture
async def service(settings: Settings, llm: FakeLLM, embedder: FakeEmbedder) -> AsyncIterator[MemoryService]:
    store = await AsyncStore.open(settings.database_path, embedding_model="fake-embedding", dimensions=DIMS)
    svc = MemoryService(store, llm, embedder, memory_policy(settings))
    await svc.start()
    yield svc
    await svc.close(timeout=2)


@pytest.fixture
async def gemini_brain() -> AsyncIterator[tuple[GeminiStandIn, FakeBrain]]:
    """The Gemini stand-in answering memory tasks by rule (standins/brain.py) and chat with one line."""
    async with GeminiStandIn() as standin:
        brain = FakeBrain(chat_reply="Noted, thanks.")
        standin.generate_handler = brain
        yield standin, brain
