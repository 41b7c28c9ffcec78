"""Tool calls a model wrote out as text, read as the calls they are.

Small local models behind a server that cannot parse their chat template (llama-cpp-python's, with many
templates) write a call as the reply's text: a JSON object, in a code fence, in <tool_call> tags or in
doubled braces. Shown as it is, a person would read a JSON blob and nothing would be remembered; read
here, it is the call the model meant. Provider-neutral in what it reads (the reply's pieces), so the
unit tests use it without an endpoint.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator

from bot.memory.model_ports import ToolCall

# How small local models write a tool call as text when their server does not turn it into one:
# a JSON object, in a code fence, in <tool_call> tags or in doubled braces.
_WRITTEN_OPENINGS = ("{", "`", "<tool_call>")
_WRAPPERS = re.compile(r"^```(?:json)?\s*|\s*```$|^<tool_call>\s*|\s*</tool_call>$", re.I)


async def calls_written_as_text(
    pieces: AsyncIterator[str | ToolCall], offered: set[str]
) -> AsyncGenerator[str | ToolCall, None]:
    """The reply's pieces, with a call of an offered tool that the model wrote out as text (llama-cpp-
    python's server with a model whose template it cannot parse) turned into a `ToolCall`, so nobody is
    shown a JSON blob. A reply that starts like one is held back until it ends or stops looking like one."""
    held = ""
    passing = not offered
    async for piece in pieces:
        if passing or not isinstance(piece, str):
            yield piece
            continue
        held += piece
        start = held.lstrip()
        if start and not any(start.startswith(o) or o.startswith(start) for o in _WRITTEN_OPENINGS):
            passing = True
            yield held
    if passing or not held.strip():
        return
    call = _written_call(held, offered)
    yield call if call is not None else held


def _written_call(text: str, offered: set[str]) -> ToolCall | None:
    """The tool call a reply's text writes out, when it is one of an offered tool and nothing else."""
    body = _WRAPPERS.sub("", text.strip()).strip()
    while body.startswith("{{") and body.endswith("}}"):
        body = body[1:-1]
    try:
        written = json.loads(body)
    except ValueError:  # not JSON, or a number past Python's 4,300 digits
        return None
    if not isinstance(written, dict) or written.get("name") not in offered:
        return None
    args = written.get("arguments", written.get("parameters", {}))
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    return ToolCall(str(written["name"]), args if isinstance(args, dict) else {}, id="call_written_0")
