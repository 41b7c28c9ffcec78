"""The reply loop that answers the model's lookups: rounds, caps, calls left to the caller, and odd
arguments (a lookup that fails, a 5,000-digit id, a recap since a huge number of days)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.chat.tool_rounds import FAILED, MAX_CALLS_PER_ROUND, TOO_MANY, answer_with_tools
from bot.memory.lookup import MAX_ARG_CHARS, LookupRequest
from bot.memory.model_ports import ChatTool, ChatTurn, ToolCall
from bot.memory.timespan import MAX_DAYS_BACK, time_span
from tests.fakes import Scripted

SEARCH = ChatTool("search_memory", "look", {"person": "who"})
REMEMBER = ChatTool("remember", "keep", {"what": "what"})


async def collect(model: Scripted, handled: list[ToolCall]) -> list[str | ToolCall]:
    async def search(call: ToolCall) -> dict[str, Any]:
        handled.append(call)
        return {"facts": [call.args["person"]]}

    stream = answer_with_tools(
        model,
        system="s",
        turns=[ChatTurn("user", "hi")],
        tools=[REMEMBER, SEARCH],
        handlers={"search_memory": search},
    )
    return [piece async for piece in stream]


async def test_calls_beyond_the_cap_of_a_round_are_told_to_wait_and_every_call_is_answered() -> None:
    calls = [
        ToolCall("search_memory", {"person": f"p{i}"}, id=str(i)) for i in range(MAX_CALLS_PER_ROUND + 1)
    ]
    model = Scripted(["Let me look. ", *calls], ["Found them."])
    handled: list[ToolCall] = []
    assert await collect(model, handled) == ["Let me look. ", "Found them."]
    assert handled == calls[:MAX_CALLS_PER_ROUND]
    turns, _ = model.requests[1]
    assert turns[1] == ChatTurn("model", "Let me look. ", calls=calls)
    results = turns[2].results
    assert [r.id for r in results] == [c.id for c in calls] and results[-1].response == TOO_MANY


async def test_a_call_for_the_caller_ends_the_rounds_and_is_handed_over() -> None:
    remember = ToolCall("remember", {"what": "I like tea"})
    model = Scripted([ToolCall("search_memory", {"person": "ana"}), remember])
    handled: list[ToolCall] = []
    assert await collect(model, handled) == [remember]
    assert handled == [] and len(model.requests) == 1  # the bot acts on remember; nothing is looked up


async def test_a_lookup_that_fails_is_told_to_the_model_and_the_reply_goes_on() -> None:
    async def broken(call: ToolCall) -> dict[str, Any]:
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")

    model = Scripted([ToolCall("search_memory", {"ids": "9" * 50}, id="1")], ["I could not look that up."])
    stream = answer_with_tools(
        model, system="s", turns=[ChatTurn("user", "hi")], tools=[SEARCH], handlers={"search_memory": broken}
    )
    assert [piece async for piece in stream] == ["I could not look that up."]
    turns, _ = model.requests[1]
    assert turns[-1].results[0].response == FAILED


def test_a_lookups_arguments_are_bounded_and_a_5000_digit_id_is_no_id() -> None:
    request = LookupRequest.from_args(
        {"person": "b" * 10_000, "query": "q" * 10_000, "ids": "9" * 5000 + " #12, 15", "when": "w" * 10_000}
    )
    assert request.ids == (12, 15)
    assert len(request.person) == len(request.query) == len(request.when) == MAX_ARG_CHARS
    past_int64 = LookupRequest.from_args({"person": "bob", "ids": [2**63, 2**63 - 1, 0, -4]})
    assert past_int64.ids == (2**63 - 1, 4)  # "-4" is read as the number it writes, 4


def test_a_recap_since_a_huge_number_of_days_reaches_back_a_century_not_an_overflow() -> None:
    now = datetime(2026, 11, 28, 12, tzinfo=UTC)
    for phrase in ("since 99999999 days ago", "since " + "9" * 5000 + " days ago"):
        span = time_span(phrase, now)
        assert span is not None and span[0] == datetime(2026, 11, 28, tzinfo=UTC) - timedelta(
            days=MAX_DAYS_BACK
        )
    assert time_span("3 days ago", now) == (
        datetime(2026, 11, 25, tzinfo=UTC),
        datetime(2026, 11, 26, tzinfo=UTC),
    )
