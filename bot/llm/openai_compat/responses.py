"""Reading a JSON answer the endpoint sent back: its text, whole or streamed, and how it ended.

A streamed answer is judged as it grows by the caller's `stop_early` and closed as soon as that gives a
reason (closing the request is what stops a server generating). An answer refused or cut off at its
token limit is raised as such, never read as a possibly-partial answer; a body the SDK could not read as
JSON at all (a proxy's or a login page's HTML) is named as such.
"""

from __future__ import annotations

import contextlib
from typing import Any

from bot.llm.answers import MalformedAnswer
from bot.llm.openai_compat.messages import usage_tokens
from bot.llm.usage import Usage
from bot.memory.model_ports import ModelCutOff, ModelError, ModelRefusal, PartialCheck, Purpose


def require_json(response: Any, where: str) -> None:
    """An answer the SDK could not read as JSON comes back as the body's text (a proxy's or a login
    page's HTML with status 200): named as such, and worth another try, never "'str' object has no
    attribute 'usage'"."""
    if isinstance(response, str | bytes):
        start = " ".join(str(response[:80]).split())
        raise MalformedAnswer(f"{where} answered with something that is not JSON (an HTML page?): {start!r}")


def answer_text(response: Any, *, purpose: Purpose, provider: str) -> str:
    """The text of a whole answer's first choice, once its ending is checked."""
    if not response.choices:
        raise MalformedAnswer(f"{provider} returned no answer choices")
    choice = response.choices[0]
    check_ending(
        choice.finish_reason, getattr(choice.message, "refusal", None), purpose=purpose, provider=provider
    )
    return str(choice.message.content or "")


async def streamed_answer(
    stream: Any, stop_early: PartialCheck, *, purpose: Purpose, provider: str, usage: Usage
) -> str:
    """A streamed JSON answer's text, judged by `stop_early` as it grows. Without usage in the stream
    (llama-cpp-python sends none) its pieces are counted as output tokens: a local server streams a
    token a piece."""
    text, pieces, used, finished = "", 0, None, False
    try:
        async for chunk in stream:
            used = chunk.usage or used
            for choice in chunk.choices or []:
                refusal = getattr(choice.delta, "refusal", None)
                check_ending(choice.finish_reason, refusal, purpose=purpose, provider=provider)
                finished |= choice.finish_reason is not None
                if choice.delta is not None and choice.delta.content:
                    text += choice.delta.content
                    pieces += 1
            if pieces and (reason := stop_early(text)):
                raise ModelCutOff(
                    f"{provider}'s answer was stopped after {pieces} pieces: {reason}", purpose=purpose
                )
        if not finished:  # a dropped connection or a proxy closing early: no answer to judge
            raise ModelError(
                f"{provider}'s answer stream ended before the answer did ({pieces} pieces)",
                purpose=purpose,
                retryable=True,
            )
    finally:
        with contextlib.suppress(Exception):
            await stream.close()  # closing the request is what stops a server generating
        prompt_tokens, output_tokens = usage_tokens(used) if used is not None else (0, pieces)
        usage.record(purpose, prompt_tokens, output_tokens)
    return text


def check_ending(finish_reason: str | None, refusal: str | None, *, purpose: Purpose, provider: str) -> None:
    """Raise for an answer (or a streamed piece of one) that was refused or cut off at its limit."""
    if finish_reason == "content_filter" or refusal:
        raise ModelRefusal(
            f"{provider} would not answer ({refusal or 'finish reason content_filter'})", purpose=purpose
        )
    if finish_reason == "length":
        raise ModelCutOff(f"{provider}'s answer reached its token limit and was cut off", purpose=purpose)
