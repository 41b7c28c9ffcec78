"""Capture: skip rules, odd input, edits and deletions in the buffer, flush triggers, Gemini failures."""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.app import memory_policy
from bot.memory import service as service_module
from bot.memory.capture import FlushPolicy
from bot.memory.events import MemoryEvent, Skipped
from bot.memory.flushing import ISOLATION_SHARE, MAX_BAD_ANSWERS
from bot.memory.model_ports import (
    ModelBadAnswer,
    ModelCutOff,
    ModelError,
    ModelRefusal,
    Purpose,
    answer_budget,
)
from bot.memory.models import BufferedMessage, NewFact
from bot.memory.service import MemoryService
from bot.storage import AsyncStore, Store
from bot.storage.locations import open_storage
from tests.conftest import make_settings
from tests.fakes import DIMS, FakeEmbedder, FakeLLM, unit
from tests.integration.test_pipeline import SCOPE, msg


def echo_extractor(payload: dict[str, Any]) -> dict[str, Any]:
    """One fact per human message: '<Name> said: <text>'."""
    return {
        "facts": [
            {"speaker": m["author"], "text": f"{m['author']} said: {m['text']}", "sources": [m["id"]]}
            for m in payload["messages"]
            if not m["bot"]
        ]
    }


async def pending(service: MemoryService) -> list[str]:
    await service.capture_buffer.wait_written()
    return [m.content for m in await service.store.call(Store.pending_messages, "c1", 1000)]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "😀🎉🔥",
        "<@123> <@!456> <#789> <@&111>",
        "<:party:12345> <a:dance:678>",
        "\u200b\u200d\ufeff",
        "https://example.com/x",
        "\x00",
    ],
)
async def test_messages_with_nothing_to_read_are_skipped(service: MemoryService, text: str) -> None:
    assert service.capture(msg("m1", "alice", text), guild_id="100") is False
    assert await pending(service) == []


async def test_odd_but_readable_messages_are_kept_clean(service: MemoryService) -> None:
    long_text = "I love hiking. " * 266 + "end"  # 3,993 characters
    assert len(long_text) > 3900
    assert service.capture(msg("m1", "alice", long_text), guild_id="100")
    assert service.capture(msg("m2", "alice", "zero\u200bwidth and a NUL\x00 byte"), guild_id="100")
    assert service.capture(msg("m3", "alice", "x" * 10_000), guild_id="100")
    stored = await pending(service)
    assert stored[0] == long_text
    assert stored[1] == "zerowidth and a NUL byte"
    assert len(stored[2]) == 4000


async def test_opt_out_ignored_channels_disabled_guilds_and_the_marker(service: MemoryService) -> None:
    await service.set_opt_out(SCOPE, "bob", True)
    assert not service.capture(msg("m1", "bob", "I am Bob"), guild_id="100")
    # Opting out in one guild does not opt out of DMs (nor of other guilds).
    assert service.capture(replace(msg("m1b", "bob", "I am Bob in DMs", channel="dm1"), scope="dm"))
    assert not service.capture(msg("m2", "alice", "!nomem my password is hunter2"), guild_id="100")
    await service.set_channel_ignored("100", "c1", True)
    assert not service.capture(msg("m3", "alice", "ignored channel"), guild_id="100")
    assert not service.capture(
        msg("m3t", "alice", "thread of an ignored channel", channel="t1"),
        guild_id="100",
        parent_channel_id="c1",
    )
    await service.set_channel_ignored("100", "c1", False)
    await service.update_guild("100", memory_enabled=False)
    assert not service.capture(msg("m4", "alice", "memory is off"), guild_id="100")
    await service.update_guild("100", memory_enabled=True)
    assert service.capture(msg("m5", "alice", "memory is back on"), guild_id="100")
    await service.set_opt_out(SCOPE, "bob", False)
    assert service.capture(msg("m6", "bob", "I am back"), guild_id="100")
    assert await pending(service) == ["memory is back on", "I am back"]


async def test_opting_out_drops_buffered_messages(service: MemoryService) -> None:
    service.capture(msg("m1", "bob", "I collect stamps"), guild_id="100")
    service.capture(msg("m2", "alice", "I collect coins"), guild_id="100")
    await service.capture_buffer.wait_written()
    await service.set_opt_out(SCOPE, "bob", True)
    assert await pending(service) == ["I collect coins"]


async def test_opting_out_drops_the_bots_buffered_turns_in_that_scope(service: MemoryService) -> None:
    service.capture(replace(msg("b0", "bot", "Welcome, everyone!"), is_bot=True), guild_id="100")
    service.capture(msg("m1", "bob", "My address is 1 Elm Street"), guild_id="100")
    service.capture(replace(msg("b1", "bot", "Noted, you live at 1 Elm Street"), is_bot=True), guild_id="100")
    service.capture(msg("m2", "alice", "I collect coins"), guild_id="100")
    elsewhere = replace(msg("b2", "bot", "Bob lives at 1 Elm Street", channel="c2"), is_bot=True)
    service.capture(elsewhere, guild_id="100")
    other_server = replace(msg("b3", "bot", "Hello", channel="x1"), is_bot=True, scope="guild:200")
    service.capture(other_server, guild_id="200")
    await service.set_opt_out(SCOPE, "bob", True)
    assert await pending(service) == ["I collect coins"]  # any reply of the bot here may repeat bob
    assert await service.store.call(Store.pending_messages, "c2", 10) == []
    assert [m.message_id for m in await service.store.call(Store.pending_messages, "x1", 10)] == ["b3"]


