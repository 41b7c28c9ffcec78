"""What the memory engine needs from the world, defined where the engine is.

The model side: structured JSON answers, embeddings and a streamed chat, the purposes their usage is
counted under, and the errors they raise. `bot/llm/gemini.py` implements them with google-genai; tests
implement them with fakes. The engine imports no model client, so another provider is a new module
beside gemini.py, not a change here.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Protocol, TypeVar

import pydantic

T = TypeVar("T", bound=pydantic.BaseModel)


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


@dataclass
class ChatTurn:
    """One turn of the conversation as the chat model sees it: people are "user", the bot is "model"."""

    role: Literal["user", "model"]
    text: str


@dataclass(frozen=True)
class ChatTool:
    """A function the chat model may call instead of answering in words; every parameter is a string."""

    name: str
    description: str
    parameters: dict[str, str]  # name -> what to put in it


@dataclass(frozen=True)
class ToolCall:
    """The chat model asked for a tool; the bot acts and answers in its own words."""

    name: str
    args: dict[str, Any]


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


class JsonModel(Protocol):
    """Structured answers: the engine's extraction and consolidation calls."""

    async def generate_json(self, purpose: Purpose, *, system: str, prompt: str, schema: type[T]) -> T: ...


class ChatModel(Protocol):
    """A streamed chat reply: text pieces, or the tools the model asks for."""

    def chat_stream(
        self, *, system: str, turns: Sequence[ChatTurn], tools: Sequence[ChatTool] = ()
    ) -> AsyncGenerator[str | ToolCall, None]: ...
