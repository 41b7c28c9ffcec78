"""A memory model that only counts lines stops being asked to select, and is asked again now and then."""

from __future__ import annotations

import pytest

from bot.memory.counting import ASK_AGAIN_EVERY, STOP_AFTER, CountingWatch, described
from bot.memory.extract import SELECT, counts_lines, extract_chunk
from bot.memory.models import BufferedMessage
from bot.memory.prompts.selection import SELECT_TASK
from tests.unit.test_selection import ANA, BEN, NOW, Answers, said


def talk() -> list[BufferedMessage]:
    lines = [
        said(i, ANA if i % 2 else BEN, f"just chatting about the weather, line {i}") for i in range(1, 25)
    ]
    lines[2] = said(3, ANA, "I live in Porto")
    return lines


def every_id(chunk: list[BufferedMessage]) -> dict[str, list[str]]:
    return {"self": [f"m{i}" for i in range(1, len(chunk) + 1)]}


async def test_after_counting_selections_in_a_row_the_bot_reads_without_asking() -> None:
    chunk = talk()
    model = Answers(every_id(chunk))
    watch = CountingWatch()
    for _ in range(STOP_AFTER):
        found = await extract_chunk(model, chunk, NOW, mode=SELECT, watch=watch)
        assert any("Porto" in f.text for f in found.facts)
    assert watch.stopped
    asked = len(model.calls)
    found = await extract_chunk(model, chunk, NOW, mode=SELECT, watch=watch)
    assert len(model.calls) == asked  # no call, and the chunk still read by the bot's rules
    assert any("Porto" in f.text for f in found.facts)


async def test_a_stopped_watch_asks_again_now_and_then_and_a_choice_resumes_asking() -> None:
    chunk = talk()
    watch = CountingWatch(in_a_row=STOP_AFTER, stopped=True)
    chooser = Answers({"self": ["m3"]})
    for _ in range(ASK_AGAIN_EVERY):
        await extract_chunk(chooser, chunk, NOW, mode=SELECT, watch=watch)
    assert [task for task, _, _ in chooser.calls] == [SELECT_TASK]  # once in ASK_AGAIN_EVERY flushes
    assert not watch.stopped and watch.in_a_row == 0


async def test_a_choosing_model_is_always_asked() -> None:
    chunk = talk()
    model = Answers({"self": ["m3"]})
    watch = CountingWatch()
    for _ in range(STOP_AFTER + 2):
        await extract_chunk(model, chunk, NOW, mode=SELECT, watch=watch)
    assert len(model.calls) == STOP_AFTER + 2 and not watch.stopped


async def test_small_chunks_tell_nothing_either_way() -> None:
    chunk = talk()[:5]
    watch = CountingWatch()
    for _ in range(STOP_AFTER + 1):
        await extract_chunk(Answers(every_id(chunk), {"facts": []}), chunk, NOW, mode=SELECT, watch=watch)
    assert not watch.stopped and watch.in_a_row == 0


@pytest.mark.parametrize(
    ("answer", "counted"),
    [({"self": ["m3", "m8", "m16"]}, False), ({"self": [f"m{i}" for i in range(1, 25)]}, True)],
)
async def test_check_onlines_probe_tells_a_counting_model(
    answer: dict[str, list[str]], counted: bool
) -> None:
    assert await counts_lines(Answers(answer)) is counted


def test_the_watch_survives_a_restart_and_reads_as_words() -> None:
    watch = CountingWatch(in_a_row=4, stopped=True, skipped=7)
    again = CountingWatch.of(watch.state())
    assert again == watch
    assert CountingWatch.of({"in_a_row": "x"}) == CountingWatch()
    assert described(watch.state()).startswith("not asked")
    assert described(None) == "asked in every flush"
