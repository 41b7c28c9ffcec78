"""A streamed reply during which the model may consult tools the bot answers (function calling).

The model's answer streams as usual. When it calls a tool this loop has a handler for (search_memory),
the bot runs it, sends the call and its result back (functionCall, then functionResponse) and streams the
model's next answer, at most `max_rounds` times; the last request no longer offers those tools, so the
model must answer in words. Calls of other tools (remember, forget) are handed to the caller, which acts
on them in its own words. Provider-neutral: it speaks to the engine's `ChatModel` port.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from bot.memory.model_ports import ChatModel, ChatTool, ChatTurn, ToolCall, ToolResult

MAX_TOOL_ROUNDS = 2  # lookups per reply, then the model must answer
MAX_CALLS_PER_ROUND = 3  # calls answered in one round; more are told to wait
TOO_MANY = {"error": f"at most {MAX_CALLS_PER_ROUND} lookups at once; ask for the most useful first"}

ToolHandler = Callable[[ToolCall], Awaitable[dict[str, Any]]]
FAILED = {"error": "that lookup failed; answer without it, and say you could not look it up"}
log = logging.getLogger(__name__)


async def _handled(handler: ToolHandler, call: ToolCall) -> dict[str, Any]:
    """A handler's answer; when it fails (odd arguments a model wrote, a store error), a short error the
    model answers around, so the reply is never lost to one lookup. Logged with the tool's name."""
    try:
        return await handler(call)
    except Exception:
        log.warning("the %s call failed; the model was told and answers without it", call.name, exc_info=True)
        return FAILED


async def answer_with_tools(
    model: ChatModel,
    *,
    system: str,
    turns: Sequence[ChatTurn],
    tools: Sequence[ChatTool],
    handlers: Mapping[str, ToolHandler],
    max_rounds: int = MAX_TOOL_ROUNDS,
    on_round: Callable[[list[ToolCall]], None] | None = None,
) -> AsyncGenerator[str | ToolCall, None]:
    """Yield the reply's text pieces across rounds, and the calls of tools without a handler.

    `on_round` hears each round's calls (for counting what lookups cost).
    """
    turns = list(turns)
    for round_number in range(max_rounds + 1):
        last = round_number == max_rounds
        offered = [t for t in tools if not (last and t.name in handlers)]
        text = ""
        answered: list[ToolCall] = []
        handed_over = False
        stream = model.chat_stream(system=system, turns=turns, tools=offered)
        async with contextlib.aclosing(stream):
            async for piece in stream:
                if isinstance(piece, ToolCall) and piece.name in handlers:
                    if not last:
                        answered.append(piece)
                    continue
                if isinstance(piece, ToolCall):
                    handed_over = True
                else:
                    text += piece
                yield piece
        if not answered or handed_over:  # the caller acts on its own tools' calls, not the model
            return
        if on_round is not None:
            on_round(answered)
        results = [
            ToolResult(
                call.name,
                await _handled(handlers[call.name], call) if i < MAX_CALLS_PER_ROUND else TOO_MANY,
                call.id,
            )
            for i, call in enumerate(answered)
        ]
        turns += [ChatTurn("model", text, calls=answered), ChatTurn("user", "", results=results)]
