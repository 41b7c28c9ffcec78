"""Shared fixtures: temporary databases on both backends, settings, and the memory service wired to fakes.

Every test that touches storage takes `database` (directly, or through `store`, `settings` or
`service`), which runs it twice: on an SQLite file, and on a fresh database of a real PostgreSQL
with pgvector that the suite starts itself (`pgserver`, a PyPI package bundling both), once per run.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from bot.app import memory_policy
from bot.config import Settings
from bot.memory.models import BufferedMessage, NewEpisode
from bot.memory.ports import Storage
from bot.memory.service import MemoryService
from bot.storage import AsyncStore
from bot.storage.locations import is_url, open_storage
from standins.brain import FakeBrain
from standins.gemini import GeminiStandIn
from tests.fakes import DIMS, FakeEmbedder, FakeLLM

BACKENDS = ["sqlite", "postgres"]


def make_settings(tmp_path: Path, database: Path | str | None = None, **overrides: object) -> Settings:
    """Test settings on `database` (a file path or a postgresql:// URL; default: a file in tmp_path)."""
    location = database or tmp_path / "memory.sqlite3"
    where: dict[str, Any] = (
        {"database_url": location} if is_url(location) else {"database_path": Path(location)}
    )
    base = Settings(
        discord_token="test-token",
        gemini_api_key="test-key",
        embedding_model="fake-embedding",
        embedding_dimensions=DIMS,
        memory_flush_quiet_seconds=3600,
        memory_flush_max_age_seconds=3600,
        # Tests of other things flush one message on quiet; the minimum chunk has tests of its own.
        memory_flush_min_messages=1,
        **where,
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


class PostgresDatabases:
    """A PostgreSQL server for the whole run; each test gets a database of its own, dropped after it."""

    def __init__(self, folder: Path) -> None:
        import pgserver
        import psycopg

        self.server = pgserver.get_server(folder, cleanup_mode="stop")
        self.admin = psycopg.connect(self.server.get_uri(), autocommit=True)
        # A test database is thrown away: durability settings only cost time here.
        for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
            self.admin.execute(f"ALTER SYSTEM SET {setting}")
        self.admin.execute("SELECT pg_reload_conf()")
        self._numbers = itertools.count(1)

    def create(self) -> str:
        name = f"test_{next(self._numbers)}"
        self.admin.execute(f"CREATE DATABASE {name} STRATEGY FILE_COPY")
        return str(self.server.get_uri(name))

    def drop(self, url: str) -> None:
        name = urlsplit(url).path.lstrip("/")
        self.admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def close(self) -> None:
        self.admin.close()
        self.server.cleanup()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresDatabases]:
    # A folder of its own, not under pytest's basetemp: another pytest run on the machine prunes old
    # basetemps, and a server whose data folder goes stops at once.
    folder = Path(tempfile.mkdtemp(prefix="memory-bot-pg-"))
    databases = PostgresDatabases(folder)
    yield databases
    databases.close()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres: PostgresDatabases) -> Iterator[str]:
    """A fresh, empty PostgreSQL database (no tables, no extension yet)."""
    url = postgres.create()
    yield url
    postgres.drop(url)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | str:
    """Where the test's database is: a file that does not exist yet, or an empty PostgreSQL database."""
    if backend == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return tmp_path / "memory.sqlite3"


@pytest.fixture
def settings(tmp_path: Path, database: Path | str) -> Settings:
    return make_settings(tmp_path, database)


@pytest.fixture
def store(database: Path | str) -> Iterator[Any]:
    """The backend's synchronous store (`Any`: each backend's `Store` has its own `conn`)."""
    s: Storage = open_storage(database, embedding_model="fake-embedding", dimensions=DIMS)
    yield s
    s.close()


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def llm() -> FakeLLM:
    return FakeLLM()


@contextlib.asynccontextmanager
async def open_service(
    settings: Settings, llm: FakeLLM, embedder: FakeEmbedder
) -> AsyncIterator[MemoryService]:
    """The memory service on the settings' database with the fake models, started, and closed after."""
    store = await AsyncStore.open(
        settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
    )
    svc = MemoryService(store, llm, embedder, memory_policy(settings))
    await svc.start()
    try:
        yield svc
    finally:
        await svc.close(timeout=2)


@pytest.fixture
async def service(settings: Settings, llm: FakeLLM, embedder: FakeEmbedder) -> AsyncIterator[MemoryService]:
    async with open_service(settings, llm, embedder) as svc:
        yield svc


@pytest.fixture
async def gemini_brain() -> AsyncIterator[tuple[GeminiStandIn, FakeBrain]]:
    """The Gemini stand-in answering memory tasks by rule (standins/brain.py) and chat with one line."""
    async with GeminiStandIn() as standin:
        brain = FakeBrain(chat_reply="Noted, thanks.")
        standin.generate_handler = brain
        yield standin, brain


async def record_episode(service: MemoryService, said: BufferedMessage) -> int:
    """An episode of one message, as a flush that read it records it (its summary the message's words,
    embedded by the service's embedder); its id."""
    await service.store.call(Storage.buffer_messages, [(said, 0.0)])
    [vector] = await service.embed_queries([said.content])
    episode = NewEpisode(
        said.scope, said.origin, said.content, said.created_at, said.created_at,
        {said.message_id: said.author_id}, embedding=vector,
    )  # fmt: skip
    await service.store.call(
        Storage.apply_flush,
        [],
        episodes=[episode],
        consumed_message_ids=[said.message_id],
        read_texts={said.message_id: said.content},
    )
    [stored] = await service.list_episodes(said.scope, channel_ids=[said.channel_id])
    return stored.id
