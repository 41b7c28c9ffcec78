"""In-process fakes for unit tests: an embedder whose vectors the test chooses, a scripted JSON model, and a
scripted chat model."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bot.memory.model_ports import (
    ChatTool,
    ChatTurn,
    ModelBadAnswer,
    ModelError,
    PartialCheck,
    Purpose,
    ToolCall,
)
from standins.brain import read_chunk

T = TypeVar("T", bound=BaseModel)
DIMS = 8


def stable_hash(text: str) -> int:
    """The same number for the same text in every run (the built-in hash() changes per process)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def unit(*values: float, dims: int = DIMS) -> list[float]:
    """A unit vector from the given leading components (the rest zero)."""
    padded = [*values, *([0.0] * (dims - len(values)))]
    norm = math.sqrt(sum(v * v for v in padded)) or 1.0
    return [v / norm for v in padded]


def angled(degrees: float, *, axis: int = 0, towards: int = 1, dims: int = DIMS) -> list[float]:
    """A unit vector `degrees` away from basis vector `axis`, rotating towards `towards`.

    Cosine distance to the axis is 1 - cos(degrees), so tests can place facts at known distances.
    """
    v = [0.0] * dims
    v[axis] = math.cos(math.radians(degrees))
    v[towards] = math.sin(math.radians(degrees))
    return v


class FakeEmbedder:
    """Returns the vector the test registered for a text (or `default(text)`), recording every call."""

    def __init__(
        self,
        vectors: dict[str, list[float]] | None = None,
        *,
        dims: int = DIMS,
        default: Callable[[str], list[float]] | None = None,
    ) -> None:
        self.vectors = dict(vectors or {})
        self.dims = dims
        self.default = default or (
            lambda text: unit(*[(stable_hash(text) >> s) % 7 + 1 for s in range(dims)], dims=dims)
        )
        self.calls: list[tuple[list[str], str]] = []
        self.fail = False

    async def embed(self, texts: Sequence[str], task: str) -> list[list[float]]:
        if self.fail:
            raise ModelError("embedding failed", purpose=Purpose.EMBED, status=503, retryable=True)
        self.calls.append((list(texts), task))
        return [list(self.vectors[t]) if t in self.vectors else self.default(t) for t in texts]


Handler = Callable[[dict[str, Any]], dict[str, Any]]


def keep_every_fact(payload: dict[str, Any]) -> dict[str, Any]:
    """A consolidation answer deciding KEEP for each new fact asked about."""
    return {
        "decisions": [{"new_fact": item["new_fact"], "decision": "KEEP"} for item in payload["new_facts"]]
    }


class FakeLLM:
    """Answers generate_json from per-purpose handlers that receive the decoded prompt (JSON, or an
    extraction's transcript as `standins.brain.read_chunk` reads it)."""

    def __init__(self, *, extract: Handler | None = None, consolidate: Handler | None = None) -> None:
        self.handlers: dict[Purpose, Handler] = {
            Purpose.EXTRACT: extract or (lambda payload: {"facts": []}),
            Purpose.CONSOLIDATE: consolidate or keep_every_fact,
        }
        self.calls: list[tuple[Purpose, dict[str, Any]]] = []
        self.limits: list[int | None] = []  # each call's max_output_tokens
        self.fail_with: ModelError | None = None

    async def generate_json(
        self,
        purpose: Purpose,
        *,
        system: str,
        prompt: str,
        schema: type[T],
        max_output_tokens: int | None = None,
        stop_early: PartialCheck | None = None,
    ) -> T:
        try:
            payload = json.loads(prompt)
        except ValueError:  # an extraction's compact transcript
            payload = read_chunk(prompt)
        self.calls.append((purpose, payload))
        self.limits.append(max_output_tokens)
        if self.fail_with is not None:
            raise self.fail_with
        try:  # as the adapters read answers: one off the schema is a bad answer
            return schema.model_validate(self.handlers[purpose](payload))
        except ValidationError as exc:
            raise ModelBadAnswer(
                f"off the schema: {exc.errors()[0]}", purpose=purpose, retryable=True
            ) from exc

    def count(self, purpose: Purpose) -> int:
        return sum(1 for p, _ in self.calls if p is purpose)


class Scripted:
    """A chat model answering each request with the next scripted list of pieces; an exception in the
    list is raised there, as a stream failing midway. `closed` counts the streams closed early or not."""

    def __init__(self, *answers: list[str | ToolCall | Exception]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[list[ChatTurn], list[str]]] = []
        self.systems: list[str] = []
        self.closed = 0

    async def chat_stream(
        self, *, system: str, turns: Sequence[ChatTurn], tools: Sequence[ChatTool] = ()
    ) -> AsyncGenerator[str | ToolCall, None]:
        self.requests.append((list(turns), [t.name for t in tools]))
        self.systems.append(system)
        try:
            for piece in self.answers.pop(0):
                if isinstance(piece, Exception):
                    raise piece
                yield piece
        finally:
            self.closed += 1
