"""Translation between the bot's chat turns and the chat completions API's messages, both ways.

Out: turns become messages (consecutive turns of one role joined, images as data URLs or, where the
endpoint takes none, a line saying so; a model turn's tool calls as `tool_calls`, their results as `tool`
messages) and tools become functions. Back: a streamed reply's chunks become the text pieces and, once
the stream ends, the tool calls gathered from their fragments.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

from bot.llm.answers import MalformedAnswer
from bot.llm.usage import Usage, tokens
from bot.memory.model_ports import (
    REPLY_CUT_NOTE,
    ChatTool,
    ChatTurn,
    InlineData,
    ModelRefusal,
    Purpose,
    ToolCall,
)

NO_IMAGE = "[an image the model cannot see: this endpoint takes no images]"
# Said to a model whose endpoint takes no tools, so it never claims to have done what only a tool does.
NO_TOOLS = (
    "You have no tools here: you cannot remember, forget or look anything up yourself. When someone asks "
    "you to remember or forget something, tell them to use /remember or /forget."
)


class EmptyStream(MalformedAnswer):
    """A reply stream that ended before its first chunk."""


def messages_of(system: str, turns: Sequence[ChatTurn], *, images: bool) -> list[Any]:
    """Chat messages from turns: consecutive turns of one role join in one message; a model turn's tool
    calls go as the assistant's `tool_calls`, and the results after it as `tool` messages with their ids."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for turn in turns:
        for result in turn.results:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": result.id or result.name,
                    "content": json.dumps(result.response, ensure_ascii=False),
                }
            )
        parts = _content_parts(turn, images=images)
        role = "user" if turn.role == "user" else "assistant"
        if turn.calls:
            messages.append(
                {
                    "role": "assistant",
                    "content": _joined(parts) or None,
                    "tool_calls": [
                        {
                            "id": call.id or call.name,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": json.dumps(call.args, ensure_ascii=False),
                            },
                        }
                        for call in turn.calls
                    ],
                }
            )
            continue
        if not parts:
            continue
        last = messages[-1] if messages else None
        if last is not None and last["role"] == role and "tool_calls" not in last and role != "system":
            last["parts"] += parts
        else:
            messages.append({"role": role, "parts": parts})
    return [_finished(m) for m in messages]


def _content_parts(turn: ChatTurn, *, images: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text.strip() else []
    for item in turn.parts:
        if isinstance(item, InlineData):
            if images:
                url = f"data:{item.mime_type};base64,{base64.b64encode(item.data).decode('ascii')}"
                parts.append({"type": "image_url", "image_url": {"url": url}})
            else:
                parts.append({"type": "text", "text": NO_IMAGE})
        elif item.strip():
            parts.append({"type": "text", "text": item})
    return parts


def _joined(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p["type"] == "text")


def _finished(message: dict[str, Any]) -> dict[str, Any]:
    """A message's content: plain text when it has no image (what every endpoint takes), else parts."""
    parts = message.pop("parts", None)
    if parts is None:
        return message
    if all(p["type"] == "text" for p in parts):
        message["content"] = _joined(parts)
    else:
        message["content"] = parts
    return message


def function_of(tool: ChatTool) -> dict[str, Any]:
    """A tool as the API describes a function: every parameter a string, required unless optional."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": {
                "type": "object",
                "properties": {
                    name: {"type": "string", "description": about} for name, about in tool.parameters.items()
                },
                "required": [name for name in tool.parameters if name not in tool.optional],
            },
        },
    }


def _gather_call(call: dict[str, Any], delta: Any) -> None:
    """A streamed tool call arrives in pieces: the id and name once, the arguments in fragments."""
    if delta.id:
        call["id"] = delta.id
    function = delta.function
    if function is not None:
        if function.name:
            call["name"] = function.name
        call["arguments"] = call.get("arguments", "") + (function.arguments or "")


async def reply_pieces(
    chunks: AsyncIterator[Any], *, provider: str, usage: Usage
) -> AsyncGenerator[str | ToolCall, None]:
    """A reply stream's text deltas, then its gathered tool calls (its calls and tokens counted in
    `usage`); EmptyStream when nothing came."""
    calls: dict[int, dict[str, Any]] = {}
    cut = False
    answered = False
    async for chunk in chunks:
        if not answered:
            answered = True
            usage.add(Purpose.CHAT, calls=1)
        usage.add_tokens(Purpose.CHAT, *usage_tokens(chunk.usage))
        for choice in chunk.choices or []:
            if choice.finish_reason == "content_filter":
                raise ModelRefusal(
                    f"{provider} stopped the answer (finish reason content_filter)", purpose=Purpose.CHAT
                )
            cut = cut or choice.finish_reason == "length"
            if choice.delta is None:
                continue
            if choice.delta.content:
                yield choice.delta.content
            for delta in choice.delta.tool_calls or []:
                _gather_call(calls.setdefault(delta.index, {}), delta)
    if not answered:
        raise EmptyStream(f"{provider} returned an empty stream")
    for index in sorted(calls):
        if calls[index].get("name"):
            yield _tool_call(calls[index], index)
    if cut:  # stopped at the reply's output limit: the reader is told it is not whole
        yield REPLY_CUT_NOTE


def _tool_call(call: dict[str, Any], index: int) -> ToolCall:
    try:
        args = json.loads(call.get("arguments") or "{}")
    except ValueError:  # not JSON, or a number past Python's 4,300 digits: a call without arguments
        args = {}
    return ToolCall(
        str(call.get("name", "")),
        args if isinstance(args, dict) else {},
        id=call.get("id") or f"call_{index}",
    )


def has_images(turns: Sequence[ChatTurn]) -> bool:
    return any(isinstance(p, InlineData) for t in turns for p in t.parts)


def usage_tokens(usage: Any) -> tuple[int, int]:
    if usage is None:
        return 0, 0
    return tokens(getattr(usage, "prompt_tokens", None)), tokens(getattr(usage, "completion_tokens", None))
