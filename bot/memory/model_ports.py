"""What the memory engine needs from a model, defined where the engine is.

Structured JSON answers, embeddings and a streamed chat, the purposes their usage is counted under,
and the errors they raise. The adapters in `bot/llm/` implement them (gemini.py with Google's client
library, openai_compat/ with OpenAI's); tests implement them with fakes. The engine imports no model
client, so another provider is another adapter in `bot/llm/` and its record in `bot/llm/providers.py`,
not a change here. The storage side is `ports.py` beside this.

The errors every model adapter raises, and what their readers make of them (the shared retry loop,
`bot/llm/retry.py`, turns each SDK's errors and each unusable answer into one of these):


    ModelError              a call failed for good, after retries or at once; `retryable` says whether
    |                       a later try may help (a 429, a 5xx, a timeout, an unreachable endpoint, a
    |                       body that is not JSON at all): a flush keeps its messages pending, a reply
    |                       says it failed
    +-- ModelRefusal        blocked for safety: about the input, never retried; a flush reads its chunk
    |                       apart to skip the message at fault, a reply says it will not answer that
    +-- ModelKeyRejected    the provider refuses the API key (401, 403): nothing works until an operator
    |                       fixes it and restarts; admins are told once
    +-- ModelBadAnswer      an answer, but not what was asked (off the schema) even after retries:
        |                   maybe the input's fault, so a chunk's tries are counted (MAX_BAD_ANSWERS)
        |                   and the chunk is then read apart rather than waited on forever
        +-- ModelCutOff     the answer reached its output limit, or was stopped early by a
                            `PartialCheck`: the caller asks about less, never the same way again
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, ParamSpec, Protocol, TypeVar

import pydantic

T = TypeVar("T", bound=pydantic.BaseModel)
P = ParamSpec("P")
R = TypeVar("R")


class Purpose(StrEnum):
    """Why a request is made; usage and logs are kept per purpose."""

    EXTRACT = "extract"
    CONSOLIDATE = "consolidate"
    EMBED = "embed"
    CHAT = "chat"


class ModelError(Exception):
    """A model call failed for good (after retries, or at once when retrying cannot help).

    The message is meant for operators and admin logs: it says what went wrong and never holds the API key.
    """

    def __init__(
        self,
        message: str,
        *,
        purpose: Purpose | None = None,
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.purpose = purpose
        self.status = status
        self.retryable = retryable


class ModelRefusal(ModelError):
    """The model refused or was blocked for safety; asking again will not help."""


class ModelKeyRejected(ModelError):
    """The provider refuses the API key: nothing works until an operator fixes it and restarts."""


class ModelBadAnswer(ModelError):
    """The model answered, but not with what was asked (not JSON, off the schema) even after retries.

    Unlike an outage this can be caused by the input itself, so the pipeline does not wait for it forever.
    """


class ModelCutOff(ModelBadAnswer):
    """The answer reached its output token limit and was cut off (a model copying lines or looping), or
    was stopped early because what it had said so far could no longer be used (`PartialCheck`).

    It is never read as a possibly-partial list, and asking again the same way loops the same way: the
    caller asks about less instead.
    """


ANSWER_BASE_TOKENS = 512
ANSWER_TOKENS_PER_ITEM = 128
ANSWER_MAX_TOKENS = 8192


def answer_budget(items: int) -> int:
    """The output tokens an answer about `items` messages or facts may take: enough for a few facts of
    each, small enough that a model looping over its input is cut off soon (and the input split)."""
    return min(ANSWER_MAX_TOKENS, ANSWER_BASE_TOKENS + ANSWER_TOKENS_PER_ITEM * max(1, items))


@dataclass(frozen=True)
class InlineData:
    """Bytes the chat model reads as they are (an image), with their MIME type."""

    mime_type: str
    data: bytes


TurnPart = str | InlineData  # after a turn's text: a file's text, a note about an attachment, or an image


@dataclass(frozen=True)
class ToolCall:
    """The chat model asked for a tool. `id` and `signature` (the model's thought signature) go back
    with the call when the bot answers it, as the provider requires."""

    name: str
    args: dict[str, Any]
    id: str | None = None
    signature: bytes | None = None


@dataclass(frozen=True)
class ToolResult:
    """What the bot answers to a tool call, for the model to read before it goes on."""

    name: str
    response: dict[str, Any]
    id: str | None = None


@dataclass
class ChatTurn:
    """One turn of the conversation as the chat model sees it: people are "user", the bot is "model".

    `parts` follow the text (attachments, in the order they were posted); a model turn may hold the tool
    `calls` it made, and the user turn after it their `results`.
    """

    role: Literal["user", "model"]
    text: str
    parts: list[TurnPart] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)


@dataclass(frozen=True)
class ChatTool:
    """A function the chat model may call; every parameter is a string, and required unless `optional`."""

    name: str
    description: str
    parameters: dict[str, str]  # name -> what to put in it
    optional: frozenset[str] = frozenset()


_USAGE_SCOPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("model_usage_scope", default=None)


@contextlib.contextmanager
def usage_scope(scope: str) -> Iterator[None]:
    """Count the model calls this task makes inside the block for `scope` too (a server's own figures)."""
    token = _USAGE_SCOPE.set(scope)
    try:
        yield
    finally:
        _USAGE_SCOPE.reset(token)


def current_usage_scope() -> str | None:
    """The scope the running task's model calls are counted for (see `usage_scope`), if any."""
    return _USAGE_SCOPE.get()


class Embedder(Protocol):
    """What the memory engine needs to turn text into vectors."""

    async def embed(self, texts: Sequence[str], task: Literal["document", "query"]) -> list[list[float]]: ...


# Given the text of an answer so far, why it can no longer be used (a model counting every line), or None.
PartialCheck = Callable[[str], str | None]


class JsonModel(Protocol):
    """Structured answers: the engine's extraction and consolidation calls. An answer longer than
    `max_output_tokens` raises ModelCutOff. A client that reads its answer as it is written (the
    OpenAI-compatible one) also stops with ModelCutOff once `stop_early` gives a reason, instead of
    waiting for the rest; another reads the whole answer, which the caller then judges alike."""

    async def generate_json(
        self,
        purpose: Purpose,
        *,
        system: str,
        prompt: str,
        schema: type[T],
        max_output_tokens: int,
        stop_early: PartialCheck | None = None,
    ) -> T: ...


# The last piece of a streamed reply that stopped at its output limit (a model that ran away, or a long
# answer): every chat model yields it then, and the reply use case adds it when it cuts a reply itself, so
# the reader is told the answer is not whole.
REPLY_CUT_NOTE = "\n\n(cut: the answer ran too long)"


class ChatModel(Protocol):
    """A streamed chat reply: text pieces, or the tools the model asks for; REPLY_CUT_NOTE last when the
    reply stopped at its output limit."""

    def chat_stream(
        self, *, system: str, turns: Sequence[ChatTurn], tools: Sequence[ChatTool] = ()
    ) -> AsyncGenerator[str | ToolCall, None]: ...