async def test_forgetting_one_fact_drops_the_bots_buffered_turns_that_may_repeat_it(
    service: MemoryService,
) -> None:
    [fid] = await service.store.call(
        Store.add_facts,
        [NewFact(SCOPE, "alice", "Alice", "Alice has a zebrafish diagnosis", [], embedding=unit(1.0))],
    )
    service.capture(
        replace(msg("b1", "bot", "Sorry about the zebrafish diagnosis"), is_bot=True), guild_id="100"
    )
    service.capture(msg("m2", "carol", "I collect coins"), guild_id="100")
    await service.capture_buffer.wait_written()
    assert await service.forget(SCOPE, "alice", [fid]) == 1
    assert await pending(service) == ["I collect coins"]


async def test_forgetting_everything_drops_the_bots_replies_after_that_persons_messages(
    service: MemoryService,
) -> None:
    service.capture(msg("m1", "bob", "My address is 1 Elm Street"), guild_id="100")
    service.capture(replace(msg("b1", "bot", "Noted: 1 Elm Street"), is_bot=True), guild_id="100")
    await service.forget(SCOPE, "bob", None)
    assert await pending(service) == []


async def test_messages_still_queued_when_a_person_opts_out_are_dropped(service: MemoryService) -> None:
    service.capture(msg("m1", "bob", "I collect stamps"), guild_id="100")  # queued, maybe not yet written
    await service.set_opt_out(SCOPE, "bob", True)
    assert await pending(service) == []


async def test_switching_memory_off_drops_that_guilds_buffer_queued_messages_included(
    service: MemoryService,
) -> None:
    service.capture(msg("m1", "alice", "I collect coins"), guild_id="100")
    await service.capture_buffer.wait_written()
    service.capture(msg("m2", "alice", "I collect stamps"), guild_id="100")
    other = replace(msg("o1", "alice", "I live in Oslo", channel="x1"), scope="guild:200")
    service.capture(other, guild_id="200")
    await service.update_guild("100", memory_enabled=False)
    assert await pending(service) == []
    assert [m.content for m in await service.store.call(Store.pending_messages, "x1", 10)] == [
        "I live in Oslo"
    ]


async def test_ignoring_a_channel_drops_what_its_threads_buffered(service: MemoryService) -> None:
    service.capture(
        msg("t1m", "alice", "I live in a thread", channel="t1"), guild_id="100", parent_channel_id="c1"
    )
    service.capture(msg("m1", "alice", "I live in the channel"), guild_id="100")
    service.capture(msg("o1", "alice", "I live elsewhere", channel="c2"), guild_id="100")
    await service.capture_buffer.wait_written()
    await service.set_channel_ignored("100", "c1", True)
    for channel, expected in (("t1", []), ("c1", []), ("c2", ["I live elsewhere"])):
        assert [m.content for m in await service.store.call(Store.pending_messages, channel, 10)] == expected


async def test_a_flush_after_memory_went_off_reads_nothing_and_drops_the_chunk(
    service: MemoryService, llm: FakeLLM
) -> None:
    llm.handlers[Purpose.EXTRACT] = echo_extractor
    service.capture(
        msg("t1m", "alice", "I live in Rome", channel="t1"), guild_id="100", parent_channel_id="c1"
    )
    await service.capture_buffer.wait_written()
    # The switch lands in the cache between the buffer write and the flush (another process, a race).
    service.switches._guilds["100"] = replace(service.guild("100"), ignored_channel_ids={"c1"})
    assert await service.flush_channel("t1") == 0
    assert llm.calls == []
    assert await service.store.call(Store.pending_messages, "t1", 10) == []


@pytest.mark.parametrize(
    "text", ["!nomem I live in Paris", "<@42> !nomem I live in Paris", "<@!42> <@&7>  !nomem I live in Paris"]
)
async def test_the_no_memory_marker_counts_after_leading_mentions(service: MemoryService, text: str) -> None:
    assert service.capture(msg("m1", "alice", text), guild_id="100") is False
    assert service.capture(msg("m2", "alice", f"I said {text}"), guild_id="100") is True
    assert await pending(service) == [f"I said {text}"]


async def test_an_edit_adding_the_marker_removes_the_message_and_its_facts(
    service: MemoryService, llm: FakeLLM
) -> None:
    llm.handlers[Purpose.EXTRACT] = echo_extractor
    service.capture(msg("m1", "alice", "I live in Paris"), guild_id="100")
    service.capture(msg("m2", "alice", "I like tea"), guild_id="100")
    await service.message_edited("m2", "<@42> !nomem I like tea")
    assert await pending(service) == ["I live in Paris"]
    await service.flush_now()
    assert [f.text for f in await service.list_facts(SCOPE, "alice")] == ["Alice said: I live in Paris"]
    await service.message_edited("m1", "!nomem I live in Paris")
    assert await service.list_facts(SCOPE, "alice") == []


async def test_edits_and_deletions_apply_to_buffered_messages(service: MemoryService, llm: FakeLLM) -> None:
    llm.handlers[Purpose.EXTRACT] = echo_extractor
    service.capture(msg("m1", "alice", "I live in Pariss"), guild_id="100")
    await service.message_edited("m1", "I live in Paris")
    service.capture(msg("m2", "alice", "my PIN is 1234"), guild_id="100")
    await service.message_deleted("m2")
    await service.flush_now()
    [(_, payload)] = llm.calls
    assert [m["text"] for m in payload["messages"]] == ["I live in Paris"]
    assert [f.text for f in await service.list_facts(SCOPE, "alice")] == ["Alice said: I live in Paris"]


