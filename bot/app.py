"""The composition root: settings -> Gemini client, storage, memory service, bot.

The only place that reads `Settings` to build the parts; the engine takes plain policies and ports,
so the CLI, the Discord client, the benchmarks and the tests all get a service wired the same way.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TypeVar

from bot.config import Settings
from bot.llm.gemini import GeminiClient
from bot.memory.capture import FlushPolicy
from bot.memory.policy import ConsolidationPolicy, MemoryPolicy, RecallPolicy
from bot.memory.service import MemoryService
from bot.storage import AsyncStore

P = TypeVar("P")


def memory_policy(settings: Settings) -> MemoryPolicy:
    """The engine's knobs from the environment's settings (`RECALL_*` fill `RecallPolicy`, and so on)."""
    return MemoryPolicy(
        flush=_fields(FlushPolicy, settings, "memory_flush_"),
        recall=_fields(RecallPolicy, settings, "recall_"),
        consolidation=_fields(ConsolidationPolicy, settings, "consolidate_"),
        no_memory_marker=settings.memory_no_memory_marker,
    )


def _fields(policy: type[P], settings: Settings, prefix: str) -> P:
    """A policy whose fields are the settings named `prefix` + field (fields without one keep defaults)."""
    values = {
        f.name: getattr(settings, prefix + f.name)
        for f in fields(policy)  # type: ignore[arg-type]  # every policy is a dataclass
        if hasattr(settings, prefix + f.name)
    }
    return policy(**values)


async def open_store(settings: Settings) -> AsyncStore:
    """The database the settings name, checked against their embedding model (not yet serving)."""
    return await AsyncStore.open(
        settings.database_path,
        embedding_model=settings.embedding_model,
        dimensions=settings.embedding_dimensions,
    )


async def open_memory(settings: Settings, gemini: GeminiClient | None = None) -> MemoryService:
    """The memory service on the settings' database and Gemini (a client of its own unless given);
    not started yet."""
    store = await open_store(settings)
    gemini = gemini or GeminiClient.from_settings(settings)
    return MemoryService(store, gemini, gemini, memory_policy(settings), usage=gemini.usage.snapshot)
