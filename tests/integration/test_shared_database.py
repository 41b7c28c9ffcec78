"""Several processes on one database: leases on channels and people, and settings seen by all.

Each "process" here is a `MemoryService` with a store of its own on the same database file, as two
bot processes would have.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.app import memory_policy
from bot.config import Settings
from bot.memory.leases import Leases, channel_key, person_key
from bot.memory.model_ports import Purpose
from bot.memory.models import iso, utcnow
from bot.memory.ports import Storage
from bot.memory.service import MemoryService
from bot.processes import process_holder
from bot.storage import AsyncStore
from tests.fakes import DIMS, FakeEmbedder, FakeLLM, unit
from tests.integration.test_capture import echo_extractor
from tests.integration.test_pipeline import SCOPE, msg
from tests.unit.test_processes import exited_holder


def test_a_claim_is_exclusive_renewable_and_lapses(store: Any) -> None:
    assert store.claim(["channel:1", "person:a"], "p1", 60)
    assert not store.claim(["person:a"], "p2", 60)
    assert not store.claim(["channel:2", "channel:1"], "p2", 60)  # all or nothing
    assert store.claim(["channel:2"], "p2", 60)  # ... so channel 2 was not taken by the failed claim
    assert store.claim(["channel:1"], "p1", 60)  # renewing one's own
    store.release(["channel:1"], "p2")  # not p2's to release
    assert not store.claim(["channel:1"], "p2", 60)
    store.release(["channel:1"], "p1")
    assert store.claim(["channel:1"], "p2", 60)
    assert store.claim(["channel:3"], "p1", 0.05)
    time.sleep(0.1)  # a dead owner's lease lapses at its deadline
    assert store.claim(["channel:3"], "p2", 60)


def test_a_lease_of_an_owner_known_dead_is_taken_at_once_and_only_from_that_owner(store: Any) -> None:
    assert store.claim(["channel:1", "person:a"], "dead", 3600)
    assert store.claim(["channel:2"], "alive", 3600)
    assert store.lease_holders(["channel:2", "person:a", "channel:9", "channel:1"]) == ["alive", "dead"]
    assert not store.claim(["channel:1", "channel:2"], "p3", 60, ["dead"])  # all or nothing still
    assert store.claim(["channel:1"], "p3", 60, ["dead"])
    assert not store.claim(["channel:1"], "p4", 60, ["dead"])  # the taker holds it now, not the dead
    assert store.lease_holders(["channel:1", "person:a"]) == ["dead", "p3"]
    assert store.lease_holders([]) == []


def test_every_settings_change_moves_the_version(store: Any) -> None:
    seen = [store.settings_version()]
    store.set_opt_out(SCOPE, "alice", True)
    seen.append(store.settings_version())
    store.update_guild_settings("100", memory_enabled=False)
    seen.append(store.settings_version())
    store.set_channel_ignored("100", "c9", True)
    seen.append(store.settings_version())
    store.set_channel_persona("100", "c1", "You are a pirate.")
    seen.append(store.settings_version())
    store.set_state("command_hash", "x")  # not a setting that capture or replies read
    seen.append(store.settings_version())
    assert seen == [0, 1, 2, 3, 4, 4]


def test_personas_are_stored_per_server_and_channel(store: Any) -> None:
    store.update_guild_settings("100", persona="You are Sage.")
    store.set_channel_persona("100", "c1", "You are a pirate.")
    store.set_channel_persona("200", "c9", "You are a poet.")
    settings = store.guild_settings()
    assert settings["100"].persona == "You are Sage." and settings["100"].channel_personas == {
        "c1": "You are a pirate."
    }
    assert settings["200"].persona is None and settings["200"].channel_personas == {"c9": "You are a poet."}
    store.set_channel_persona("100", "c1", None)
    store.update_guild_settings("100", persona=None)
    assert (
        store.guild_settings()["100"].channel_personas == {} and store.guild_settings()["100"].persona is None
    )


@pytest.fixture
async def two_processes(settings: Settings) -> AsyncIterator[tuple[MemoryService, MemoryService, FakeLLM]]:
    llm = FakeLLM(extract=echo_extractor)
    policy = memory_policy(settings)
    policy = replace(policy, settings_poll_seconds=0.05)
    services = []
    for _ in range(2):
        store = await AsyncStore.open(
            settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
        )
        services.append(MemoryService(store, llm, FakeEmbedder(), policy))
    for service in services:
        await service.start()
    yield services[0], services[1], llm
    for service in services:
        await service.close(timeout=2)


async def test_a_message_both_processes_saw_is_learned_once(
    two_processes: tuple[MemoryService, MemoryService, FakeLLM],
) -> None:
    first, second, llm = two_processes
    message = msg("m1", "alice", "I keep bees in Ghent")
    first.capture(message, guild_id="100")
    second.capture(message, guild_id="100")  # both sessions received it (a rolling restart, say)
    await first.capture_buffer.wait_written()
    await second.capture_buffer.wait_written()
    changes = await asyncio.gather(first.flush_channel("c1"), second.flush_channel("c1"))
    assert sorted(changes) == [0, 1]
    assert llm.count(Purpose.EXTRACT) == 1
    assert [f.text for f in await second.list_facts(SCOPE, "alice")] == ["Alice said: I keep bees in Ghent"]


async def test_a_channel_another_process_is_flushing_is_left_to_it(
    two_processes: tuple[MemoryService, MemoryService, FakeLLM],
) -> None:
    first, second, llm = two_processes
    first.capture(msg("m1", "alice", "I keep bees in Ghent"), guild_id="100")
    await first.capture_buffer.wait_written()
    assert await second.leases.try_claim([channel_key("c1")])
    assert await first.flush_channel("c1") == 0 and llm.count(Purpose.EXTRACT) == 0
    await second.leases.release([channel_key("c1")])
    assert await first.flush_channel("c1") == 1


async def test_consolidation_waits_for_a_person_another_process_holds(
    two_processes: tuple[MemoryService, MemoryService, FakeLLM],
) -> None:
    first, second, _ = two_processes
    other = Leases(second.store, seconds=60)
    assert await other.try_claim([person_key(SCOPE, "alice")])
    first.capture(msg("m1", "alice", "I keep bees in Ghent"), guild_id="100")
    await first.capture_buffer.wait_written()
    flush = asyncio.create_task(first.flush_channel("c1"))
    await asyncio.sleep(0.5)
    assert not flush.done()  # waiting for alice, not writing beside the other process
    await other.release([person_key(SCOPE, "alice")])
    assert await asyncio.wait_for(flush, 5) == 1


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux's /proc only")
async def test_leases_of_a_dead_process_of_this_host_are_taken_at_once_and_others_waited_for(
    settings: Settings,
) -> None:
    """A crashed process restarted on its host resumes its work at once; a holder on another host
    cannot be checked and keeps its lease until the deadline."""
    store = await AsyncStore.open(
        settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
    )
    try:
        leases = Leases(store, seconds=60, holder=process_holder())
        dead = exited_holder()
        place, pid, start, nonce = dead.rsplit("/", 3)
        _, mine, my_start, _ = leases.owner.rsplit("/", 3)
        holders = {
            "dead": dead,
            "pid-reused": f"{place}/{mine}/{int(my_start) + 1}/{nonce}",  # a live pid, another start
            "elsewhere": f"another-host {place.split(' ', 1)[1]}/{pid}/{start}/{nonce}",
            "alive": process_holder().name,  # another service of this very process
        }
        for key, holder in holders.items():
            assert await store.call(Storage.claim, [key], holder, 3600)
        assert await store.call(Storage.claim, ["person:x", "person:y"], dead, 3600)
        assert await leases.try_claim(["dead"]) and await leases.try_claim(["pid-reused"])
        assert not await leases.try_claim(["elsewhere"]) and not await leases.try_claim(["alive"])
        assert await store.call(Storage.lease_holders, ["dead", "pid-reused"]) == [leases.owner]
        assert not await leases.try_claim(["elsewhere", "person:x"])  # all or nothing, as ever
        async with asyncio.timeout(1):  # consolidation's wait ends at once too, not in an hour
            async with leases.holding(["person:x", "person:y"]):
                pass
    finally:
        await store.close()


async def test_an_opt_out_through_one_process_is_honoured_by_the_other(
    two_processes: tuple[MemoryService, MemoryService, FakeLLM],
) -> None:
    first, second, _ = two_processes
    await first.set_opt_out(SCOPE, "alice", True)
    await asyncio.sleep(0.3)  # a few polls
    assert second.is_opted_out(SCOPE, "alice")
    assert second.capture(msg("m2", "alice", "I keep bees in Ghent"), guild_id="100") is False
    await first.update_guild("100", memory_enabled=False)
    await asyncio.sleep(0.3)
    assert not second.guild("100").memory_enabled


async def test_a_forget_all_elsewhere_drops_what_this_process_still_held_of_what_was_said_before(
    two_processes: tuple[MemoryService, MemoryService, FakeLLM],
) -> None:
    """The dashboard (second) forgets everything of alice's while the bot (first) still holds in memory
    a message she said before, and a reply of the bot's: neither teaches anything when written, though
    what she says afterwards and what bob said do."""
    bot, dashboard, _ = two_processes
    before = replace(msg("m1", "alice", "I keep bees in Ghent"), created_at=iso(utcnow()))
    reply = replace(msg("m2", "memory-bot", "Bees in Ghent, lovely", bot=True), created_at=iso(utcnow()))
    bobs = replace(msg("m3", "bob", "I play the oboe"), created_at=iso(utcnow()))
    await dashboard.forget(SCOPE, "alice")
    after = replace(msg("m4", "alice", "I moved to Lyon"), created_at=iso(utcnow()))
    for message in (before, reply, bobs, after):
        assert bot.capture(message, guild_id="100")
    await bot.capture_buffer.wait_written()
    pending = await bot.store.call(Storage.pending_messages, "c1", 10)
    assert [m.message_id for m in pending] == ["m3", "m4"]
    await bot.flush_now()
    assert [f.text for f in await bot.list_facts(SCOPE, "alice")] == ["Alice said: I moved to Lyon"]
    assert [f.text for f in await bot.list_facts(SCOPE, "bob")] == ["Bob said: I play the oboe"]
    await dashboard.forget(SCOPE, "alice")  # a later forget moves the mark: what came before it goes too
    late = replace(msg("m5", "alice", "I keep goats"), created_at=after.created_at)
    assert bot.capture(late, guild_id="100")
    await bot.capture_buffer.wait_written()
    assert [m.message_id for m in await bot.store.call(Storage.pending_messages, "c1", 10)] == []


async def test_a_reload_for_a_change_elsewhere_never_undoes_an_opt_out_under_way(
    two_processes: tuple[MemoryService, MemoryService, FakeLLM], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An opt-out is in the cache before it is in the database (queued captures are refused); another
    process's change reloading the cache in that moment must not take it out again."""
    first, second, _ = two_processes
    seen_while_settling: list[bool] = []
    settle = first._settle_queue

    async def settle_while_another_process_changes_something() -> None:
        await second.set_channel_ignored("100", "c9", True)  # moves the settings version
        await asyncio.sleep(0.3)  # several of first's polls
        seen_while_settling.append(first.is_opted_out(SCOPE, "alice"))
        await settle()

    monkeypatch.setattr(first, "_settle_queue", settle_while_another_process_changes_something)
    await first.set_opt_out(SCOPE, "alice", True)
    assert seen_while_settling == [True]
    await asyncio.sleep(0.3)
    assert first.is_opted_out(SCOPE, "alice") and "c9" in first.guild("100").ignored_channel_ids


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_a_running_bot_folds_the_keyword_index_together_now_and_then(settings: Settings) -> None:
    """The upkeep runs by itself every `index_upkeep_seconds`, while the bot serves as usual."""
    from tests.integration.test_store import fact, index_blocks  # one helper, both files

    store = await AsyncStore.open(
        settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
    )
    for i in range(12):  # a piece of the index each
        await store.call(Storage.add_facts, [fact(SCOPE, "alice", f"Alice plays tune{i}", unit(1.0, i))])
    pieces = await store.call(index_blocks)
    policy = replace(memory_policy(settings), index_upkeep_seconds=0.05)
    service = MemoryService(store, FakeLLM(), FakeEmbedder(), policy)
    await service.start()
    try:
        deadline = time.monotonic() + 10
        while await store.call(index_blocks) >= pieces and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert await store.call(index_blocks) < pieces
        assert not await store.call(Storage.tidy_word_index, 1)  # nothing left to fold
    finally:
        await service.close(timeout=2)