async def test_a_chunk_whose_messages_were_all_deleted_teaches_nothing(
    service: MemoryService, llm: FakeLLM
) -> None:
    llm.handlers[Purpose.EXTRACT] = echo_extractor
    service.capture(msg("m1", "alice", "I have a secret hobby"), guild_id="100")
    await service.capture_buffer.wait_written()
    await service.message_deleted("m1")
    await service.flush_now()
    assert llm.calls == []
    assert await service.store.call(Store.count_facts, SCOPE, "alice") == 0


async def test_deleting_a_fact_source_after_the_flush_forgets_the_fact(
    service: MemoryService, llm: FakeLLM
) -> None:
    llm.handlers[Purpose.EXTRACT] = echo_extractor
    service.capture(msg("m1", "alice", "I play the oboe"), guild_id="100")
    service.capture(msg("m2", "alice", "I play the harp"), guild_id="100")
    await service.flush_now()
    assert len(await service.list_facts(SCOPE, "alice")) == 2
    assert await service.message_deleted("m1") == 1
    assert [f.text for f in await service.list_facts(SCOPE, "alice")] == ["Alice said: I play the harp"]


async def test_gemini_failing_leaves_messages_pending_until_it_answers(
    service: MemoryService, llm: FakeLLM
) -> None:
    llm.handlers[Purpose.EXTRACT] = echo_extractor
    llm.fail_with = ModelError("Gemini is overloaded", purpose=Purpose.EXTRACT, status=503, retryable=True)
    service.capture(msg("m1", "alice", "I am learning Welsh"), guild_id="100")
    with pytest.raises(ModelError):
        await service.flush_now()
    assert await pending(service) == ["I am learning Welsh"]
    rows = await service.store.call(Store.pending_messages, "c1", 10)
    assert rows[0].attempts == 0  # an outage is not held against the messages
    llm.fail_with = None
    await service.flush_now()
    assert await pending(service) == []
    assert [f.text for f in await service.list_facts(SCOPE, "alice")] == ["Alice said: I am learning Welsh"]


@pytest.fixture
async def quick_service(tmp_path: Path, database: Path | str) -> AsyncIterator[tuple[MemoryService, FakeLLM]]:
    settings = make_settings(tmp_path, database, memory_flush_quiet_seconds=0.3, memory_flush_max_messages=3)
    store = await AsyncStore.open(
        settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
    )
    llm = FakeLLM(extract=echo_extractor)
    svc = MemoryService(store, llm, FakeEmbedder(), memory_policy(settings))
    svc.capture_buffer.policy = FlushPolicy(0.3, 3, 3600, 2, 0.05)
    await svc.start()
    yield svc, llm
    await svc.close(timeout=2)


