"""The use per day on both backends: counted in memory (messages captured, model calls and tokens by
purpose, recall times in a fixed histogram), written in batches that add up, by several processes at
once, read back through the engine with a day's p50 / p95; a server's erasure takes its rows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.app import memory_policy
from bot.config import Settings
from bot.llm.usage import Usage
from bot.memory import upkeep
from bot.memory.daily_use import LATENCY_BOUNDS_MS, latency_key, percentile_ms
from bot.memory.model_ports import Purpose, usage_scope
from bot.memory.models import BufferedMessage, utcnow
from bot.memory.ports import Storage
from bot.memory.recall import Audience, Participant
from bot.memory.service import MemoryService
from bot.storage import AsyncStore
from bot.storage.locations import open_storage
from tests.fakes import DIMS, FakeEmbedder, FakeLLM

SCOPE = "guild:100000000000000001"
OTHER = "guild:100000000000000002"
DAY = "2026-11-20"


def message(n: int, *, bot: bool = False, scope: str = SCOPE) -> BufferedMessage:
    return BufferedMessage(
        f"30000000000000{n:04d}", scope, "200000000000000001", "7", "ana", f"I keep bees, hive {n}",
        utcnow().isoformat(), is_bot=bot,
    )  # fmt: skip


def test_batches_add_to_a_day_and_two_writers_never_overwrite(database: Path | str) -> None:
    one = open_storage(database, embedding_model="fake-embedding", dimensions=DIMS)
    two = open_storage(database, embedding_model="fake-embedding", dimensions=DIMS)
    try:
        one.add_use_per_day([(SCOPE, DAY, "messages", 3), (SCOPE, DAY, "chat_calls", 1)])
        two.add_use_per_day([(SCOPE, DAY, "messages", 4), (OTHER, DAY, "messages", 9)])
        one.add_use_per_day([(SCOPE, DAY, "messages", 5), (SCOPE, "2026-11-21", "messages", 1)])
        two.add_use_per_day([])
        assert one.use_per_day(SCOPE, DAY) == {
            DAY: {"messages": 12, "chat_calls": 1},
            "2026-11-21": {"messages": 1},
        }
        assert two.use_per_day(SCOPE, "2026-11-21") == {"2026-11-21": {"messages": 1}}
        assert two.use_per_day(OTHER, DAY) == {DAY: {"messages": 9}}
    finally:
        one.close()
        two.close()


def test_forgetting_a_server_deletes_its_use_per_day(store: Any) -> None:
    store.add_use_per_day([(SCOPE, DAY, "messages", 3), (OTHER, DAY, "messages", 2)])
    store.forget_scope(SCOPE, actor="9")
    assert store.use_per_day(SCOPE, "2000-01-01") == {}
    assert store.use_per_day(OTHER, "2000-01-01") == {DAY: {"messages": 2}}
    rows = store.conn.select("SELECT count(*) AS n FROM use_per_day WHERE scope = ?", (SCOPE,))
    assert rows[0]["n"] == 0


def test_a_days_p50_and_p95_come_from_its_histogram() -> None:
    assert latency_key(0.2) == "recall_ms_0" and latency_key(5.0) == "recall_ms_0"
    assert latency_key(5.1) == "recall_ms_1" and latency_key(10**6) == f"recall_ms_{len(LATENCY_BOUNDS_MS)}"
    buckets = [0] * (len(LATENCY_BOUNDS_MS) + 1)
    buckets[0], buckets[2], buckets[6] = 60, 35, 5  # 60 at most 5 ms, 35 at most 20 ms, 5 at most 100 ms
    assert percentile_ms(buckets, 50) == 5.0
    assert percentile_ms(buckets, 95) == 20.0
    assert percentile_ms(buckets, 96) == 100.0
    assert percentile_ms([0] * len(buckets), 50) is None
    slow = [0] * len(LATENCY_BOUNDS_MS) + [3]
    assert percentile_ms(slow, 50) == float(LATENCY_BOUNDS_MS[-1])  # slower than every bound: a floor


async def test_the_engine_counts_in_memory_writes_in_batches_and_reads_a_day(service: MemoryService) -> None:
    day = utcnow().date().isoformat()
    for n in range(3):
        assert service.capture(message(n), guild_id="100000000000000001")
    assert service.capture(message(9, bot=True), guild_id="100000000000000001")  # the bot's own: not counted
    usage = Usage()
    usage.listeners.append(service.daily_use.model_use)
    with usage_scope(SCOPE):
        usage.record(Purpose.EXTRACT, prompt_tokens=100, output_tokens=20)
        usage.record(Purpose.CHAT, prompt_tokens=50, output_tokens=5)
        usage.record(Purpose.CHAT)
    usage.record(Purpose.CHAT, prompt_tokens=999)  # no scope: not a server's use
    with usage_scope("dm"):
        usage.record(Purpose.CHAT, prompt_tokens=999)  # DMs are no server's: not counted at all
    service.daily_use.recall("dm", 1.0)
    service.daily_use.message("dm")
    for ms in (1.0, 2.0, 3.0, 15.0):
        service.daily_use.recall(SCOPE, ms)
    recalled = await service.recall(SCOPE, [Participant("7", "ana")], "bees?", audience=Audience.operator())
    assert await service.use_per_day(SCOPE, day) == {}  # nothing is written per message
    assert await service.write_use_per_day() > 0
    service.capture(message(4), guild_id="100000000000000001")
    await service.write_use_per_day()  # a second batch adds to the first
    assert await service.write_use_per_day() == 0  # nothing new: nothing written
    [(when, used)] = (await service.use_per_day(SCOPE, day)).items()
    assert when == day and used.messages == 4
    assert used.calls == {"extract": 1, "consolidate": 0, "embed": 0, "chat": 2}
    assert used.tokens == {"extract": 120, "consolidate": 0, "embed": 0, "chat": 55}
    # The fifth recall is a real one: on a busy machine it can be the slowest, and its bucket the p95's.
    slowest = max(15.0, recalled.elapsed_ms)
    p95 = next((float(b) for b in LATENCY_BOUNDS_MS if slowest <= b), float(LATENCY_BOUNDS_MS[-1]))
    assert used.recalls == 5 and used.p50_ms == 5.0 and used.p95_ms == p95
    assert await service.use_per_day(OTHER, day) == {}
    assert await service.use_per_day("dm", day) == {}


async def test_a_failed_batch_is_kept_for_the_next_and_an_erasure_drops_what_is_counted(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    day = utcnow().date().isoformat()
    service.capture(message(1), guild_id="100000000000000001")
    real = service.store.call

    async def busy(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fn is Storage.add_use_per_day:
            raise RuntimeError("database is locked")
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(service.store, "call", busy)
    with pytest.raises(RuntimeError):
        await service.write_use_per_day()
    monkeypatch.undo()
    service.capture(message(2), guild_id="100000000000000001")
    await service.write_use_per_day()
    assert (await service.use_per_day(SCOPE, day))[day].messages == 2
    service.capture(message(3), guild_id="100000000000000001")  # counted, not written yet
    await service.forget_server(SCOPE, actor="9")
    await service.write_use_per_day()
    assert await service.use_per_day(SCOPE, day) == {}


async def test_the_upkeep_round_writes_what_was_counted_and_close_writes_the_rest(
    settings: Settings, llm: FakeLLM, embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upkeep, "USE_PER_DAY_SECONDS", 0.05)
    day = utcnow().date().isoformat()
    store = await AsyncStore.open(
        settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
    )
    service = MemoryService(store, llm, embedder, memory_policy(settings))
    await service.start()
    try:
        service.capture(message(1), guild_id="100000000000000001")
        for _ in range(200):  # a round within 0.05 s; 10 s at most on a busy machine
            if await service.use_per_day(SCOPE, day):
                break
            await asyncio.sleep(0.05)
        assert (await service.use_per_day(SCOPE, day))[day].messages == 1
        monkeypatch.setattr(upkeep, "USE_PER_DAY_SECONDS", 3600.0)  # the next batch is close's
        await asyncio.sleep(0.2)  # the round under way sleeps out its 0.05 s, then waits an hour
        service.capture(message(2), guild_id="100000000000000001")
        service.capture(message(3), guild_id="100000000000000001")
        assert (await service.use_per_day(SCOPE, day))[day].messages == 1  # counted, not written yet
    finally:
        await service.close(timeout=2)
    reopened = open_storage(settings.database_location, embedding_model="fake-embedding", dimensions=DIMS)
    try:
        assert reopened.use_per_day(SCOPE, day) == {day: {"messages": 3}}
    finally:
        reopened.close()
