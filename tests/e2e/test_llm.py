"""The Gemini wrapper driving the real google-genai client against the local REST stand-in."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from pydantic import BaseModel

from bot.config import Settings
from bot.llm.gemini import GeminiClient
from bot.memory.model_ports import (
    ChatTool,
    ChatTurn,
    InlineData,
    ModelCutOff,
    ModelError,
    ModelRefusal,
    Purpose,
    ToolCall,
    ToolResult,
)
from bot.memory.prompts.consolidation import CONSOLIDATION_TASK, ConsolidationResult
from bot.memory.prompts.extraction import EXTRACTION_TASK, ExtractionResult
from bot.memory.prompts.remembering import REMEMBER_RESULT_TASK, RememberResult
from standins.gemini import IMAGE_TOKENS, GeminiStandIn, function_parts, hashed_embedding, inline_parts

API_KEY = "test-key-0123456789abcdef"
DIMS = 64


class Pet(BaseModel):
    name: str
    species: str


class Pets(BaseModel):
    owner: str
    pets: list[Pet]


PETS_JSON = (
    '{"owner": "Alice", "pets": [{"name": "Tom", "species": "cat"}, {"name": "Rex", "species": "dog"}]}'
)


@pytest.fixture
async def standin() -> AsyncIterator[GeminiStandIn]:
    async with GeminiStandIn() as server:
        yield server


def make_client(standin: GeminiStandIn, **overrides: Any) -> GeminiClient:
    options: dict[str, Any] = {
        "api_key": API_KEY,
        "base_url": standin.base_url,
        "chat_model": "chat-model",
        "memory_model": "memory-model",
        "embedding_model": "embed-model",
        "embedding_dimensions": DIMS,
        "timeout_seconds": 5.0,
        "max_retries": 3,
        "backoff_base_seconds": 0.01,
        "backoff_max_seconds": 1.0,  # caps hints at 2 s; jittered backoff stays ~0.01 s
    }
    options.update(overrides)
    return GeminiClient(**options)


@pytest.fixture
async def client(standin: GeminiStandIn) -> AsyncIterator[GeminiClient]:
    gemini = make_client(standin)
    yield gemini
    await gemini.aclose()


async def test_generate_json_round_trip_sends_schema_and_parses(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    standin.generate_handler = lambda body: PETS_JSON

    result = await client.generate_json(
        Purpose.EXTRACT, system="You list pets.", prompt="Alice: I have Tom and Rex", schema=Pets
    )

    assert result == Pets(
        owner="Alice", pets=[Pet(name="Tom", species="cat"), Pet(name="Rex", species="dog")]
    )
    [request] = standin.requests
    assert request.path == "/v1/models/memory-model:generateContent"
    assert request.headers["x-goog-api-key"] == API_KEY
    config = request.json["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert set(config["responseSchema"]["properties"]) == {"owner", "pets"}
    assert config["temperature"] <= 0.3
    assert request.json["systemInstruction"]["parts"][0]["text"] == "You list pets."
    assert request.json["contents"][0]["parts"][0]["text"] == "Alice: I have Tom and Rex"
    assert client.usage.snapshot()["extract"]["calls"] == 1


async def test_json_carries_its_token_limit_and_an_answer_cut_at_it_is_cut_off_not_retried(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    standin.generate_handler = lambda body: PETS_JSON
    assert (
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets, max_output_tokens=64)
    ).owner == "Alice"
    assert standin.requests[-1].json["generationConfig"]["maxOutputTokens"] == 64

    looping = '{"owner": "Alice", "pets": [' + ", ".join(['{"name": "Tom", "species": "cat"}'] * 40) + "]}"
    standin.generate_handler = lambda body: looping  # a model copying the same line until the limit
    standin.requests.clear()
    with pytest.raises(ModelCutOff, match="limit of 64 tokens"):
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets, max_output_tokens=64)
    assert len(standin.requests) == 1  # asked again the same way it would loop the same way


async def test_the_schema_the_model_reads_describes_the_task_not_the_class(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    tasks = {
        ExtractionResult: (EXTRACTION_TASK, '{"facts": []}'),
        ConsolidationResult: (CONSOLIDATION_TASK, '{"decisions": [{"new_fact": 0, "decision": "KEEP"}]}'),
        RememberResult: (REMEMBER_RESULT_TASK, '{"facts": []}'),
    }
    for schema, (task, answer) in tasks.items():
        standin.generate_handler = lambda body, answer=answer: answer
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=schema)
        sent = standin.requests[-1].json["generationConfig"]["responseSchema"]
        assert sent["description"] == task
        assert "answer" not in task.lower() and "schema" not in task.lower()  # a task, not engineering notes


async def test_chat_stream_yields_chunks_that_join_to_the_answer(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    answer = "Tom the cat is doing well, thanks for asking! Rex chased the mailman again this morning."
    standin.generate_handler = lambda body: answer
    standin.stream_chunk_size = 20
    turns = [
        ChatTurn("user", "Alice: how is Tom?"),
        ChatTurn("user", "Bob: and Rex?"),
        ChatTurn("model", "Let me think."),
        ChatTurn("user", "Alice: well?"),
    ]

    deltas = [d async for d in client.chat_stream(system="Be kind.", turns=turns)]

    assert len(deltas) == math.ceil(len(answer) / 20) > 1
    assert "".join(deltas) == answer
    [request] = standin.requests
    assert request.kind == "stream" and request.query == {"alt": "sse"}
    assert request.path == "/v1/models/chat-model:streamGenerateContent"
    roles = [(c["role"], [p["text"] for p in c["parts"]]) for c in request.json["contents"]]
    assert roles == [
        ("user", ["Alice: how is Tom?", "Bob: and Rex?"]),
        ("model", ["Let me think."]),
        ("user", ["Alice: well?"]),
    ]


async def test_attachments_go_as_parts_after_their_text_images_as_inline_data(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    image = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    turns = [
        ChatTurn("user", "Alice: look at my cat", parts=[InlineData("image/png", image)]),
        ChatTurn("user", "Bob: and my notes", parts=["[file notes.md]\nbuy milk"]),
    ]
    assert "".join([d async for d in client.chat_stream(system="s", turns=turns)]) == "OK"
    [request] = standin.requests
    assert inline_parts(request.json) == [("image/png", image)]
    [content] = request.json["contents"]
    kinds = [next(k for k in ("text", "inlineData") if k in p) for p in content["parts"]]
    assert kinds == ["text", "inlineData", "text", "text"]
    assert content["parts"][3]["text"] == "[file notes.md]\nbuy milk"
    # An image costs the prompt tokens Gemini counts for one; the usage reads them from the answer.
    snapshot = client.usage.snapshot()["chat"]
    assert snapshot["prompt_tokens"] == standin.counters["stream"]["prompt_tokens"] > IMAGE_TOKENS


async def test_a_tool_call_comes_with_its_signature_and_the_answer_goes_back_with_it(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    def answer(body: dict[str, Any]) -> Any:
        if function_parts(body, "functionResponse"):
            return "Found it: " + json.dumps(function_parts(body, "functionResponse")[0]["response"])
        return [{"functionCall": {"name": "search_memory", "args": {"person": "Ana", "query": "cats"}}}]

    standin.generate_handler = answer
    tool = ChatTool(
        "search_memory", "look", {"person": "who", "query": "what", "ids": "which"}, frozenset({"ids"})
    )
    turns = [ChatTurn("user", "Bob: what are Ana's cats called?")]
    [call] = [d async for d in client.chat_stream(system="s", turns=turns, tools=[tool])]
    assert isinstance(call, ToolCall) and call.args == {"person": "Ana", "query": "cats"}
    assert call.signature is not None
    [declared] = standin.requests[0].json["tools"][0]["functionDeclarations"]
    assert declared["parameters"]["required"] == ["person", "query"]

    result = ToolResult("search_memory", {"facts": [{"id": 3, "text": "Ana's cat is Miso"}]}, call.id)
    follow = [*turns, ChatTurn("model", "", calls=[call]), ChatTurn("user", "", results=[result])]
    text = "".join([str(d) async for d in client.chat_stream(system="s", turns=follow, tools=[tool])])
    assert text.startswith("Found it:") and "Miso" in text
    [sent_call] = function_parts(standin.requests[-1].json, "functionCall")
    assert sent_call["name"] == "search_memory"

    # Sent back without its signature, the call is refused as Gemini refuses it.
    unsigned = dataclasses.replace(call, signature=None)
    follow[1] = ChatTurn("model", "", calls=[unsigned])
    with pytest.raises(ModelError, match="thought_signature"):
        [d async for d in client.chat_stream(system="s", turns=follow, tools=[tool])]


async def test_embed_250_texts_in_three_batches_of_unit_vectors(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    texts = [f"fact number {i} about cats and dogs" for i in range(250)]

    vectors = await client.embed(texts, "document")

    embeds = standin.of_kind("embed")
    assert [len(r.json["requests"]) for r in embeds] == [100, 100, 50]
    assert all(r.path == "/v1/models/embed-model:batchEmbedContents" for r in embeds)
    assert {req["taskType"] for r in embeds for req in r.json["requests"]} == {"RETRIEVAL_DOCUMENT"}
    assert {req["outputDimensionality"] for r in embeds for req in r.json["requests"]} == {DIMS}
    assert len(vectors) == 250
    assert all(len(v) == DIMS for v in vectors)
    assert all(abs(math.fsum(x * x for x in v) - 1.0) < 1e-9 for v in vectors)
    raw = hashed_embedding(texts[7], "RETRIEVAL_DOCUMENT", DIMS)
    assert abs(math.sqrt(math.fsum(x * x for x in raw)) - 1.0) > 0.5  # so normalising was our job
    norm = math.sqrt(math.fsum(x * x for x in raw))
    assert vectors[7] == pytest.approx([x / norm for x in raw])
    assert client.usage.snapshot()["embed"]["embedded_texts"] == 250

    await client.embed(["where does Alice live?"], "query")
    assert standin.requests[-1].json["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert await client.embed([], "query") == []
    assert len(standin.requests) == 4


async def test_similar_texts_are_closer_than_unrelated_ones(client: GeminiClient) -> None:
    a, b, c = await client.embed(
        ["Alice has a cat named Tom", "Alice's cat Tom is grey", "The train to Berlin leaves at noon"],
        "document",
    )

    def cosine(x: list[float], y: list[float]) -> float:
        return sum(p * q for p, q in zip(x, y, strict=True))

    assert cosine(a, b) > cosine(a, c) + 0.2


async def test_429_with_retry_hint_waits_that_long_then_succeeds(
    standin: GeminiStandIn, client: GeminiClient, caplog: pytest.LogCaptureFixture
) -> None:
    standin.generate_handler = lambda body: PETS_JSON
    standin.fail_next(429, retry_info_delay="0.4s", kind="generate")

    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="bot.llm.gemini"):
        result = await client.generate_json(Purpose.CONSOLIDATE, system="s", prompt="p", schema=Pets)
    elapsed = time.monotonic() - started

    assert result.owner == "Alice"
    assert 0.4 <= elapsed < 1.5  # the hint, not the 0.01 s backoff
    assert len(standin.requests) == 2
    usage = client.usage.snapshot()["consolidate"]
    assert (usage["retries"], usage["errors"], usage["calls"]) == (1, 0, 1)
    [record] = [r for r in caplog.records if "retry" in r.getMessage()]
    assert "consolidate" in record.getMessage() and "429" in record.getMessage()
    assert API_KEY not in caplog.text


async def test_retry_after_header_is_honoured(standin: GeminiStandIn, client: GeminiClient) -> None:
    standin.fail_next(503, retry_after=0.3)

    started = time.monotonic()
    vectors = await client.embed(["hello"], "query")

    assert time.monotonic() - started >= 0.3
    assert len(vectors) == 1
    assert client.usage.snapshot()["embed"]["retries"] == 1


async def test_retry_hint_is_capped(standin: GeminiStandIn) -> None:
    gemini = make_client(standin, backoff_max_seconds=0.1)
    standin.generate_handler = lambda body: PETS_JSON
    standin.fail_next(429, retry_info_delay="30s")
    started = time.monotonic()
    try:
        await gemini.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    finally:
        await gemini.aclose()
    assert time.monotonic() - started < 1.0  # capped at backoff_max_seconds * 2


async def test_500_for_the_whole_budget_gives_up(standin: GeminiStandIn, client: GeminiClient) -> None:
    standin.fail_next(500, count=10)

    with pytest.raises(ModelError) as caught:
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)

    assert len(standin.requests) == client.max_retries + 1 == 4
    error = caught.value
    assert (error.status, error.retryable, error.purpose) == (500, True, Purpose.EXTRACT)
    assert "server error" in str(error) and "4 attempts" in str(error)
    usage = client.usage.snapshot()["extract"]
    assert (usage["errors"], usage["retries"], usage["calls"]) == (1, 3, 0)


async def test_a_hung_request_times_out_and_the_retry_succeeds(standin: GeminiStandIn) -> None:
    gemini = make_client(standin, timeout_seconds=0.5)
    standin.generate_handler = lambda body: PETS_JSON
    standin.hang_next(kind="generate")
    started = time.monotonic()
    try:
        result = await gemini.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    finally:
        await gemini.aclose()

    assert result.owner == "Alice"
    assert 0.45 <= time.monotonic() - started < 2.0
    assert len(standin.requests) == 2
    assert gemini.usage.snapshot()["extract"]["retries"] == 1


async def test_a_hung_stream_times_out_and_is_retried(standin: GeminiStandIn) -> None:
    gemini = make_client(standin, timeout_seconds=0.5)
    standin.generate_handler = lambda body: "fine, thanks"
    standin.hang_next(kind="stream")
    try:
        text = "".join([d async for d in gemini.chat_stream(system="s", turns=[ChatTurn("user", "hi")])])
    finally:
        await gemini.aclose()
    assert text == "fine, thanks"
    assert len(standin.of_kind("stream")) == 2


async def test_a_stall_between_chunks_is_a_timeout(standin: GeminiStandIn) -> None:
    gemini = make_client(standin, timeout_seconds=0.3)
    standin.generate_handler = lambda body: "x" * 100
    standin.stream_chunk_size = 10
    standin.stream_chunk_delay = 1.0
    deltas: list[str] = []
    try:
        with pytest.raises(ModelError) as caught:
            async for delta in gemini.chat_stream(system="s", turns=[ChatTurn("user", "hi")]):
                deltas.append(delta)
    finally:
        await gemini.aclose()
    assert deltas == ["x" * 10]  # not retried: the caller has already shown text
    assert "within 0.3s" in str(caught.value)
    assert len(standin.of_kind("stream")) == 1


async def test_malformed_json_is_retried_then_succeeds(standin: GeminiStandIn, client: GeminiClient) -> None:
    standin.generate_handler = lambda body: PETS_JSON
    standin.malformed_next(count=2)

    result = await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)

    assert result.pets[0].name == "Tom"
    assert len(standin.requests) == 3
    usage = client.usage.snapshot()["extract"]
    assert (usage["calls"], usage["retries"], usage["errors"]) == (3, 2, 0)


async def test_json_of_the_wrong_shape_fails_after_the_budget(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    standin.generate_handler = lambda body: '{"owner": 3}'

    with pytest.raises(ModelError, match="does not fit Pets"):
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    assert len(standin.requests) == 4


async def test_safety_block_raises_refusal_without_retry(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    standin.block_next(count=2)

    with pytest.raises(ModelRefusal, match="SAFETY"):
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    with pytest.raises(ModelRefusal, match="SAFETY"):
        async for _ in client.chat_stream(system="s", turns=[ChatTurn("user", "something awful")]):
            pytest.fail("a blocked stream must not yield text")

    assert [r.kind for r in standin.requests] == ["generate", "stream"]
    usage = client.usage.snapshot()
    assert usage["extract"]["errors"] == usage["chat"]["errors"] == 1
    assert usage["extract"]["retries"] == usage["chat"]["retries"] == 0


@pytest.mark.parametrize(
    ("status", "words"),
    [(400, "rejected the extract request"), (403, "rejected the API key"), (404, "memory-model")],
)
async def test_client_errors_are_not_retried(
    standin: GeminiStandIn, client: GeminiClient, status: int, words: str
) -> None:
    standin.fail_next(status, count=5)

    with pytest.raises(ModelError) as caught:
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)

    assert len(standin.requests) == 1
    assert (caught.value.status, caught.value.retryable) == (status, False)
    assert words in str(caught.value)
    assert API_KEY not in str(caught.value)
    assert client.usage.snapshot()["extract"]["errors"] == 1


async def test_a_wrong_api_key_is_named_as_such(standin: GeminiStandIn) -> None:
    standin.api_key = "the-right-key"
    gemini = make_client(standin, api_key="a-wrong-key-123456")
    try:
        with pytest.raises(ModelError, match="rejected the API key") as caught:
            await gemini.embed(["x"], "query")
    finally:
        await gemini.aclose()
    assert caught.value.status == 400 and "a-wrong-key-123456" not in str(caught.value)


async def test_usage_tokens_match_what_the_server_counted(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    standin.generate_handler = lambda body: PETS_JSON
    await client.generate_json(
        Purpose.EXTRACT, system="Find pets in this text.", prompt="Alice has Tom", schema=Pets
    )
    await client.generate_json(
        Purpose.CONSOLIDATE, system="Decide.", prompt="a longer prompt " * 20, schema=Pets
    )
    standin.generate_handler = lambda body: "A streamed answer that is long enough to need several chunks."
    assert "".join([d async for d in client.chat_stream(system="Chat.", turns=[ChatTurn("user", "hello")])])
    await client.embed(["one text", "another, longer text"], "document")

    usage = client.usage.snapshot()
    generate, stream, embed = (
        standin.counters["generate"],
        standin.counters["stream"],
        standin.counters["embed"],
    )
    assert (
        usage["extract"]["prompt_tokens"] + usage["consolidate"]["prompt_tokens"] == generate["prompt_tokens"]
    )
    assert (
        usage["extract"]["output_tokens"] + usage["consolidate"]["output_tokens"] == generate["output_tokens"]
    )
    assert usage["consolidate"]["prompt_tokens"] > usage["extract"]["prompt_tokens"] > 0
    assert (usage["chat"]["prompt_tokens"], usage["chat"]["output_tokens"]) == (
        stream["prompt_tokens"],
        stream["output_tokens"],
    )
    assert stream["output_tokens"] > 0
    assert usage["embed"]["prompt_tokens"] == embed["prompt_tokens"] > 0
    assert usage["embed"]["embedded_texts"] == embed["texts"] == 2
    assert {k: usage[k]["calls"] for k in usage} == {"extract": 1, "consolidate": 1, "embed": 1, "chat": 1}


async def test_wrong_embedding_dimension_is_an_error(standin: GeminiStandIn, client: GeminiClient) -> None:
    standin.embed_handler = lambda text, task, dims: [1.0, 2.0, 3.0]

    with pytest.raises(ModelError, match="3-dimensional"):
        await client.embed(["x"], "document")


async def test_a_longer_embedding_is_truncated_then_normalised(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    dims = client.embedding_dimensions
    standin.embed_handler = lambda text, task, _dims: [3.0, 4.0] + [0.0] * (dims - 2) + [100.0] * 50
    [vector] = await client.embed(["x"], "document")
    assert len(vector) == dims and vector[:2] == pytest.approx([0.6, 0.8])


async def test_unreachable_server_is_a_retryable_error(standin: GeminiStandIn) -> None:
    await standin.stop()
    gemini = make_client(standin, max_retries=1)
    try:
        with pytest.raises(ModelError, match="could not reach") as caught:
            await gemini.embed(["x"], "query")
    finally:
        await gemini.aclose()
    assert caught.value.retryable
    assert gemini.usage.snapshot()["embed"]["retries"] == 1


async def test_standin_serves_v1beta_and_guards_the_key(standin: GeminiStandIn) -> None:
    standin.generate_handler = lambda body: "pong"
    body = {"contents": [{"role": "user", "parts": [{"text": "ping"}]}]}
    async with aiohttp.ClientSession() as http:
        url = f"{standin.base_url}/v1beta/models/some-model:generateContent"
        async with http.post(url, json=body, headers={"x-goog-api-key": API_KEY}) as response:
            assert response.status == 200
            answer = await response.json()
        async with http.post(url, json=body) as response:
            assert response.status == 403
            assert (await response.json())["error"]["status"] == "PERMISSION_DENIED"
        async with http.post(f"{standin.base_url}/v1beta/nothing/here", json={}) as response:
            assert response.status == 404
    assert answer["candidates"][0]["content"]["parts"][0]["text"] == "pong"
    assert answer["usageMetadata"] == {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
    assert [(r.path, r.kind, r.model) for r in standin.requests] == [
        ("/v1beta/models/some-model:generateContent", "generate", "some-model"),
        ("/v1beta/models/some-model:generateContent", "generate", "some-model"),
        ("/v1beta/nothing/here", None, None),
    ]


async def test_error_bodies_have_the_real_shape(standin: GeminiStandIn) -> None:
    standin.fail_next(429, retry_info_delay="2s", retry_after=2)
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{standin.base_url}/v1/models/m:batchEmbedContents",
            data=json.dumps({"requests": [{"content": {"parts": [{"text": "x"}]}}]}),
            headers={"x-goog-api-key": API_KEY},
        ) as response,
    ):
        assert response.status == 429
        assert response.headers["Retry-After"] == "2"
        error = (await response.json())["error"]
    assert error["code"] == 429 and error["status"] == "RESOURCE_EXHAUSTED"
    assert error["details"] == [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}]


def test_from_settings_and_repr_hide_the_key() -> None:
    settings = Settings(
        gemini_api_key="secret-key-abcdef123456",
        gemini_base_url="http://127.0.0.1:1",
        embedding_dimensions=32,
    )
    gemini = GeminiClient.from_settings(settings)
    assert gemini.embedding_dimensions == 32
    assert gemini.memory_model == settings.gemini_memory_model
    assert gemini.max_retries == settings.gemini_max_retries
    assert "secret" not in repr(gemini)


def test_a_missing_key_is_reported_clearly() -> None:
    with pytest.raises(ModelError, match="GEMINI_API_KEY is not set"):
        GeminiClient(
            api_key=" ", chat_model="c", memory_model="m", embedding_model="e", embedding_dimensions=8
        )


async def test_a_reader_may_stop_early(standin: GeminiStandIn, client: GeminiClient) -> None:
    standin.generate_handler = lambda body: "abcdefghij" * 10
    standin.stream_chunk_size = 10
    async with contextlib.aclosing(client.chat_stream(system="s", turns=[ChatTurn("user", "hi")])) as stream:
        async for delta in stream:
            assert delta == "abcdefghij"
            break
    usage = client.usage.snapshot()["chat"]
    assert (usage["calls"], usage["errors"]) == (1, 0)
    assert usage["output_tokens"] > 0


async def test_answers_valid_for_gemini_but_loose_in_details_are_read(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    """Numbers for ids, nulls for empty values, other decision words and field names, a fence after a
    sentence."""
    standin.generate_handler = lambda body: (
        "Here is the JSON you asked for:\n```json\n"
        + json.dumps(
            {
                "facts": [
                    {"user_id": 222, "text": "Bob keeps two cats", "source_message_ids": [111]},
                    {"user_id": "222", "text": None},  # unusable: dropped, the rest stays
                    {"user_id": "333", "text": "Carol rows", "source_message_ids": None, "extra": 1},
                ]
            }
        )
        + "\n```\nLet me know!"
    )
    extracted = await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=ExtractionResult)
    assert [(f.speaker, f.text, f.sources) for f in extracted.facts] == [
        ("222", "Bob keeps two cats", ["111"]),
        ("333", "Carol rows", []),
    ]

    standin.generate_handler = lambda body: json.dumps(
        {
            "decisions": [
                {"new_fact": 0, "decision": "invalidate", "target_fact_id": "fact-12", "reason": None},
                {"new_fact": "1", "decision": " Merge ", "target_fact_id": 7, "merged_text": "x"},
                {"new_fact": 2, "decision": "UPDATE"},  # merge or replace? unreadable: dropped, never a KEEP
                {"new_fact": 2, "action": "add"},  # another field name, another word for KEEP
                {"new_fact": None, "decision": "KEEP"},
            ]
        }
    )
    decided = await client.generate_json(
        Purpose.CONSOLIDATE, system="s", prompt="p", schema=ConsolidationResult
    )
    assert [(d.new_fact, d.decision, d.target_fact_id) for d in decided.decisions] == [
        (0, "INVALIDATE", 12),
        (1, "MERGE", 7),
        (2, "KEEP", None),
    ]
    assert len(standin.requests) == 2  # read at the first try


@contextlib.asynccontextmanager
async def client_of(
    standin: GeminiStandIn, answer: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> AsyncIterator[GeminiClient]:
    """A client of an endpoint that answers every request with `answer` (what another server might send)."""
    app = web.Application()
    app.router.add_post("/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    gemini = make_client(standin, base_url=f"http://127.0.0.1:{port}", max_retries=1)
    try:
        yield gemini
    finally:
        await gemini.aclose()
        await runner.cleanup()


async def test_a_body_that_is_not_json_is_a_gemini_error_not_a_crash(standin: GeminiStandIn) -> None:
    async def html_page(request: web.Request) -> web.Response:
        return web.Response(text="<html>down for maintenance</html>", content_type="text/html")

    async with client_of(standin, html_page) as gemini:
        with pytest.raises(ModelError) as raised:
            await gemini.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
        assert raised.value.retryable and "unreadable answer" in str(raised.value)
        with pytest.raises(ModelError):
            await gemini.embed(["hello"], "query")


async def test_an_answer_without_candidates_or_block_reason_is_an_error_to_retry_not_a_refusal(
    standin: GeminiStandIn,
) -> None:
    async def empty(request: web.Request) -> web.Response:
        return web.json_response({"candidates": [], "usageMetadata": {"promptTokenCount": 3}})

    async with client_of(standin, empty) as gemini:
        with pytest.raises(ModelError) as raised:
            await gemini.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
        assert not isinstance(raised.value, ModelRefusal) and raised.value.retryable
        assert gemini.usage.snapshot()["extract"]["retries"] == 1


async def test_a_bare_list_and_mention_shaped_ids_are_read_and_a_zero_embedding_is_refused(
    standin: GeminiStandIn, client: GeminiClient
) -> None:
    standin.generate_handler = lambda body: json.dumps(
        [{"user_id": "<@222>", "text": "Bob keeps bees", "source_message_ids": ["1"]}]
    )
    result = await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=ExtractionResult)
    assert [(f.speaker, f.text) for f in result.facts] == [("222", "Bob keeps bees")]
    assert len(standin.requests) == 1

    standin.embed_handler = lambda text, task, dims: [0.0] * (dims or DIMS)
    with pytest.raises(ModelError, match="not a direction"):
        await client.embed(["hello"], "query")


async def test_a_stream_that_breaks_midway_says_it_broke_not_that_gemini_was_out_of_reach(
    standin: GeminiStandIn,
) -> None:
    async def half_an_answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunk = {"candidates": [{"content": {"parts": [{"text": "Hello, "}], "role": "model"}, "index": 0}]}
        await response.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
        assert request.transport is not None
        request.transport.close()  # the connection drops mid-answer
        return response

    async with client_of(standin, half_an_answer) as gemini:
        received = []
        with pytest.raises(ModelError) as raised:
            async for delta in gemini.chat_stream(system="s", turns=[ChatTurn("user", "hi")]):
                received.append(delta)
        assert received == ["Hello, "]
        assert "stream broke off midway" in str(raised.value)
        assert "could not reach" not in str(raised.value)
