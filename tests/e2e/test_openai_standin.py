"""The OpenAI-compatible stand-in driven by the official `openai` client: what the bot's OpenAI adapter
will send and read (streaming, tools, JSON modes, images, embeddings, auth, faults), and the switches that
make it act like an endpoint that does less."""

from __future__ import annotations

import array
import base64
import json
import math
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from bot.memory.prompts.consolidation import CONSOLIDATE_TASK, ConsolidationResult
from standins.brain import FakeBrain, system_text
from standins.openai import (
    IMAGE_TOKENS,
    WRAPPED_JSON,
    OpenAIStandIn,
    gemini_body,
    image_parts,
    tool_results,
)

KEY = "sk-test-0123456789abcdef"
REPLY = "Nice to hear from you! The weather in Oslo sounds lovely this time of the year."
SEARCH_TOOL: ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": "search_memory",
        "description": "Look further in what you remember of someone.",
        "parameters": {
            "type": "object",
            "properties": {"person": {"type": "string"}, "query": {"type": "string"}},
            "required": ["person", "query"],
        },
    },
}
CONSOLIDATE: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": CONSOLIDATE_TASK + "\nAnswer in JSON."},
    {
        "role": "user",
        "content": json.dumps(
            {
                "new_facts": [
                    {
                        "new_fact": 0,
                        "text": "Ana lives in Oslo",
                        "candidates": [{"id": 7, "text": "Ana lives in Bergen"}],
                    }
                ]
            }
        ),
    },
]
DECISIONS = {"decisions": [{"new_fact": 0, "decision": "INVALIDATE", "target_fact_id": 7}]}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.fixture
async def standin() -> AsyncIterator[OpenAIStandIn]:
    async with OpenAIStandIn() as server:
        server.generate_handler = FakeBrain(REPLY)
        yield server


def connect(standin: OpenAIStandIn, *, base_url: str | None = None, **options: Any) -> openai.AsyncOpenAI:
    options = {"api_key": KEY, "max_retries": 0, "timeout": 5.0, **options}
    return openai.AsyncOpenAI(base_url=base_url or standin.base_url, **options)


@pytest.fixture
async def client(standin: OpenAIStandIn) -> AsyncIterator[openai.AsyncOpenAI]:
    async with connect(standin) as opened:
        yield opened


def said(text: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "system", "content": "You are a friendly bot."}, {"role": "user", "content": text}]


async def test_streamed_text_arrives_in_pieces_with_usage_last(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    stream = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=said("Ana: hello!"),
        stream=True,
        stream_options={"include_usage": True},
        temperature=0.3,
        seed=7,
    )
    chunks = [chunk async for chunk in stream]

    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(pieces) == REPLY and len(pieces) == math.ceil(len(REPLY) / standin.stream_chunk_size)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert not chunks[-1].choices and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == standin.counters["stream"]["output_tokens"] > 0
    assert chunks[-1].usage.prompt_tokens == standin.counters["stream"]["prompt_tokens"] > 0
    seen = standin.generate_handler.chat_requests[-1]  # type: ignore[attr-defined]
    assert system_text(seen) == "You are a friendly bot."
    assert seen["generationConfig"] == {"temperature": 0.3, "seed": 7}
    assert [r.kind for r in standin.requests] == ["stream"]


async def test_a_tool_call_round_trip_streamed_then_answered(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    standin.stream_chunk_size = 8  # the call's arguments arrive in several pieces
    messages = said("Bob: do you remember what Ana's dog is called?")
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=messages, tools=[SEARCH_TOOL], stream=True
    )
    calls: dict[int, dict[str, str]] = {}
    finish = None
    async for chunk in stream:
        for piece in chunk.choices[0].delta.tool_calls or []:
            call = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
            call["id"] += piece.id or ""
            call["name"] += (piece.function and piece.function.name) or ""
            call["arguments"] += (piece.function and piece.function.arguments) or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls" and list(calls) == [0]
    assert calls[0]["name"] == "search_memory" and calls[0]["id"].startswith("call_")
    assert json.loads(calls[0]["arguments"]) == {"person": "Ana", "query": "dog"}

    # The model's call and a second one, answered by two tool messages: one turn of two answers.
    second = {
        "id": "call_second",
        "type": "function",
        "function": {"name": "search_memory", "arguments": "{}"},
    }
    found = [
        {"person": "Ana", "facts": [{"id": 3, "text": "Ana's dog is called Rex"}]},
        {"person": "Bob", "facts": [{"id": 4, "text": "Bob's cat is Tom"}]},
    ]
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": calls[0]["id"],
                    "type": "function",
                    "function": {"name": "search_memory", "arguments": calls[0]["arguments"]},
                },
                second,
            ],
        },
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": json.dumps(found[0])},
        {"role": "tool", "tool_call_id": "call_second", "content": json.dumps(found[1])},
    ]
    answer = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[SEARCH_TOOL])

    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.content == "From memory: Ana's dog is called Rex; Bob's cat is Tom"
    sent = standin.of_kind("chat")[0].json
    assert [m["tool_call_id"] for m in tool_results(sent)] == [calls[0]["id"], "call_second"]
    last = gemini_body(sent)["contents"][-1]
    assert [p["functionResponse"]["name"] for p in last["parts"]] == ["search_memory"] * 2
    unanswered = messages[:-1]  # a call without its tool message: refused, as OpenAI does
    with pytest.raises(openai.BadRequestError, match="did not have response messages"):
        await client.chat.completions.create(model="gpt-4o-mini", messages=unanswered, tools=[SEARCH_TOOL])


