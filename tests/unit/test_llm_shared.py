"""What every model provider shares: the retry loop, the usage counters, reading answers and vectors."""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator
from email.utils import formatdate

import pytest
from pydantic import BaseModel

from bot.llm.answers import (
    MalformedAnswer,
    OffSchemaAnswer,
    checked_vectors,
    normalised,
    plain_schema,
    read_answer,
)
from bot.llm.openai_compat.written_calls import calls_written_as_text
from bot.llm.retry import RetryingClient, retry_after
from bot.llm.usage import Usage, tokens
from bot.memory.model_ports import ModelBadAnswer, ModelError, ModelRefusal, Purpose, ToolCall, usage_scope
from bot.memory.prompts.extraction import ExtractionResult


class Pets(BaseModel):
    owner: str = ""
    pets: list[str]


class Busy(Exception):
    """What a fake SDK raises for an API error: a status and, maybe, a hint."""

    def __init__(self, status: int, hint: float | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.hint = hint


class Fake(RetryingClient):
    provider = "Fake"
    api_errors = (Busy,)
    chat_model = memory_model = embedding_model = "m"
    base_url = ""

    def __init__(self, **overrides: float) -> None:
        options = {"timeout_seconds": 1.0, "max_retries": 2, "backoff_base_seconds": 0.0}
        options.update(overrides)
        super().__init__(
            api_key="secret-key-1234",
            timeout_seconds=options["timeout_seconds"],
            max_retries=int(options["max_retries"]),
            backoff_base_seconds=options["backoff_base_seconds"],
            backoff_max_seconds=1.0,
            usage=None,
        )

    def _api_error(self, purpose: Purpose, model: str, exc: BaseException) -> ModelError:
        assert isinstance(exc, Busy)
        return ModelError(
            f"busy ({exc.status})",
            purpose=purpose,
            status=exc.status,
            retryable=exc.status >= 500,
        )

    def _retry_hint(self, exc: BaseException) -> float | None:
        return exc.hint if isinstance(exc, Busy) else None


def failing(*failures: BaseException, answer: str = "ok") -> tuple[list[int], object]:
    calls: list[int] = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return answer

    return calls, attempt


async def test_a_transient_failure_is_retried_within_the_budget_and_counted() -> None:
    client = Fake()
    calls, attempt = failing(Busy(503), Busy(502))
    assert await client._with_retries(Purpose.EXTRACT, attempt) == "ok"  # type: ignore[arg-type]
    assert len(calls) == 3
    assert client.usage.snapshot()["extract"]["retries"] == 2

    calls, attempt = failing(Busy(503), Busy(503), Busy(503))
    with pytest.raises(ModelError, match="gave up after 3 attempts") as raised:
        await client._with_retries(Purpose.EXTRACT, attempt)  # type: ignore[arg-type]
    assert raised.value.status == 503
    assert client.usage.snapshot()["extract"]["errors"] == 1


async def test_the_servers_hint_is_waited_and_capped() -> None:
    client = Fake()
    _calls, attempt = failing(Busy(503, hint=0.3))
    started = time.monotonic()
    await client._with_retries(Purpose.EMBED, attempt)  # type: ignore[arg-type]
    assert time.monotonic() - started >= 0.3

    _, attempt = failing(Busy(503, hint=600))
    started = time.monotonic()
    await client._with_retries(Purpose.EMBED, attempt)  # type: ignore[arg-type]
    assert time.monotonic() - started < 2.5  # twice the backoff cap, not ten minutes


async def test_client_errors_refusals_and_programming_errors_are_not_retried() -> None:
    client = Fake()
    for failure, expected in (
        (Busy(400), ModelError),
        (ModelRefusal("no"), ModelRefusal),
        (KeyError("bug"), KeyError),
    ):
        calls, attempt = failing(failure)
        with pytest.raises(expected):
            await client._with_retries(Purpose.CHAT, attempt)  # type: ignore[arg-type]
        assert len(calls) == 1


async def test_an_off_schema_answer_is_a_bad_answer_and_a_malformed_one_an_outage() -> None:
    client = Fake(max_retries=0)
    _calls, attempt = failing(OffSchemaAnswer("Fake answered with JSON that does not fit"))
    with pytest.raises(ModelBadAnswer):
        await client._with_retries(Purpose.EXTRACT, attempt)  # type: ignore[arg-type]
    _, attempt = failing(MalformedAnswer("Fake returned nothing"))
    with pytest.raises(ModelError) as raised:
        await client._with_retries(Purpose.EXTRACT, attempt)  # type: ignore[arg-type]
    assert raised.value.retryable and not isinstance(raised.value, ModelBadAnswer)


async def test_a_stream_is_retried_before_its_first_piece_and_never_after() -> None:
    client = Fake()
    tries: list[int] = []

    def stream(fail_after: int) -> object:
        async def attempt() -> AsyncGenerator[str, None]:
            tries.append(1)
            for i in range(3):
                if i == fail_after and len(tries) == 1:
                    raise ConnectionResetError("dropped")
                yield str(i)

        return attempt

    assert [p async for p in client._retrying(Purpose.CHAT, stream(0))] == ["0", "1", "2"]  # type: ignore[arg-type]
    assert len(tries) == 2
    tries.clear()
    got: list[str] = []
    with pytest.raises(ModelError, match="stream broke off midway"):
        async for piece in client._retrying(Purpose.CHAT, stream(1)):  # type: ignore[arg-type]
            got.append(piece)
    assert got == ["0"] and len(tries) == 1


async def test_a_hung_attempt_meets_the_deadline() -> None:
    import asyncio

    client = Fake(timeout_seconds=0.05, max_retries=0)

    async def hang() -> str:
        await asyncio.sleep(5)
        return "late"

    with pytest.raises(ModelError, match=r"did not answer within 0\.05s") as raised:
        await client._with_retries(Purpose.CONSOLIDATE, hang)
    assert raised.value.retryable


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after("1.5") == 1.5
    assert retry_after("-3") == 0.0
    assert retry_after(None) is None and retry_after("soon") is None
    later = retry_after(formatdate(time.time() + 30, usegmt=True))
    assert later is not None and 25 < later <= 30


def test_usage_counts_per_purpose_and_per_scope() -> None:
    usage = Usage()
    usage.record(Purpose.CHAT, 10, 5)
    with usage_scope("guild:1"):
        usage.record(Purpose.EXTRACT, 7, 0)
        usage.add(Purpose.EMBED, embedded_texts=3)
    usage.add(Purpose.CHAT, errors=1)
    assert usage.snapshot()["chat"] == {
        "calls": 1,
        "prompt_tokens": 10,
        "output_tokens": 5,
        "errors": 1,
        "retries": 0,
    }
    scoped = usage.snapshot("guild:1")
    assert scoped["chat"]["calls"] == 0 and scoped["extract"]["prompt_tokens"] == 7
    assert scoped["embed"]["embedded_texts"] == 3
    assert usage.snapshot("guild:2")["extract"]["calls"] == 0
    assert [tokens(v) for v in (None, 3, -1, "4")] == [0, 3, 0, 0]


def test_answers_are_read_leniently_and_checked_against_their_schema() -> None:
    assert read_answer(Pets, 'Sure:\n```json\n{"pets": ["Tom"]}\n```', "Fake").pets == ["Tom"]
    assert read_answer(Pets, 'The answer is {"pets": []} as asked', "Fake").pets == []
    assert read_answer(Pets, '["Tom", "Rex"]', "Fake").pets == ["Tom", "Rex"]
    with pytest.raises(OffSchemaAnswer, match="Fake answered with JSON that does not fit Pets"):
        read_answer(Pets, '{"owner": "Ana"}', "Fake")
    with pytest.raises(OffSchemaAnswer, match="invalid JSON"):
        read_answer(Pets, '{"pets": [', "Fake")


def test_vectors_must_be_directions_and_are_normalised() -> None:
    assert checked_vectors([[1.0, 0.0]], 1, "Fake") == [[1.0, 0.0]]
    with pytest.raises(MalformedAnswer, match="2 embeddings for 1 texts"):
        checked_vectors([[1.0], [2.0]], 1, "Fake")
    for bad in ([0.0, 0.0], [math.nan, 1.0]):
        with pytest.raises(MalformedAnswer, match="not a direction"):
            checked_vectors([bad], 1, "Fake")
    assert normalised([3.0, 4.0]) == [0.6, 0.8]


async def _pieces(*items: str | ToolCall) -> AsyncIterator[str | ToolCall]:
    for item in items:
        yield item


@pytest.mark.parametrize(
    "written",
    [
        '{ "name": "remember", "arguments": { "what": "Ana is a nurse" } }',
        '```json\n{ "name": "remember", "arguments": { "what": "Ana is a nurse" } }\n```',
        '{{"name": "remember", "arguments": {"what": "Ana is a nurse"}}}',
        '<tool_call>{"name": "remember", "arguments": "{\\"what\\": \\"Ana is a nurse\\"}"}</tool_call>',
    ],
)
async def test_a_tool_call_written_as_text_becomes_a_call_and_is_never_shown(written: str) -> None:
    pieces = [written[i : i + 7] for i in range(0, len(written), 7)]
    got = [p async for p in calls_written_as_text(_pieces(*pieces), {"remember", "forget"})]
    assert got == [ToolCall("remember", {"what": "Ana is a nurse"}, id="call_written_0")]


async def test_ordinary_replies_and_unoffered_tools_pass_as_text() -> None:
    offered = {"remember"}
    text = [p async for p in calls_written_as_text(_pieces("Hello", " Ana!"), offered)]
    assert text == ["Hello", " Ana!"]  # streamed as it comes, nothing held back
    braces = '{"name": "delete_everything", "arguments": {}}'
    assert [p async for p in calls_written_as_text(_pieces(braces), offered)] == [braces]
    fenced = "```python\nprint(1)\n```"
    assert "".join([str(p) async for p in calls_written_as_text(_pieces(fenced), offered)]) == fenced
    assert [p async for p in calls_written_as_text(_pieces(braces), set())] == [braces]  # no tools offered


def test_the_schema_in_an_instruction_has_its_shapes_in_place_and_no_titles() -> None:
    class Titled(BaseModel):
        title: str  # a field may be called title: only the schema's own titles go

    schema = plain_schema(ExtractionResult)
    text = json.dumps(schema)
    assert "$defs" not in text and "$ref" not in text and '"title"' not in text
    point = schema["properties"]["episodes"]["items"]["properties"]["points"]["items"]
    assert point["required"] == ["text"] and "sources" in point["properties"]
    assert plain_schema(Titled)["properties"] == {"title": {"type": "string"}}
