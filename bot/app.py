"""The composition root: settings -> models, storage, memory service, bot.

The only place that reads `Settings` to build the parts; the engine takes plain policies and ports,
so the CLI, the Discord client, the benchmarks and the tests all get a service wired the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from bot.config import Settings
from bot.llm.gemini import GeminiClient
from bot.llm.usage import Usage
from bot.memory.capture import FlushPolicy
from bot.memory.maintenance import Maintenance
from bot.memory.policy import ConsolidationPolicy, MemoryPolicy, RecallPolicy
from bot.memory.ports import ChatModel, Embedder, JsonModel, ModelError
from bot.memory.service import MemoryService
from bot.processes import process_holder
from bot.storage import AsyncStore, DatabaseError
from bot.storage.errors import MigrationRefused as MigrationRefused  # for the CLI: a refusal, not a cut
from bot.storage.locations import backend_for
from bot.storage.migration import MigrationReport, copy_database

P = TypeVar("P")


def memory_policy(settings: Settings) -> MemoryPolicy:
    """The engine's knobs from the environment's settings (`RECALL_*` fill `RecallPolicy`, and so on)."""
    return MemoryPolicy(
        flush=_fields(FlushPolicy, settings, "memory_flush_"),
        recall=_fields(RecallPolicy, settings, "recall_"),
        consolidation=_fields(ConsolidationPolicy, settings, "consolidate_"),
        no_memory_marker=settings.memory_no_memory_marker,
        community=settings.memory_community,
    )


def _fields(policy: type[P], settings: Settings, prefix: str) -> P:
    """A policy whose fields are the settings named `prefix` + field (fields without one keep defaults)."""
    values = {
        f.name: getattr(settings, prefix + f.name)
        for f in fields(policy)  # type: ignore[arg-type]  # every policy is a dataclass
        if hasattr(settings, prefix + f.name)
    }
    return policy(**values)


def failures(settings: Settings) -> tuple[type[Exception], ...]:
    """Every error that means Gemini or the database failed (ours and the backend driver's): reported in
    one line (`failure_line`), never as a traceback."""
    return (ModelError, DatabaseError, *backend_for(settings.database_location).errors)


async def open_store(settings: Settings, *, allow_model_change: bool = False) -> AsyncStore:
    """The database the settings name, checked against their embedding model (unless a model change is
    allowed: listing and forgetting work whatever the embedding state)."""
    return await AsyncStore.open(
        settings.database_location,
        embedding_model=settings.embedding_model,
        dimensions=settings.embedding_dimensions,
        allow_model_change=allow_model_change,
    )


@dataclass(frozen=True)
class Models:
    """The models the settings choose: structured answers for the engine, embeddings, the chat, and the
    usage counters they all count in. One client may play several parts; `aclose` closes each once."""

    json: JsonModel
    embedder: Embedder
    chat: ChatModel
    usage: Usage
    clients: tuple[Any, ...]

    async def aclose(self) -> None:
        for client in self.clients:
            with contextlib.suppress(Exception):
                await client.aclose()


def open_models(settings: Settings, *, max_retries: int | None = None) -> Models:
    """The model clients of the settings' provider (`max_retries` overrides their retry budget)."""
    usage = Usage()
    gemini = GeminiClient.from_settings(settings, usage)
    if max_retries is not None:
        gemini.max_retries = max_retries
    return Models(json=gemini, embedder=gemini, chat=gemini, usage=usage, clients=(gemini,))


async def open_memory(settings: Settings, models: Models | None = None) -> MemoryService:
    """The memory service on the settings' database and models (opened here unless given);
    not started yet. Closing the service closes the models."""
    store = await open_store(settings)
    models = models or open_models(settings)
    return MemoryService(
        store,
        models.json,
        models.embedder,
        memory_policy(settings),
        usage=models.usage.snapshot,
        holder=process_holder(),
        close_models=models.aclose,
    )


async def open_maintenance(settings: Settings, *, embedder: Embedder | None = None) -> Maintenance:
    """The operator's use cases on the settings' database, whatever its embedding state; `embedder` for
    re-embedding only."""
    return Maintenance(await open_store(settings, allow_model_change=True), embedder)


def database_exists(settings: Settings) -> bool:
    """Whether there is a database to read (commands that only read must not create an empty one)."""
    return backend_for(settings.database_location).exists(str(settings.database_location))


def database_backend(settings: Settings) -> str:
    """The name of the storage backend the settings choose ("SQLite", "PostgreSQL")."""
    return backend_for(settings.database_location).name


def migrate_database(
    settings: Settings,
    target: Settings,
    *,
    into_non_empty: bool = False,
    progress: Callable[[str, int], None] | None = None,
) -> MigrationReport:
    """Copy the SQLite file of `settings` into the PostgreSQL database of `target` (resumable, verified)."""
    if not target.database_url:
        raise DatabaseError("the target must be a PostgreSQL database (postgresql://...)")
    return copy_database(
        settings.database_path, target.database_url, into_non_empty=into_non_empty, progress=progress
    )


def failure_line(settings: Settings, exc: BaseException) -> str:
    """One line for a Gemini or database failure, naming which of the two failed (and never a password)."""
    if isinstance(exc, ModelError):
        return f"Gemini: {exc}"
    location, where = str(settings.database_location), settings.database_shown
    text = str(exc) if isinstance(exc, DatabaseError) else backend_for(location).describe(location, exc)
    return text if where in text else f"database {where}: {text}"
