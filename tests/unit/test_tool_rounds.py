"""The reply loop that answers the model's lookups: rounds, caps, and calls left to the caller."""

from __future__ import annotations

from typing import Any

from bot.llm.tool_rounds import MAX_CALLS_PER_ROUND, TOO_MANY, answer_with_tools
from bot.memory.ports import ChatTool, ChatTurn, ToolCall
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