async def test_json_schema_strict_from_the_library_and_json_object(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    parsed = await client.chat.completions.parse(
        model="gpt-4o-mini", messages=CONSOLIDATE, response_format=ConsolidationResult
    )
    decisions = parsed.choices[0].message.parsed.decisions if parsed.choices[0].message.parsed else []
    assert [(d.new_fact, d.decision, d.target_fact_id) for d in decisions] == [(0, "INVALIDATE", 7)]
    sent = standin.of_kind("chat")[0].json["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True

    answer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=CONSOLIDATE, response_format={"type": "json_object"}
    )
    assert json.loads(answer.choices[0].message.content or "") == DECISIONS

    loose = {"type": "object", "properties": {"decisions": {"type": "array"}}}
    with pytest.raises(openai.BadRequestError, match="additionalProperties"):
        await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=CONSOLIDATE,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "d", "schema": loose, "strict": True},
            },
        )
    not_strict = {"type": "json_schema", "json_schema": {"name": "d", "schema": loose}}
    answer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=CONSOLIDATE, response_format=not_strict
    )
    assert json.loads(answer.choices[0].message.content or "") == DECISIONS
    with pytest.raises(openai.BadRequestError, match="must contain the word 'json'"):
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=said("Ana: hi"), response_format={"type": "json_object"}
        )


async def test_an_endpoint_that_ignores_response_format_wraps_its_json(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    standin.ignores_response_format = True
    loose = {"type": "object", "properties": {"decisions": {"type": "array"}}}
    answer = await client.chat.completions.create(
        model="local",
        messages=CONSOLIDATE,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "d", "schema": loose, "strict": True},
        },
    )
    content = answer.choices[0].message.content or ""
    assert content == WRAPPED_JSON.format(json.dumps(DECISIONS))
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)


