"""The operator's use cases on stored memory, with the bot stopped or running: list, forget, export,
statistics, health, re-embedding.

Separate from `MemoryService` because none of them needs the chat model, and all but re-embedding need
no model at all: a deletion request must work without a model's key and whatever the embedding state.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.memory.counting import STATE_KEY as COUNTING_STATE
from bot.memory.counting import described
from bot.memory.model_ports import Embedder, ModelError
from bot.memory.models import Fact, FactStatus
from bot.memory.ports import Storage, StorageWorker

log = logging.getLogger(__name__)

# The state key under which the bot records its last run's model usage (who served it, and the counters);
# databases of earlier versions hold the counters alone under LEGACY_USAGE_STATE, whatever the provider.
USAGE_STATE = "model_usage"
LEGACY_USAGE_STATE = "gemini_usage"


@dataclass
class Reembedded:
    """What a re-embedding did: how many facts got new vectors, and whether there was anything to do."""

    done: int
    up_to_date: bool = False
    error: ModelError | None = None  # progress is kept per batch; running again carries on


class Maintenance:
    """Stored memory for an operator. `embedder` is needed by `reembed` only."""

    def __init__(self, store: StorageWorker, embedder: Embedder | None = None) -> None:
        self.store = store
        self.embedder = embedder

    async def close(self) -> None:
        await self.store.close()

    async def health(self) -> dict[str, Any]:
        return await self.store.call(Storage.health)

    async def list_facts(self, scope: str, user_id: str, *, all_statuses: bool = False) -> list[Fact]:
        return await self.store.call(
            Storage.list_facts, scope, user_id, all_statuses=all_statuses, limit=1_000_000
        )

    async def forget(self, scope: str, user_id: str, fact_ids: list[int] | None, *, actor: str) -> int:
        """Hard-delete one person's facts in a scope (None: all of them); returns how many went."""
        return await self.store.call(Storage.forget, scope, user_id, fact_ids, actor=actor)

    async def forget_server(self, scope: str, *, actor: str) -> tuple[int, int]:
        """A server's forget-everything (every fact of everyone and of the community, every episode, every
        buffered message), as /memory-admin forget-server does; for a server the bot is no longer in.
        Returns how many facts and episodes went."""
        return await self.store.call(Storage.forget_scope, scope, actor=actor)

    async def export(self, scope: str, user_id: str | None) -> list[tuple[Fact, str]]:
        """The active facts of a person (None: everyone) in a scope, oldest first, each with its owner's name."""
        facts = [
            f
            for f in await self.store.call(Storage.export_facts, scope, user_id)
            if f.status is FactStatus.ACTIVE
        ]
        names = await self.store.call(Storage.user_names, scope, {f.user_id for f in facts})
        return [(f, names.get(f.user_id, "")) for f in facts]

    async def stats(self) -> dict[str, Any]:
        """Counts by status, people, pending messages, and the model usage of the bot's last run (None
        before its first; from an earlier version's database, the counters without who served them)."""
        stats = await self.store.call(Storage.stats, None)
        usage = await self.store.call(Storage.get_state, USAGE_STATE)
        legacy = None if usage else await self.store.call(Storage.get_state, LEGACY_USAGE_STATE)
        if usage:
            stats["model_usage_last_run"] = json.loads(usage)
        else:
            stats["model_usage_last_run"] = {"purposes": json.loads(legacy)} if legacy else None
        counted = await self.store.call(Storage.get_state, COUNTING_STATE)
        stats["selection"] = described(json.loads(counted) if counted else None)
        return stats

    async def reembed(
        self,
        model: str,
        dimensions: int,
        *,
        batch: int = 100,
        force: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> Reembedded:
        """Re-embed every fact (all statuses), then every episode, with `model`, `batch` at a time; safe to
        interrupt and run again (vectors of two models are never searched together: the store refuses
        the new model until this finishes).

        Each batch's vectors and the progress land in one transaction, so a failure keeps what was done.
        `progress(done, total)` is called after each batch (`total`: facts and episodes this run does).
        """
        if self.embedder is None:
            raise ValueError("re-embedding needs an embedder")
        store = self.store
        if (
            not force
            and not await store.call(Storage.reembed_unfinished)
            and await store.call(Storage.embedding_meta) == (model, dimensions)
        ):
            return Reembedded(0, up_to_date=True)
        done = 0
        start = await store.call(Storage.begin_reembed, model, dimensions)
        episode = await store.call(Storage.episodes_reembedded_up_to)
        total = await store.call(Storage.count_to_reembed, start, episode)
        embedder = self.embedder
        try:
            async for count, _ in _in_batches(
                store, embedder, Storage.facts_to_reembed, Storage.store_reembedded, start, batch
            ):
                done += count
                if progress:
                    progress(done, total)
            async for count, _ in _in_batches(
                store,
                embedder,
                Storage.episodes_to_reembed,
                Storage.store_reembedded_episodes,
                episode,
                batch,
            ):
                done += count
                if progress:
                    progress(done, total)
        except ModelError as exc:
            return Reembedded(done, error=exc)
        await store.call(Storage.finish_reembed, model, dimensions)
        return Reembedded(done)


async def _in_batches(
    store: StorageWorker,
    embedder: Embedder,
    listed: Callable[[Storage, int, int], list[tuple[int, str]]],
    write: Callable[[Storage, Sequence[tuple[int, Sequence[float]]]], None],
    after: int,
    batch: int,
) -> AsyncIterator[tuple[int, int]]:
    """Re-embed what `listed` gives past id `after`, `batch` texts at a time, each batch's vectors
    written by `write` (with the progress, atomically); (how many, the last id) after each batch."""
    while todo := await store.call(listed, after, batch):
        vectors = await embedder.embed([text for _, text in todo], "document")
        await store.call(write, [(item, vec) for (item, _), vec in zip(todo, vectors, strict=True)])
        after = todo[-1][0]
        yield len(todo), after