async def wait_until(predicate: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


async def test_a_quiet_channel_flushes_by_itself(quick_service: tuple[MemoryService, FakeLLM]) -> None:
    service, llm = quick_service
    service.capture(msg("m1", "alice", "I brew my own beer"), guild_id="100")
    await asyncio.sleep(0.15)
    assert llm.calls == []  # not quiet long enough yet

    async def learned() -> bool:
        return await service.count_facts(SCOPE, "alice") == 1

    await wait_until(learned)


async def test_a_large_buffer_flushes_before_it_goes_quiet(
    quick_service: tuple[MemoryService, FakeLLM],
) -> None:
    service, llm = quick_service
    service.capture_buffer.policy = FlushPolicy(60, 3, 3600, 2, 0.05)
    for i in range(7):
        service.capture(msg(f"m{i}", "alice", f"fact number {i}"), guild_id="100")

    async def two_chunks() -> bool:
        return llm.count(Purpose.EXTRACT) >= 2

    async def six_consumed() -> bool:  # the second flush's write may land a moment after its extraction
        return await service.store.call(Store.count_pending) <= 1

    await wait_until(two_chunks)
    await wait_until(six_consumed)
    assert [len(p["messages"]) for _, p in llm.calls[:2]] == [3, 3]
    await asyncio.sleep(0.2)
    assert llm.count(Purpose.EXTRACT) == 2
    assert await service.store.call(Store.count_pending) == 1  # the 7th waits for quiet or more company


async def test_overdue_buffers_flush_at_start_up(tmp_path: Path, database: Path | str) -> None:
    settings = make_settings(tmp_path, database, memory_flush_quiet_seconds=0.2)
    store = await AsyncStore.open(
        settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
    )
    first = MemoryService(store, FakeLLM(), FakeEmbedder(), memory_policy(settings))
    first.capture_buffer.policy = FlushPolicy(3600, 50, 3600, 2, 0.05)
    await first.start()
    first.capture(msg("m1", "alice", "I was captured before a restart"), guild_id="100")
    await first.close()

    store = await AsyncStore.open(
        settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
    )
    llm = FakeLLM(extract=echo_extractor)
    second = MemoryService(store, llm, FakeEmbedder(), memory_policy(settings))
    await second.start()
    try:

        async def learned() -> bool:
            return await second.count_facts(SCOPE, "alice") == 1

        await wait_until(learned)
    finally:
        await second.close()


def hold_gemini(llm: FakeLLM) -> tuple[asyncio.Event, asyncio.Event]:
    """Make every generate call wait: returns (a call has entered, release them all)."""
    entered, release = asyncio.Event(), asyncio.Event()
    original = llm.generate_json

    async def held(purpose: Purpose, **kwargs: Any) -> Any:
        entered.set()
        await release.wait()
        return await original(purpose, **kwargs)

    llm.generate_json = held  # type: ignore[method-assign]
    return entered, release


async def flush_held_at_gemini(
    service: MemoryService, llm: FakeLLM, *messages: BufferedMessage
) -> tuple[asyncio.Task[None], asyncio.Event]:
    """Capture `messages` and start flushing them; returns (the flush, its release) once extraction waits."""
    llm.handlers[Purpose.EXTRACT] = echo_extractor
    entered, release = hold_gemini(llm)
    for message in messages:
        service.capture(message, guild_id="100")
    flush = asyncio.create_task(service.flush_now())
    await asyncio.wait_for(entered.wait(), timeout=5)
    return flush, release


async def test_a_message_deleted_while_its_flush_waits_on_gemini_teaches_nothing(
    service: MemoryService, llm: FakeLLM
) -> None:
    flush, release = await flush_held_at_gemini(
        service, llm, msg("m1", "alice", "I am secretly a spy"), msg("m2", "bob", "I collect vinyl")
    )
    await service.message_deleted("m1")
    release.set()
    await flush
    assert await service.list_facts(SCOPE, "alice") == []
    assert [f.text for f in await service.list_facts(SCOPE, "bob")] == ["Bob said: I collect vinyl"]
    assert await pending(service) == []


async def test_a_message_edited_while_its_flush_waits_is_learned_from_its_new_text(
    service: MemoryService, llm: FakeLLM
) -> None:
    flush, release = await flush_held_at_gemini(
        service, llm, msg("m1", "carol", "I live at 12 Elm Street"), msg("m2", "bob", "I collect vinyl")
    )
    await service.message_edited("m1", "I live in Paris")
    await service.capture_buffer.wait_written()
    release.set()
    await flush  # the edited message stayed buffered, so the same flush_now read it again
    assert [f.text for f in await service.list_facts(SCOPE, "carol")] == ["Carol said: I live in Paris"]
    assert [f.text for f in await service.list_facts(SCOPE, "bob")] == ["Bob said: I collect vinyl"]
    assert [len(p["messages"]) for _, p in llm.calls] == [2, 1]
    assert await pending(service) == []


async def test_deleting_a_message_drops_the_bots_buffered_reply_to_it(service: MemoryService) -> None:
    service.capture(msg("m1", "alice", "my address is 12 Elm Street"), guild_id="100")
    reply = replace(msg("b1", "bot", "Near 12 Elm Street there is a park"), is_bot=True, reply_to="m1")
    service.capture(reply, guild_id="100")
    other = replace(msg("b2", "bot", "Hello Bob"), is_bot=True, reply_to="m9")
    service.capture(other, guild_id="100")
    await service.capture_buffer.wait_written()
    await service.message_deleted("m1")
    assert await pending(service) == ["Hello Bob"]


async def test_the_bots_turns_left_without_anyones_messages_are_dropped_at_start(
    service: MemoryService,
) -> None:
    service.capture(replace(msg("b1", "bot", "Near 12 Elm Street"), is_bot=True), guild_id="100")
    service.capture(replace(msg("b2", "bot", "Welcome", channel="c2"), is_bot=True), guild_id="100")
    service.capture(msg("m3", "bob", "I collect vinyl", channel="c2"), guild_id="100")
    await service.capture_buffer.wait_written()
    assert await service.store.call(Store.drop_lone_bot_turns) == 1
    assert await pending(service) == []
    assert len(await service.store.call(Store.pending_messages, "c2", 10)) == 2


async def test_stopping_waits_for_running_flushes_only_and_keeps_the_rest_buffered(
    tmp_path: Path, database: Path | str
) -> None:
    settings = make_settings(tmp_path, database, memory_flush_quiet_seconds=0.1, memory_flush_concurrency=1)
    store = await AsyncStore.open(
        settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
    )
    llm = FakeLLM(extract=echo_extractor)
    service = MemoryService(store, llm, FakeEmbedder(), memory_policy(settings))
    service.capture_buffer.policy = replace(service.capture_buffer.policy, tick_seconds=0.02)
    entered, release = hold_gemini(llm)
    await service.start()
    for channel in ("c1", "c2", "c3"):
        service.capture(msg(f"m-{channel}", "alice", f"I post in {channel}", channel=channel), guild_id="100")
    await asyncio.wait_for(entered.wait(), timeout=5)  # one flush runs, the others wait for the slot
    loop = asyncio.get_running_loop()
    started = loop.time()
    closing = asyncio.create_task(service.close(timeout=0.5))
    await asyncio.sleep(0.2)
    release.set()  # the running flush finishes within the timeout; nothing else may start
    await closing
    assert loop.time() - started < 2
    assert llm.count(Purpose.EXTRACT) == 1
    reopened = open_storage(settings.database_location, embedding_model="fake-embedding", dimensions=DIMS)
    try:
        assert reopened.count_pending() == 2  # the two channels whose flush never ran stay buffered
    finally:
        reopened.close()


async def test_a_message_gemini_refuses_to_read_is_skipped_and_the_rest_still_learned(
    service: MemoryService, llm: FakeLLM
) -> None:
    def refuse_lyrics(payload: dict[str, Any]) -> dict[str, Any]:
        if any("lyrics" in m["text"] for m in payload["messages"]):
            raise ModelRefusal("blocked: RECITATION", purpose=Purpose.EXTRACT)
        return echo_extractor(payload)

    llm.handlers[Purpose.EXTRACT] = refuse_lyrics
    events: list[MemoryEvent] = []
    service.add_listener(events.append)
    for i, text in enumerate(["I live in Oslo", "I like tea", "here are the lyrics: ...", "I run"]):
        service.capture(msg(f"m{i}", "alice" if i % 2 else "bob", text), guild_id="100")
    await service.flush_now()
    learned = [f.text for f in await service.list_facts(SCOPE, "bob")]
    learned += [f.text for f in await service.list_facts(SCOPE, "alice")]
    assert sorted(learned) == ["Alice said: I like tea", "Alice said: I run", "Bob said: I live in Oslo"]
    assert await pending(service) == []
    assert [(e.kind, e.messages) for e in events if isinstance(e, Skipped)] == [("skipped", 1)]


async def test_an_answer_cut_off_at_its_limit_splits_the_chunk_at_once_and_every_message_is_learned(
    service: MemoryService, llm: FakeLLM
) -> None:
    def loops_over_two(payload: dict[str, Any]) -> dict[str, Any]:
        if len(payload["messages"]) > 2:  # a small model copying every line until the limit
            raise ModelCutOff("the answer reached its token limit", purpose=Purpose.EXTRACT)
        return echo_extractor(payload)

    llm.handlers[Purpose.EXTRACT] = loops_over_two
    events: list[MemoryEvent] = []
    service.add_listener(events.append)
    texts = ["I live in Oslo", "I like tea", "I run", "I have a cat", "I play chess"]
    await alice_says(service, texts)
    await service.flush_now()  # the first flush: no bad answers counted yet, no isolation budget
    assert await learned(service) == sorted(f"Alice said: {t}" for t in texts)
    assert await pending(service) == []
    assert not [e for e in events if isinstance(e, Skipped)]
    sizes = [len(p["messages"]) for purpose, p in llm.calls if purpose is Purpose.EXTRACT]
    assert sizes == [5, 2, 3, 1, 2]  # split in halves, never asked again whole
    extract_limits = [
        n for (purpose, _), n in zip(llm.calls, llm.limits, strict=True) if purpose is Purpose.EXTRACT
    ]
    assert extract_limits == [answer_budget(n) for n in sizes]  # each call's budget sized to its part


async def test_a_single_message_whose_answer_is_cut_off_stays_pending_until_its_limit(
    service: MemoryService, llm: FakeLLM
) -> None:
    llm.fail_with = ModelCutOff("the answer reached its token limit", purpose=Purpose.EXTRACT)
    service.capture(msg("m1", "alice", "I live in Oslo"), guild_id="100")
    await service.capture_buffer.wait_written()
    with pytest.raises(ModelCutOff):
        await service.flush_channel("c1")
    assert await pending(service) == ["I live in Oslo"]  # never consumed with nothing learned


async def test_a_chunk_that_keeps_getting_unusable_answers_is_skipped_but_an_outage_is_waited_out(
    service: MemoryService, llm: FakeLLM
) -> None:
    events: list[MemoryEvent] = []
    service.add_listener(events.append)
    service.capture(msg("m1", "alice", "I live in Oslo"), guild_id="100")
    await service.capture_buffer.wait_written()
    llm.fail_with = ModelError("Gemini is down", purpose=Purpose.EXTRACT, status=503, retryable=True)
    for _ in range(MAX_BAD_ANSWERS + 1):
        with pytest.raises(ModelError):
            await service.flush_channel("c1")
    assert await pending(service) == ["I live in Oslo"]  # an outage never costs messages

    service.capture(msg("m2", "alice", "I like tea", channel="c2"), guild_id="100")
    await service.capture_buffer.wait_written()
    for _ in range(MAX_BAD_ANSWERS - 1):  # outages first: they must not count towards the limit
        with pytest.raises(ModelError):
            await service.flush_channel("c2")
    llm.fail_with = ModelBadAnswer("does not fit ExtractionResult", purpose=Purpose.EXTRACT)
    for _ in range(MAX_BAD_ANSWERS - 1):
        with pytest.raises(ModelBadAnswer):
            await service.flush_channel("c2")
    assert [m.content for m in await service.store.call(Store.pending_messages, "c2", 10)] == ["I like tea"]
    assert await service.flush_channel("c2") == 0  # the fifth unusable answer: skipped
    assert await service.store.call(Store.pending_messages, "c2", 10) == []
    assert [e.messages for e in events if isinstance(e, Skipped)] == [1]
    assert await pending(service) == ["I live in Oslo"]


def spoiled_by(
    *poisons: str, flaky_once: str = "", outage_on: list[str] | None = None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An extraction handler whose answer is unusable whenever a poison is in the chunk; unusable once
    more for `flaky_once` read alone the first time, and an outage for a chunk of `outage_on` texts."""
    flaked: list[str] = []

    def handler(payload: dict[str, Any]) -> dict[str, Any]:
        texts = [m["text"] for m in payload["messages"]]
        if outage_on is not None and texts == outage_on:
            raise ModelError("Gemini is down", purpose=Purpose.EXTRACT, status=503, retryable=True)
        first_time_alone = texts == [flaky_once] and not flaked
        if first_time_alone:
            flaked.append(flaky_once)
        if first_time_alone or any(p in t for p in poisons for t in texts):
            raise ModelBadAnswer("does not fit ExtractionResult", purpose=Purpose.EXTRACT)
        return echo_extractor(payload)

    return handler


async def retried_whole(service: MemoryService, channels: list[str]) -> None:
    """The flushes before the limit: the unusable answer may be flakiness, so the chunk is asked again."""
    for _ in range(MAX_BAD_ANSWERS - 1):
        with pytest.raises(ModelBadAnswer):
            await service.flush_channels(channels)


async def alice_says(service: MemoryService, texts: list[str]) -> None:
    for i, text in enumerate(texts):
        service.capture(msg(f"m{i}", "alice", text), guild_id="100")
    await service.capture_buffer.wait_written()


async def learned(service: MemoryService) -> list[str]:
    texts = []
    for person in ("alice", "bob", "carol", "dave", "mallory"):
        texts += [f.text for f in await service.list_facts(SCOPE, person)]
    return sorted(texts)


async def test_a_message_that_spoils_every_answer_is_found_by_reading_apart_and_costs_only_itself(
    service: MemoryService, llm: FakeLLM
) -> None:
    llm.handlers[Purpose.EXTRACT] = spoiled_by("POISON", flaky_once="I collect stamps")
    events: list[MemoryEvent] = []
    service.add_listener(events.append)
    said = [
        ("alice", "I keep bees", "c1"),
        ("bob", "I sing in a choir", "c1"),
        ("carol", "I restore old radios", "c2"),
        ("dave", "I run", "c2"),
        ("mallory", "I collect stamps", "c3"),
        ("mallory", "POISON", "c3"),
        ("mallory", "I sail", "c3"),
    ]
    for i, (author, text, channel) in enumerate(said):
        service.capture(msg(f"m{i}", author, text, channel=channel), guild_id="100")
    await service.capture_buffer.wait_written()
    await retried_whole(service, ["c1", "c2", "c3"])
    assert llm.count(Purpose.EXTRACT) == MAX_BAD_ANSWERS - 1
    assert await service.flush_channels(["c1", "c2", "c3"]) == 6

    assert await learned(service) == sorted(f"{a.title()} said: {t}" for a, t, _ in said if t != "POISON")
    assert await service.store.call(Store.count_pending, SCOPE) == 0
    read = [[m["text"] for m in payload["messages"]] for _, payload in llm.calls[MAX_BAD_ANSWERS - 1 :]]
    assert read == [
        [t for _, t, _ in said],  # the fifth time the whole chunk, then each channel alone
        ["I keep bees", "I sing in a choir"],
        ["I restore old radios", "I run"],
        ["I collect stamps", "POISON", "I sail"],  # unusable: halved
        ["I collect stamps"],  # unusable by chance, and asked again alone
        ["I collect stamps"],
        ["POISON", "I sail"],
        ["POISON"],  # alone, and once more, before it is given up
        ["POISON"],
        ["I sail"],
    ]
    [skipped] = [e for e in events if isinstance(e, Skipped)]
    assert (skipped.messages, skipped.refused, skipped.channel_id) == (1, False, "c3")


async def test_what_one_flush_cannot_isolate_waits_and_an_outage_while_reading_apart_costs_nothing(
    service: MemoryService, llm: FakeLLM
) -> None:
    texts = ["I keep bees", "POISON one", "I sing", "I run", "I swim", "I cook", "POISON two", "I sail"]
    await alice_says(service, texts)
    llm.handlers[Purpose.EXTRACT] = spoiled_by("POISON")
    await retried_whole(service, ["c1"])
    calls = llm.count(Purpose.EXTRACT)
    with pytest.raises(ModelBadAnswer):  # the budget finds one message at fault; the rest waits, backing off
        await service.flush_channel("c1")
    assert llm.count(Purpose.EXTRACT) - calls == 10  # bounded: log2(8) + 2 unusable answers followed up
    assert await pending(service) == ["POISON two", "I sail"]
    assert await learned(service) == sorted(f"Alice said: {t}" for t in texts[2:6] + texts[:1])

    llm.handlers[Purpose.EXTRACT] = spoiled_by("POISON", outage_on=["I sail"])
    with pytest.raises(ModelError) as outage:
        await service.flush_channel("c1")
    assert not isinstance(outage.value, ModelBadAnswer)
    assert await pending(service) == ["POISON two", "I sail"]  # nothing written, nothing given up

    llm.handlers[Purpose.EXTRACT] = spoiled_by("POISON")
    assert await service.flush_channel("c1") == 1
    assert await pending(service) == []
    assert await learned(service) == sorted(f"Alice said: {t}" for t in texts if "POISON" not in t)


async def test_reading_apart_stops_in_time_and_the_next_flushes_go_on_where_it_stopped(
    service: MemoryService, llm: FakeLLM
) -> None:
    texts = ["I keep bees", "I sing", "I run", "I swim", "I cook", "POISON", "I sail", "I knit"]
    await alice_says(service, texts)
    spoiled = spoiled_by("POISON")
    now = [0.0]

    def slow(payload: dict[str, Any]) -> dict[str, Any]:
        now[0] += service.leases.work_deadline * ISOLATION_SHARE / 4  # 4 calls fit
        return spoiled(payload)

    llm.handlers[Purpose.EXTRACT] = slow
    service.clock = lambda: now[0]
    await retried_whole(service, ["c1"])
    left_after = []
    for _ in range(2):  # out of time: what was read is learned, the rest waits, backing off
        with pytest.raises(ModelBadAnswer):
            await service.flush_channel("c1")
        left_after.append(await pending(service))
    assert left_after == [texts[4:], texts[5:]]  # each flush gets further
    assert await service.flush_channel("c1") == 2
    assert await pending(service) == []
    assert await learned(service) == sorted(f"Alice said: {t}" for t in texts if t != "POISON")


async def test_a_model_whose_every_answer_is_unusable_costs_bounded_calls_and_a_few_messages_a_flush(
    service: MemoryService, llm: FakeLLM
) -> None:
    channels = {"c1": 20, "c2": 20, "c3": 10}  # a full chunk of 50 in 3 channels
    for channel, count in channels.items():
        for i in range(count):
            service.capture(
                msg(f"{channel}-{i}", "alice", f"I said {channel} {i}", channel=channel), guild_id="100"
            )
    await service.capture_buffer.wait_written()
    llm.fail_with = ModelBadAnswer("does not fit ExtractionResult", purpose=Purpose.EXTRACT)
    await retried_whole(service, list(channels))
    calls = llm.count(Purpose.EXTRACT)
    with pytest.raises(ModelBadAnswer):
        await service.flush_channels(list(channels))
    assert llm.count(Purpose.EXTRACT) - calls <= 3 + 2 * math.ceil(math.log2(50)) + 3  # 18
    assert await service.store.call(Store.count_pending, SCOPE) == 50 - 2  # the rest waits, backing off


async def test_a_switch_made_before_a_queued_message_is_written_still_applies_to_it(
    service: MemoryService,
) -> None:
    service.capture(msg("m1", "bob", "I collect stamps"), guild_id="100")
    service.capture(msg("m2", "alice", "I collect coins", channel="c2"), guild_id="100")
    service.capture(msg("m3", "carol", "I collect shells"), guild_id="100")
    # No await since the captures: the writer has not run. Another task opts bob out, ignores c2.
    service.switches._opted_out.add((SCOPE, "bob"))
    service.switches._guilds["100"] = replace(service.guild("100"), ignored_channel_ids={"c2"})
    assert await pending(service) == ["I collect shells"]
    assert await service.store.call(Store.pending_messages, "c2", 10) == []


def locked(service: MemoryService) -> Exception:
    """What the service's database raises while another writer holds it, on its backend."""
    if isinstance(service.store.sync, Store):
        return sqlite3.OperationalError("database is locked")
    return psycopg.errors.LockNotAvailable("could not obtain lock")


def fail_once(monkeypatch: pytest.MonkeyPatch, service: MemoryService, name: str, times: int = 1) -> None:
    """Make the service's store's <name> raise the next `times` calls, as a locked or full database would."""
    backend_store = type(service.store.sync)
    original = getattr(backend_store, name)
    left = [times]

    def flaky(self: Any, *args: Any, **kwargs: Any) -> Any:
        if left[0] > 0:
            left[0] -= 1
            raise locked(service)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(backend_store, name, flaky)


async def test_a_failed_write_retries_only_what_did_not_commit(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.capture(msg("m2", "alice", "I like tea"), guild_id="100")
    await service.capture_buffer.wait_written()
    fail_once(monkeypatch, service, "update_pending_message")
    service.capture(msg("m1", "bob", "I collect stamps"), guild_id="100")
    await service.message_edited("m2", "I like green tea")  # same batch: the add commits, the edit fails
    await asyncio.sleep(0.3)
    await service.store.call(Store.delete_pending_messages, ["m1"])  # a flush took m1 meanwhile
    await service.capture_buffer.wait_written()
    assert await pending(service) == ["I like green tea"]  # m1 was not written a second time


async def test_a_forget_all_holds_even_when_queued_messages_are_written_late(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service_module, "SETTLE_SECONDS", 0.2)
    fail_once(monkeypatch, service, "buffer_messages", times=2)  # the writer is stuck for about two seconds
    service.capture(msg("m1", "alice", "I live in Oslo"), guild_id="100")
    await asyncio.sleep(0.05)
    await service.forget(SCOPE, "alice", None)
    await service.capture_buffer.wait_written()
    assert await pending(service) == []


async def test_a_deletion_survives_a_failed_write_and_an_opt_out_failure_changes_nothing(
    service: MemoryService, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm.handlers[Purpose.EXTRACT] = echo_extractor
    service.capture(msg("m1", "alice", "I live in Oslo"), guild_id="100")
    await service.flush_now()
    fail_once(monkeypatch, service, "forget_message")
    assert await service.message_deleted("m1") == 1
    assert await service.list_facts(SCOPE, "alice") == []
    fail_once(monkeypatch, service, "set_opt_out")
    with pytest.raises(type(locked(service))):
        await service.set_opt_out(SCOPE, "bob", True)
    assert not service.is_opted_out(SCOPE, "bob")  # the database did not record it, so neither does memory


async def test_a_row_that_can_never_be_written_is_dropped_alone_and_capture_goes_on(
    service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    # Bypassing capture()'s cleaning: a lone surrogate is text SQLite cannot store, however often tried.
    service.capture_buffer.submit(msg("bad", "alice", "I live in Os\ud800lo"))
    service.capture(msg("m1", "bob", "I collect stamps"), guild_id="100")
    service.capture_buffer.edit("m1", "I collect old\udfff stamps")  # an edit that can never be applied
    service.capture(msg("m2", "carol", "I collect shells"), guild_id="100")
    with caplog.at_level(logging.ERROR, logger="bot.memory.capture"):
        await asyncio.wait_for(service.capture_buffer.wait_written(), 3)
    assert await pending(service) == ["I collect stamps", "I collect shells"]
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) == 2 and "bad" in dropped[0] and "m1" in dropped[1]
    assert all("\ud800" not in line and "\udfff" not in line for line in dropped)


@pytest.fixture
async def clocked_service(
    tmp_path: Path, database: Path | str
) -> AsyncIterator[tuple[MemoryService, FakeLLM, list[float]]]:
    """The default triggers (60 s quiet, 600 s age) with a quiet minimum of 3, on a clock the test moves."""
    settings = make_settings(tmp_path, database)
    store = await AsyncStore.open(
        settings.database_location, embedding_model="fake-embedding", dimensions=DIMS
    )
    llm = FakeLLM(extract=echo_extractor)
    svc = MemoryService(store, llm, FakeEmbedder(), memory_policy(settings))
    now = [1_000_000.0]
    svc.capture_buffer.clock = lambda: now[0]
    svc.capture_buffer.policy = FlushPolicy(60, 50, 600, 2, 0.02, min_messages=3)
    await svc.start()
    yield svc, llm, now
    await svc.close(timeout=2)


async def at(now: list[float], seconds: float) -> None:
    """Move the clock to `seconds` after the start and give the scheduler a few ticks."""
    now[0] = 1_000_000.0 + seconds
    await asyncio.sleep(0.15)


async def test_a_quiet_flush_waits_for_a_chunk_worth_a_call_and_age_is_the_backstop(
    clocked_service: tuple[MemoryService, FakeLLM, list[float]],
) -> None:
    service, llm, now = clocked_service
    service.capture(msg("m1", "alice", "I keep bees"), guild_id="100")
    service.capture(msg("m2", "bob", "I sing in a choir"), guild_id="100")
    await service.capture_buffer.wait_written()
    await at(now, 300)  # quiet for five minutes, but two messages are not worth a call yet
    assert llm.count(Purpose.EXTRACT) == 0
    await at(now, 601)  # the age limit: learned within MEMORY_FLUSH_MAX_AGE_SECONDS all the same

    async def learned() -> bool:
        return await service.count_facts(SCOPE, "alice") == 1 and await service.count_facts(SCOPE, "bob") == 1

    await wait_until(learned)
    assert llm.count(Purpose.EXTRACT) == 1


async def test_quiet_channels_every_member_reads_share_one_call_and_keep_their_channels(
    clocked_service: tuple[MemoryService, FakeLLM, list[float]],
) -> None:
    service, llm, now = clocked_service
    service.share_calls_between(lambda channel_id: channel_id != "staff")
    service.capture(msg("m1", "alice", "I keep bees", channel="c1"), guild_id="100")
    service.capture(msg("m2", "bob", "I sing in a choir", channel="c1"), guild_id="100")
    service.capture(msg("m3", "carol", "I restore old radios", channel="c2"), guild_id="100")
    service.capture(msg("m4", "dave", "I am moving to Oslo", channel="staff"), guild_id="100")
    await service.capture_buffer.wait_written()
    await at(now, 90)

    async def c1_and_c2_learned() -> bool:
        return (
            await service.count_facts(SCOPE, "carol") == 1 and await service.count_facts(SCOPE, "alice") == 1
        )

    await wait_until(c1_and_c2_learned)
    [(_, payload)] = [c for c in llm.calls if c[0] is Purpose.EXTRACT]
    assert sorted(m["text"] for m in payload["messages"]) == [
        "I keep bees",
        "I restore old radios",
        "I sing in a choir",
    ]  # one call for both public channels; the staff channel's words were not in it
    [carol] = await service.list_facts(SCOPE, "carol")
    [alice] = await service.list_facts(SCOPE, "alice")
    assert [s.origin.channel_id for s in carol.sources if s.origin] == ["c2"]
    assert [s.origin.channel_id for s in alice.sources if s.origin] == ["c1"]
    assert await service.count_facts(SCOPE, "dave") == 0  # alone, one message: it waits for the age limit
    await at(now, 601)

    async def staff_learned() -> bool:
        return await service.count_facts(SCOPE, "dave") == 1

    await wait_until(staff_learned)
    assert llm.count(Purpose.EXTRACT) == 2


async def test_an_edit_after_learning_takes_the_old_words_out_and_asks_for_the_new_text(
    service: MemoryService, llm: FakeLLM
) -> None:
    llm.handlers[Purpose.EXTRACT] = echo_extractor
    service.capture(msg("m1", "alice", "I live in Quillon"), guild_id="100")
    await service.flush_now()
    assert [f.text for f in await service.list_facts(SCOPE, "alice")] == ["Alice said: I live in Quillon"]

    assert await service.message_edited("m1", "I live in Bergen") is True  # learned: capture it again
    assert await service.list_facts(SCOPE, "alice") == []
    service.capture(msg("m1", "alice", "I live in Bergen"), guild_id="100")
    await service.flush_now()
    assert [f.text for f in await service.list_facts(SCOPE, "alice")] == ["Alice said: I live in Bergen"]
    # A message nothing was learned from only has its buffered text replaced.
    service.capture(msg("m2", "alice", "I like tea"), guild_id="100")
    assert await service.message_edited("m2", "I like green tea") is False
    assert await pending(service) == ["I like green tea"]


async def test_a_database_outage_is_logged_once_when_writes_fail_and_once_when_they_work_again(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fail_once(monkeypatch, service, "buffer_messages", times=4)  # several retries of the writer fail
    with caplog.at_level(logging.DEBUG, logger="bot.memory.capture"):
        service.capture(msg("m1", "alice", "I live in Oslo"), guild_id="100")
        await service.capture_buffer.wait_written()
    lines = [r for r in caplog.records if r.name == "bot.memory.capture" and r.levelno >= logging.WARNING]
    assert [r.getMessage().split(" (")[0].split(";")[0] for r in lines] == [
        "writing 1 captured operations failed",
        "writing captured messages works again",
    ]
    assert await pending(service) == ["I live in Oslo"]