async def test_an_endpoint_without_structured_outputs_takes_json_mode_only(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    standin.rejects_json_schema = True
    schema = {"type": "json_schema", "json_schema": {"name": "d", "schema": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError, match="json_schema' is not supported"):
        await client.chat.completions.create(model="local", messages=CONSOLIDATE, response_format=schema)
    answer = await client.chat.completions.create(
        model="local", messages=CONSOLIDATE, response_format={"type": "json_object"}
    )
    assert json.loads(answer.choices[0].message.content or "") == DECISIONS


async def test_an_endpoint_without_tools_refuses_them_or_answers_without_them(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    asked = said("Bob: do you remember what Ana's dog is called?")
    standin.no_tools = "reject"
    with pytest.raises(openai.BadRequestError, match="tools are not supported") as refused:
        await client.chat.completions.create(model="local", messages=asked, tools=[SEARCH_TOOL])
    assert refused.value.status_code == 400

    standin.no_tools = "ignore"
    answer = await client.chat.completions.create(model="local", messages=asked, tools=[SEARCH_TOOL])
    assert answer.choices[0].message.tool_calls is None and answer.choices[0].message.content == REPLY
    assert "tools" not in standin.generate_handler.chat_requests[-1]  # type: ignore[attr-defined]


async def test_images_arrive_as_data_urls_unless_the_model_is_text_only(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    messages: list[ChatCompletionMessageParam] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Ana: look at my cat"},
                {"type": "image_url", "image_url": {"url": url, "detail": "low"}},
            ],
        }
    ]
    answer = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    assert image_parts(standin.requests[-1].json) == [("image/png", PNG)]
    assert answer.usage is not None and answer.usage.prompt_tokens > IMAGE_TOKENS

    standin.no_images = True
    with pytest.raises(openai.BadRequestError, match="image_url is only supported"):
        await client.chat.completions.create(model="text-only", messages=messages)


async def test_token_limits_and_content_filter_set_the_finish_reason(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    short = await client.chat.completions.create(model="gpt-4o-mini", messages=said("hi"), max_tokens=5)
    assert short.choices[0].finish_reason == "length" and short.choices[0].message.content == REPLY[:20]
    newer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=said("hi"), max_completion_tokens=5
    )
    assert newer.choices[0].finish_reason == "length"
    standin.filter_next()
    filtered = await client.chat.completions.create(model="gpt-4o-mini", messages=said("hi"))
    assert (
        filtered.choices[0].finish_reason == "content_filter" and filtered.choices[0].message.content is None
    )


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_embeddings_float_base64_dimensions_and_model_widths(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    texts = ["Ana's dog is called Rex", "what is Ana's dog called", "the tax office closes at noon"]
    floats = await client.embeddings.create(
        model="text-embedding-3-small", input=texts, encoding_format="float"
    )
    vectors = [d.embedding for d in floats.data]
    assert [len(v) for v in vectors] == [1536] * 3
    assert all(math.isclose(_cosine(v, v), 1.0, rel_tol=1e-9) for v in vectors)
    assert _cosine(vectors[0], vectors[1]) > _cosine(vectors[0], vectors[2]) + 0.2
    assert floats.usage.prompt_tokens == standin.counters["embed"]["prompt_tokens"] > 0

    default = await client.embeddings.create(model="text-embedding-3-small", input=texts[0])
    assert standin.requests[-1].json["encoding_format"] == "base64"  # what the library asks for unasked
    assert default.data[0].embedding == pytest.approx(vectors[0], abs=1e-6)
    raw = await client.embeddings.create(
        model="text-embedding-3-small", input=texts[0], encoding_format="base64"
    )
    assert isinstance(raw.data[0].embedding, str)
    assert array.array("f", base64.b64decode(raw.data[0].embedding)).tolist() == pytest.approx(
        vectors[0], abs=1e-6
    )

    short = await client.embeddings.create(
        model="text-embedding-3-small", input=texts, dimensions=256, encoding_format="float"
    )
    assert [len(d.embedding) for d in short.data] == [256] * 3
    assert math.isclose(_cosine(short.data[0].embedding, short.data[0].embedding), 1.0, rel_tol=1e-9)
    with pytest.raises(openai.BadRequestError, match="dimensions"):
        await client.embeddings.create(model="all-minilm", input="x", dimensions=1000)

    widths = {}
    for model in ("nomic-embed-text:latest", "all-minilm", "some-local-model"):
        answer = await client.embeddings.create(model=model, input="hello")
        widths[model] = len(answer.data[0].embedding)
    assert widths == {"nomic-embed-text:latest": 768, "all-minilm": 384, "some-local-model": 768}
    assert [r.kind for r in standin.requests] == ["embed"] * 8


async def test_a_key_is_required_only_when_the_stand_in_has_one(standin: OpenAIStandIn) -> None:
    async with connect(standin, base_url=standin.root_url, api_key="anything") as local:
        models = await local.models.list()  # no key configured: a local server takes any
        assert [m.id for m in models.data] == ["gpt-4o-mini", "text-embedding-3-small"]
        assert standin.requests[-1].path == "/models"  # a base URL without /v1 works too
    standin.api_key = KEY
    async with connect(standin) as right, connect(standin, api_key="sk-wrong-key") as wrong:
        answer = await right.chat.completions.create(model="gpt-4o-mini", messages=said("hi"))
        assert answer.choices[0].message.content == REPLY
        assert standin.requests[-1].headers["Authorization"] == f"Bearer {KEY}"
        with pytest.raises(openai.AuthenticationError) as denied:
            await wrong.embeddings.create(model="text-embedding-3-small", input="hi")
        assert denied.value.status_code == 401 and denied.value.code == "invalid_api_key"
        assert "Incorrect API key provided" in denied.value.message


async def test_faults_reach_the_client_as_openai_errors(
    standin: OpenAIStandIn, client: openai.AsyncOpenAI
) -> None:
    standin.fail_next(429, retry_after=0.05)
    async with connect(standin, max_retries=1) as patient:  # honours Retry-After, then succeeds
        answer = await patient.chat.completions.create(model="gpt-4o-mini", messages=said("hi"))
    assert answer.choices[0].message.content == REPLY and len(standin.of_kind("chat")) == 2
    assert standin.of_kind("chat")[1].headers["x-stainless-retry-count"] == "1"

    standin.fail_next(429, retry_after=3)
    with pytest.raises(openai.RateLimitError) as limited:
        await client.chat.completions.create(model="gpt-4o-mini", messages=said("hi"))
    assert (
        limited.value.response.headers["retry-after"] == "3" and limited.value.code == "rate_limit_exceeded"
    )
    for status in (500, 503):
        standin.fail_next(status, kind="embed")
        with pytest.raises(openai.InternalServerError) as failed:
            await client.embeddings.create(model="text-embedding-3-small", input="hi")
        assert failed.value.status_code == status

    standin.hang_next()
    async with connect(standin, timeout=0.3) as hasty:
        with pytest.raises(openai.APITimeoutError):
            await hasty.chat.completions.create(model="gpt-4o-mini", messages=said("hi"))

    standin.break_next()
    stream = await client.chat.completions.create(model="gpt-4o-mini", messages=said("hi"), stream=True)
    received = ""
    with pytest.raises(openai.APIConnectionError):
        async for chunk in stream:
            received += chunk.choices[0].delta.content or ""
    assert received and REPLY.startswith(received) and received != REPLY
