"""The OpenAI-compatible adapter driving the real `openai` client against a small in-process endpoint
that can act like the endpoints people run: one that refuses tools, images or response_format, one that
ignores response_format, one that is busy or rejects the key."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from pydantic import BaseModel

from bot.app import open_models, open_store, probe_models, provider_name
from bot.config import ConfigError, Settings, load_settings
from bot.llm.openai_compat import OpenAICompatClient, endpoint_name
from bot.llm.openai_compat import features as features_module
from bot.llm.openai_compat.features import IGNORED_EVIDENCE
from bot.llm.openai_compat.messages import NO_IMAGE, NO_TOOLS
from bot.memory.model_ports import (
    ChatTool,
    ChatTurn,
    InlineData,
    ModelBadAnswer,
    ModelCutOff,
    ModelError,
    ModelKeyRejected,
    ModelRefusal,
    Purpose,
    ToolCall,
    ToolResult,
)
from bot.memory.prompts.remembering import RememberResult
from bot.storage.errors import EmbeddingMismatchError
from standins.openai import OpenAIStandIn
from tests.conftest import make_settings

API_KEY = "sk-test-0123456789abcdef"
DIMS = 8
TOOL = ChatTool(
    "search_memory", "look", {"person": "who", "query": "what", "ids": "which"}, frozenset({"ids"})
)


class Pets(BaseModel):
    owner: str
    pets: list[str]


@dataclass
class Endpoint:
    """An OpenAI-compatible API in a few lines: records requests, answers with `answer(body)`."""

    answer: Callable[[dict[str, Any]], Any] = lambda body: "OK"
    refuses: set[str] = field(default_factory=set)  # "tools", "images", "json_schema", "json_object"
    ignores_format: bool = False
    dims: int = DIMS
    honours_dimensions: bool = True
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    finish: str = "stop"
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""

    def _refusal(self, body: dict[str, Any]) -> web.Response | None:
        if self.failures:
            status, headers = self.failures.pop(0)
            return web.json_response({"error": {"message": "busy"}}, status=status, headers=headers)
        messages = json.dumps(body.get("messages", []))
        kind = (body.get("response_format") or {}).get("type")
        if "tools" in body and "tools" in self.refuses:
            return _bad("tools are not supported by this model")
        if "image_url" in messages and "images" in self.refuses:
            return _bad("image input is not supported")
        if kind in self.refuses:
            return _bad(f"response_format type {kind} is not supported")
        return None

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return web.json_response({"error": {"message": "Incorrect API key provided"}}, status=401)
        refused = self._refusal(body)
        if refused is not None:
            return refused
        answer = self.answer(body)
        if body.get("response_format") and not self.ignores_format and not isinstance(answer, list):
            answer = str(answer)
        usage = {"prompt_tokens": len(json.dumps(body["messages"])) // 4, "completion_tokens": 7}
        if not body.get("stream"):
            message = {"role": "assistant", "content": answer}
            return web.json_response(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "usage": usage,
                    "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if isinstance(answer, list):  # tool calls, sent in pieces as OpenAI does
            deltas = []
            for i, (name, args) in enumerate(answer):
                text = json.dumps(args)
                deltas.append(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": f"call_{i}",
                                "type": "function",
                                "function": {"name": name, "arguments": text[:5]},
                            }
                        ]
                    }
                )
                deltas.append({"tool_calls": [{"index": i, "function": {"arguments": text[5:]}}]})
            finish = "tool_calls"
        else:
            deltas = [{"content": str(answer)[i : i + 10]} for i in range(0, len(str(answer)), 10)]
            finish = self.finish
        for n, delta in enumerate(deltas):
            last = n == len(deltas) - 1
            chunk = {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish if last else None}],
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        if (body.get("stream_options") or {}).get("include_usage"):
            chunk = {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body["model"],
                "choices": [],
                "usage": usage,
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response

    async def embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        if self.failures:
            status, headers = self.failures.pop(0)
            return web.json_response({"error": {"message": "busy"}}, status=status, headers=headers)
        size = body.get("dimensions", self.dims) if self.honours_dimensions else self.dims
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float((hash(t) >> k) % 7 + 1) for k in range(size)],
            }
            for i, t in enumerate(body["input"])
        ]
        data.reverse()  # an endpoint may answer out of order: the index says which is which
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            }
        )


def _bad(message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=400)


@pytest.fixture
async def endpoint() -> AsyncIterator[Endpoint]:
    server = Endpoint()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.chat)
    app.router.add_post("/v1/embeddings", server.embeddings)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.base_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"  # type: ignore[union-attr]
    yield server
    await runner.cleanup()


def make_client(endpoint: Endpoint, **overrides: Any) -> OpenAICompatClient:
    options: dict[str, Any] = {
        "api_key": API_KEY,
        "base_url": endpoint.base_url,
        "chat_model": "chat-model",
        "memory_model": "memory-model",
        "embedding_model": "embed-model",
        "embedding_dimensions": DIMS,
        "timeout_seconds": 5.0,
        "max_retries": 2,
        "backoff_base_seconds": 0.01,
        "backoff_max_seconds": 1.0,
    }
    options.update(overrides)
    return OpenAICompatClient(**options)


@pytest.fixture
async def client(endpoint: Endpoint) -> AsyncIterator[OpenAICompatClient]:
    model = make_client(endpoint)
    yield model
    await model.aclose()


async def test_json_asks_for_the_schema_and_counts_tokens(
    endpoint: Endpoint, client: OpenAICompatClient
) -> None:
    endpoint.answer = lambda body: '{"owner": "Alice", "pets": ["Tom"]}'
    result = await client.generate_json(
        Purpose.EXTRACT, system="List pets.", prompt="Alice: Tom", schema=Pets
    )
    assert result == Pets(owner="Alice", pets=["Tom"])
    [body] = endpoint.requests
    assert body["model"] == "memory-model" and body["temperature"] <= 0.3
    assert body["response_format"]["type"] == "json_schema"
    assert set(body["response_format"]["json_schema"]["schema"]["properties"]) == {"owner", "pets"}
    assert body["messages"] == [
        {"role": "system", "content": "List pets."},
        {"role": "user", "content": "Alice: Tom"},
    ]
    usage = client.usage.snapshot()["extract"]
    assert usage["calls"] == 1 and usage["prompt_tokens"] > 0 and usage["output_tokens"] == 7


async def test_json_carries_its_token_limit_and_an_answer_cut_at_it_is_cut_off_not_retried(
    endpoint: Endpoint, client: OpenAICompatClient
) -> None:
    endpoint.answer = lambda body: '{"owner": "Ana", "pets": ["Tom"]}'
    assert (
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets, max_output_tokens=64)
    ).pets == ["Tom"]
    assert endpoint.requests[-1]["max_tokens"] == 64 and "max_completion_tokens" not in endpoint.requests[-1]

    endpoint.finish = "length"  # valid JSON, but cut at the limit: possibly a partial list
    endpoint.requests.clear()
    with pytest.raises(ModelCutOff):
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets, max_output_tokens=64)
    assert len(endpoint.requests) == 1  # asked again the same way it would loop the same way

    openai_api = make_client(endpoint)
    openai_api.provider = "OpenAI"  # OpenAI's own API: its reasoning models refuse max_tokens
    with pytest.raises(ModelCutOff):
        await openai_api.generate_json(
            Purpose.EXTRACT, system="s", prompt="p", schema=Pets, max_output_tokens=64
        )
    assert endpoint.requests[-1]["max_completion_tokens"] == 64 and "max_tokens" not in endpoint.requests[-1]
    await openai_api.aclose()


async def test_json_steps_down_to_json_mode_then_to_the_schema_in_the_instruction(
    endpoint: Endpoint, client: OpenAICompatClient, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint.refuses = {"json_schema", "json_object"}
    endpoint.answer = lambda body: '{"owner": "Ana", "pets": []}'
    with caplog.at_level(logging.WARNING):
        assert (
            await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
        ).owner == "Ana"
    formats = [r.get("response_format") or {} for r in endpoint.requests]
    assert [(f.get("type"), "schema" in f) for f in formats] == [
        ("json_schema", False),
        ("json_object", True),  # JSON mode with the schema, which llama-cpp-python makes a grammar of
        ("json_object", False),
        (None, False),
    ]
    assert "JSON Schema" not in endpoint.requests[1]["messages"][0]["content"]
    assert "JSON Schema" in endpoint.requests[-1]["messages"][0]["content"]
    assert client.features.json_mode == "prompt"
    assert sum("refuses response_format" in r.getMessage() for r in caplog.records) == 3
    endpoint.requests.clear()
    await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    assert len(endpoint.requests) == 1  # remembered: no more refused requests


async def test_an_endpoint_ignoring_the_schema_beside_json_mode_gets_it_in_the_instruction(
    endpoint: Endpoint, client: OpenAICompatClient
) -> None:
    """An endpoint may take `schema` beside JSON mode and ignore it: answers off the schema (here a wrong
    type, not a missing field), IGNORED_EVIDENCE in a row, put the schema in the instruction from then on."""
    endpoint.refuses = {"json_schema"}
    wrong, right = '{"owner": "Ana", "pets": "Miso"}', '{"owner": "Ana", "pets": ["Miso"]}'
    answers = iter([wrong, right] * IGNORED_EVIDENCE)  # each wrong answer, then its repair
    endpoint.answer = lambda body: next(answers, right)
    for n in range(IGNORED_EVIDENCE):
        assert (await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)).pets == [
            "Miso"
        ]
        assert client.features.schema_in_prompt == (
            n == IGNORED_EVIDENCE - 1
        )  # one odd answer is no evidence
    await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    asked = [r for r in endpoint.requests if (r.get("response_format") or {}).get("type") == "json_object"]
    assert "JSON Schema" not in asked[0]["messages"][0]["content"]
    assert "JSON Schema" in asked[-1]["messages"][0]["content"]


async def test_a_streamed_json_answer_that_ends_before_finishing_is_asked_again(
    endpoint: Endpoint, client: OpenAICompatClient
) -> None:
    """A JSON answer read as it comes whose stream closes without a finish reason (a proxy closing
    early) is no answer to judge: asked again, never read as what it held so far."""
    endpoint.finish = None  # type: ignore[assignment]
    calls: list[int] = []

    def answer(body: dict[str, Any]) -> str:
        calls.append(1)
        if len(calls) == 2:
            endpoint.finish = "stop"
        return '{"owner": "Ana", "pets": ["Miso"]}'

    endpoint.answer = answer
    result = await client.generate_json(
        Purpose.EXTRACT, system="s", prompt="p", schema=Pets, stop_early=lambda partial: None
    )
    assert result.pets == ["Miso"] and len(calls) == 2
    assert all(r.get("stream") for r in endpoint.requests)


async def test_an_answer_off_the_schema_gets_one_repair_with_the_error(
    endpoint: Endpoint, client: OpenAICompatClient
) -> None:
    answers = iter(['{"owner": "Ana"}', '{"owner": "Ana", "pets": ["Miso"]}'])
    endpoint.answer = lambda body: next(answers)
    result = await client.generate_json(Purpose.CONSOLIDATE, system="s", prompt="p", schema=Pets)
    assert result.pets == ["Miso"]
    first, repair = endpoint.requests
    assert repair["messages"][:2] == first["messages"]
    assert repair["messages"][2] == {"role": "assistant", "content": '{"owner": "Ana"}'}
    assert "pets" in repair["messages"][3]["content"] and "JSON Schema" in repair["messages"][3]["content"]

    endpoint.answer = lambda body: '{"owner": "Ana"}'
    endpoint.requests.clear()
    quick = make_client(endpoint, max_retries=0)
    with pytest.raises(ModelBadAnswer):
        await quick.generate_json(Purpose.CONSOLIDATE, system="s", prompt="p", schema=Pets)
    assert len(endpoint.requests) == 2  # the answer and its one repair
    await quick.aclose()


async def test_an_endpoint_ignoring_response_format_gets_the_schema_in_the_instruction_then_is_tried_again(
    endpoint: Endpoint, client: OpenAICompatClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint.answer = lambda body: (
        '{"owner": "Bo", "pets": []}' if "JSON Schema" in json.dumps(body["messages"]) else "Bo has no pets."
    )
    for _ in range(IGNORED_EVIDENCE):
        assert (
            await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
        ).owner == "Bo"
    assert client.features.schema_in_prompt
    endpoint.requests.clear()
    await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    assert len(endpoint.requests) == 1 and "JSON Schema" in endpoint.requests[0]["messages"][0]["content"]
    # The endpoint is fixed (a new server under the same URL): after STEP_UP_AFTER answers, response_format
    # alone is tried again, and kept while it is followed.
    monkeypatch.setattr(features_module, "STEP_UP_AFTER", 2)
    endpoint.answer = lambda body: '{"owner": "Bo", "pets": []}'
    await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    assert not client.features.schema_in_prompt
    endpoint.requests.clear()
    await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    assert "JSON Schema" not in endpoint.requests[0]["messages"][0]["content"]
    assert not client.features.schema_in_prompt


async def test_chat_streams_text_with_usage_and_joins_turns(
    endpoint: Endpoint, client: OpenAICompatClient
) -> None:
    answer = "Tom the cat is well; Rex chased the mailman."
    endpoint.answer = lambda body: answer
    turns = [
        ChatTurn("user", "Alice: how is Tom?"),
        ChatTurn("user", "Bob: and Rex?"),
        ChatTurn("model", "Hm."),
        ChatTurn("user", "Alice: well?"),
    ]
    deltas = [d async for d in client.chat_stream(system="Be kind.", turns=turns)]
    assert len(deltas) == math.ceil(len(answer) / 10) and "".join(map(str, deltas)) == answer
    [body] = endpoint.requests
    assert body["stream"] and body["stream_options"] == {"include_usage": True} and "tools" not in body
    assert body["messages"] == [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Alice: how is Tom?\nBob: and Rex?"},
        {"role": "assistant", "content": "Hm."},
        {"role": "user", "content": "Alice: well?"},
    ]
    usage = client.usage.snapshot()["chat"]
    assert (usage["calls"], usage["output_tokens"]) == (1, 7) and usage["prompt_tokens"] > 0


async def test_images_go_as_data_urls_until_the_endpoint_refuses_them(
    endpoint: Endpoint, client: OpenAICompatClient, caplog: pytest.LogCaptureFixture
) -> None:
    image = b"\x89PNG\r\n\x1a\n" + bytes(range(16))
    turns = [ChatTurn("user", "Alice: my cat", parts=[InlineData("image/png", image), "[file a.md]\nhi"])]
    assert "".join(map(str, [d async for d in client.chat_stream(system="s", turns=turns)])) == "OK"
    content = endpoint.requests[0]["messages"][1]["content"]
    assert [p["type"] for p in content] == ["text", "image_url", "text"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")

    endpoint.refuses = {"images"}
    endpoint.requests.clear()
    with caplog.at_level(logging.WARNING):
        assert "".join(map(str, [d async for d in client.chat_stream(system="s", turns=turns)])) == "OK"
        assert "".join(map(str, [d async for d in client.chat_stream(system="s", turns=turns)])) == "OK"
    assert len(endpoint.requests) == 3  # refused once, then sent without images (twice)
    assert endpoint.requests[-1]["messages"][1]["content"] == f"Alice: my cat\n{NO_IMAGE}\n[file a.md]\nhi"
    assert sum("refuses images" in r.getMessage() for r in caplog.records) == 1
    assert client.usage.snapshot()["chat"]["errors"] == 0


async def test_a_tool_call_and_its_result_go_back_in_the_openai_format(
    endpoint: Endpoint, client: OpenAICompatClient
) -> None:
    def answer(body: dict[str, Any]) -> Any:
        tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
        if tool_messages:
            return "Found it: " + tool_messages[0]["content"]
        return [("search_memory", {"person": "Ana", "query": "cats"})]

    endpoint.answer = answer
    turns = [ChatTurn("user", "Bob: what are Ana's cats called?")]
    [call] = [d async for d in client.chat_stream(system="s", turns=turns, tools=[TOOL])]
    assert (
        isinstance(call, ToolCall) and call.args == {"person": "Ana", "query": "cats"} and call.id == "call_0"
    )
    [declared] = endpoint.requests[0]["tools"]
    assert declared["type"] == "function" and declared["function"]["name"] == "search_memory"
    assert declared["function"]["parameters"]["required"] == ["person", "query"]

    result = ToolResult("search_memory", {"facts": [{"id": 3, "text": "Ana's cat is Miso"}]}, call.id)
    follow = [*turns, ChatTurn("model", "", calls=[call]), ChatTurn("user", "", results=[result])]
    text = "".join(map(str, [d async for d in client.chat_stream(system="s", turns=follow, tools=[TOOL])]))
    assert text.startswith("Found it:") and "Miso" in text
    messages = endpoint.requests[-1]["messages"]
    assert messages[2]["role"] == "assistant" and messages[2]["tool_calls"][0]["id"] == "call_0"
    assert json.loads(messages[2]["tool_calls"][0]["function"]["arguments"]) == {
        "person": "Ana",
        "query": "cats",
    }
    assert messages[3]["role"] == "tool" and messages[3]["tool_call_id"] == "call_0"


async def test_an_endpoint_without_tools_gets_the_chat_without_them(
    endpoint: Endpoint, client: OpenAICompatClient
) -> None:
    endpoint.refuses = {"tools"}
    turns = [ChatTurn("user", "Bob: remember that I like tea")]
    assert (
        "".join(map(str, [d async for d in client.chat_stream(system="s", turns=turns, tools=[TOOL])]))
        == "OK"
    )
    assert ["tools" in r for r in endpoint.requests] == [True, False]
    assert not client.features.tools
    assert endpoint.requests[1]["messages"][0]["content"] == f"s\n\n{NO_TOOLS}"  # never claims a tool's work
    assert (
        "".join(map(str, [d async for d in client.chat_stream(system="s", turns=turns, tools=[TOOL])]))
        == "OK"
    )
    assert len(endpoint.requests) == 3

    off = make_client(endpoint, tools=False, images=False)
    endpoint.requests.clear()
    endpoint.refuses = set()
    assert [d async for d in off.chat_stream(system="s", turns=turns, tools=[TOOL])] == ["OK"]
    assert "tools" not in endpoint.requests[0] and off.switched_off == {"tools", "images"}
    await off.aclose()


async def test_a_content_filter_is_a_refusal_not_retried(
    endpoint: Endpoint, client: OpenAICompatClient
) -> None:
    endpoint.finish = "content_filter"
    with pytest.raises(ModelRefusal):
        [d async for d in client.chat_stream(system="s", turns=[ChatTurn("user", "x")])]
    with pytest.raises(ModelRefusal):
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    assert len(endpoint.requests) == 2


async def test_busy_is_retried_with_the_hint_and_a_rejected_key_is_named(endpoint: Endpoint) -> None:
    client = make_client(endpoint)
    endpoint.failures = [(429, {"retry-after-ms": "300"}), (503, {"Retry-After": "0"})]
    started = time.monotonic()
    assert await client.embed(["hello"], "query")
    assert time.monotonic() - started >= 0.3
    assert client.usage.snapshot()["embed"]["retries"] == 2

    endpoint.failures = [(500, {})] * 3
    with pytest.raises(ModelError, match="server error") as raised:
        await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
    assert raised.value.retryable and raised.value.status == 500
    await client.aclose()

    wrong = make_client(endpoint, api_key="sk-wrong-key-999999")
    with pytest.raises(ModelKeyRejected, match="rejected the API key") as rejected:
        [d async for d in wrong.chat_stream(system="s", turns=[ChatTurn("user", "x")])]
    assert "sk-wrong-key-999999" not in str(rejected.value) and len(endpoint.requests) == 7
    await wrong.aclose()


async def test_an_unreachable_endpoint_is_a_retryable_error() -> None:
    client = make_client(Endpoint(base_url="http://127.0.0.1:9/v1"), max_retries=0)
    with pytest.raises(ModelError, match=r"could not reach http://127\.0\.0\.1:9/v1") as raised:
        await client.embed(["x"], "query")
    assert raised.value.retryable
    await client.aclose()


async def test_embeddings_at_the_models_own_size_dimensions_only_when_fewer(endpoint: Endpoint) -> None:
    client = make_client(endpoint)
    vectors = await client.embed([f"text {i}" for i in range(150)], "document")
    assert len(vectors) == 150 and all(abs(math.fsum(x * x for x in v) - 1) < 1e-9 for v in vectors)
    assert [len(r["input"]) for r in endpoint.requests] == [100, 50]
    assert all("dimensions" not in r and r["encoding_format"] == "float" for r in endpoint.requests)
    assert client.usage.snapshot()["embed"]["embedded_texts"] == 150
    first = await client.embed(["text 0"], "query")
    assert first == [vectors[0]]  # in the order asked, whatever order the endpoint answers in

    endpoint.dims = 32  # a larger model: asked once for fewer, then always
    endpoint.requests.clear()
    assert len((await client.embed(["a"], "query"))[0]) == DIMS
    assert ["dimensions" in r for r in endpoint.requests] == [False, True]
    await client.embed(["b"], "query")
    assert endpoint.requests[-1]["dimensions"] == DIMS and len(endpoint.requests) == 3

    endpoint.honours_dimensions = False
    with pytest.raises(ModelError, match="ignores `dimensions`"):
        await client.embed(["c"], "query")
    await client.aclose()

    small = make_client(endpoint, embedding_dimensions=64)
    with pytest.raises(ModelError, match="set EMBEDDING_DIMENSIONS=32"):
        await small.embed(["d"], "query")
    await small.aclose()


def test_settings_choose_providers_and_name_bad_values() -> None:
    settings = load_settings({"MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"})
    assert (settings.chat_model_name, settings.embedding_model) == ("gpt-4o-mini", "text-embedding-3-small")
    assert settings.embedding_identity == "openai:text-embedding-3-small"
    assert settings.missing("model_key") == []  # a local endpoint needs no key
    assert (
        load_settings({"MODEL_PROVIDER": "openai"})
        .missing("model_key")[0]
        .startswith("OPENAI_API_KEY is not set")
    )
    mixed = load_settings(
        {"MODEL_PROVIDER": "openai", "EMBEDDING_PROVIDER": "gemini", "CHAT_MODEL": "llama3"}
    )
    assert (mixed.chat_model_name, mixed.embedding_identity) == ("llama3", "gemini-embedding-001")
    assert mixed.missing("model_key")[0].startswith("GEMINI_API_KEY is not set")
    gemini = load_settings({"GEMINI_CHAT_MODEL": "g-chat"})
    assert (gemini.chat_model_name, gemini.embedding_identity) == ("g-chat", "gemini-embedding-001")
    with pytest.raises(ConfigError) as raised:
        load_settings({"MODEL_PROVIDER": "claude", "OPENAI_JSON": "yaml", "OPENAI_TOOLS": "maybe"})
    assert [p.split("=")[0] for p in raised.value.problems] == [
        "MODEL_PROVIDER",
        "OPENAI_TOOLS",
        "OPENAI_JSON",
    ]
    assert "OPENAI_API_KEY" in str(Settings(openai_api_key="sk-secret-123456789").masked())
    assert "sk-secret-123456789" not in str(Settings(openai_api_key="sk-secret-123456789").masked())
    assert endpoint_name("") == "OpenAI" and endpoint_name("https://openrouter.ai/api/v1") == "openrouter.ai"


async def test_check_online_names_what_the_endpoint_takes(endpoint: Endpoint) -> None:
    endpoint.refuses = {"images", "json_schema"}
    endpoint.answer = lambda body: (
        '{"facts": [{"text": "Ana likes tea"}]}' if body.get("response_format") else "OK"
    )
    settings = Settings(
        model_provider="openai",
        openai_api_key=API_KEY,
        openai_base_url=endpoint.base_url,
        embedding_model="embed-model",
        embedding_dimensions=DIMS,
        extraction_mode="enumerate",  # no line selection to judge
        model_concurrency=2,
    )
    verdicts = await probe_models(settings)
    [(name, verdict)] = verdicts.items()
    assert name == endpoint_name(endpoint.base_url) and verdict["ok"], verdict
    assert verdict["detail"] == (
        f"embed-model answered at {DIMS} dimensions; gpt-4o-mini answered; tools: yes, "
        "images: no (the endpoint refuses them), JSON: JSON mode with the schema; calls at once: 2, replies "
        "first (MODEL_CONCURRENCY)"
    )
    models = open_models(settings)
    assert models.chat is models.embedder and isinstance(models.chat, OpenAICompatClient)
    await models.aclose()
    assert RememberResult.model_validate_json('{"facts": []}').facts == []


async def test_the_same_model_name_from_another_provider_is_an_embedding_change(
    tmp_path: Path, database: Path | str
) -> None:
    gemini = make_settings(tmp_path, database, embedding_model="nomic-embed-text", embedding_dimensions=DIMS)
    store = await open_store(gemini)
    await store.close()
    with pytest.raises(EmbeddingMismatchError, match="openai:nomic-embed-text") as raised:
        await open_store(replace(gemini, model_provider="openai"))
    assert "python -m bot reembed" in str(raised.value)


async def test_embeddings_can_come_from_another_endpoint_than_the_chat(tmp_path: Path) -> None:
    """Chat on one OpenAI-compatible endpoint (OpenRouter, say), embeddings on a local one (Ollama)."""
    async with OpenAIStandIn(api_key="chat-key") as chat, OpenAIStandIn() as local:
        settings = Settings(
            model_provider="openai",
            openai_api_key="chat-key",
            openai_base_url=chat.base_url,
            embedding_base_url=local.base_url,
            embedding_model="nomic-embed-text",
            embedding_dimensions=768,
        )
        assert settings.missing("model_key") == []
        models = open_models(settings)
        try:
            [vector] = await models.embedder.embed(["Ana likes tea"], "document")
            reply = [
                d
                async for d in models.chat.chat_stream(system="You are kind.", turns=[ChatTurn("user", "hi")])
            ]
        finally:
            await models.aclose()
        assert len(vector) == 768 and reply
        assert [r.kind for r in local.requests] == ["embed"]
        assert "embed" not in {r.kind for r in chat.requests}
        # check --online files each verdict under its own endpoint
        assert provider_name(settings, Purpose.EMBED) == endpoint_name(local.base_url)
        assert provider_name(settings) == endpoint_name(chat.base_url)


async def test_llama_cpp_pythons_server_gets_json_mode_and_text_after_its_500_and_empty_stream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """llama-cpp-python's server (measured 2026-11-26) answers a json_schema response_format with a 500
    and an image with a stream that ends before its first event: the bot steps down to JSON mode and
    goes on without images, with no retry spent, and says each once."""
    image = [InlineData("image/png", b"\x89PNG\r\n\x1a\n" + bytes(16))]
    async with OpenAIStandIn(like_llama_cpp=True) as server:
        server.generate_handler = lambda body: '{"owner": "Ana", "pets": ["Miso"]}'
        client = OpenAICompatClient(
            base_url=server.base_url,
            chat_model="qwen",
            memory_model="qwen",
            embedding_model="e",
            embedding_dimensions=DIMS,
            max_retries=0,
        )
        try:
            with caplog.at_level(logging.WARNING, logger="bot.llm.openai_compat"):
                for _ in range(2):
                    answer = await client.generate_json(Purpose.EXTRACT, system="s", prompt="p", schema=Pets)
                    assert answer.pets == ["Miso"]
                    turns = [ChatTurn("user", "Ana: my cat", parts=image)]
                    assert [d async for d in client.chat_stream(system="s", turns=turns)]
        finally:
            await client.aclose()
    kinds = [((r.json.get("response_format") or {}).get("type"), r.kind) for r in server.requests]
    # the first JSON request and the first chat with the image fail; then JSON mode, and no images
    first = [("json_schema", "chat"), ("json_object", "chat"), (None, "stream"), (None, "stream")]
    assert kinds == [*first, ("json_object", "chat"), (None, "stream")]
    assert NO_IMAGE in json.dumps(server.requests[-1].json["messages"])
    said = [r.getMessage() for r in caplog.records]
    assert sum("refuses response_format" in m for m in said) == 1
    assert sum("goes on without images" in m for m in said) == 1
    usage = client.usage.snapshot()
    assert usage["chat"]["errors"] == usage["extract"]["errors"] == 0


async def test_a_json_answer_that_can_no_longer_be_used_is_closed_midway_on_llama_cpps_server() -> None:
    """With a check on the partial answer, the JSON call is streamed and closed once the check gives a
    reason: ModelCutOff with it, and only the pieces read are counted (that server's stream has no
    usage). Its JSON mode carries the schema, so the instruction does not."""
    counted = json.dumps({"owner": "Ana", "pets": [f"m{n}" for n in range(1, 200)]})
    async with OpenAIStandIn(like_llama_cpp=True) as server:
        server.stream_chunk_size = 4
        server.generate_handler = lambda body: counted
        client = OpenAICompatClient(
            base_url=server.base_url, chat_model="q", memory_model="q", embedding_model="e",
            embedding_dimensions=DIMS, max_retries=0,
        )  # fmt: skip
        seen: list[str] = []

        def counting(partial: str) -> str | None:
            seen.append(partial)
            return "it is counting" if '"m12"' in partial else None

        try:
            with pytest.raises(ModelCutOff, match="it is counting"):
                await client.generate_json(
                    Purpose.EXTRACT, system="s", prompt="p", schema=Pets, stop_early=counting
                )
            whole = await client.generate_json(
                Purpose.EXTRACT, system="s", prompt="p", schema=Pets, stop_early=lambda partial: None
            )
        finally:
            await client.aclose()
    assert len(whole.pets) == 199  # a check that never objects reads the whole answer
    streams = [r.json for r in server.requests if r.kind == "stream"]
    assert [r["response_format"]["type"] for r in streams] == ["json_schema", "json_object", "json_object"]
    stopped = streams[1]
    assert "pets" in json.dumps(stopped["response_format"]["schema"])
    assert "JSON Schema" not in stopped["messages"][0]["content"]
    assert '"m12"' in seen[-1] and '"m13' not in seen[-1]  # read no further than the reason
    usage = client.usage.snapshot()["extract"]
    assert usage["output_tokens"] == len(seen) + math.ceil(len(counted) / 4)  # pieces read, both calls


async def test_an_empty_stream_is_an_error_once_the_endpoint_has_taken_an_image() -> None:
    """Images that went through once are not what a later empty stream is about: it stays an error."""
    image = [InlineData("image/png", b"\x89PNG\r\n\x1a\n" + bytes(16))]
    turns = [ChatTurn("user", "Ana: my cat", parts=image)]
    async with OpenAIStandIn() as server:
        client = OpenAICompatClient(
            base_url=server.base_url,
            chat_model="m",
            memory_model="m",
            embedding_model="e",
            embedding_dimensions=DIMS,
            max_retries=0,
        )
        try:
            assert [d async for d in client.chat_stream(system="s", turns=turns)] == ["OK"]
            server.like_llama_cpp = True  # from now on an image ends the stream before its first event
            with pytest.raises(ModelError, match="empty stream"):
                [d async for d in client.chat_stream(system="s", turns=turns)]
        finally:
            await client.aclose()
    assert client.features.images and len(server.requests) == 2


async def test_an_html_page_with_status_200_is_named_as_not_json_and_asked_again() -> None:
    """A proxy or a captive portal in front of the endpoint answers a JSON call with an HTML page and 200:
    the client says so and tries again, instead of failing on "'str' object has no attribute 'usage'"."""
    async with OpenAIStandIn() as standin:
        standin.generate_handler = lambda body: '{"owner": "Alice", "pets": ["Tom"]}'
        standin.html_next(count=1)
        client = make_client(Endpoint(), base_url=standin.base_url)
        try:
            assert await client.generate_json(
                Purpose.EXTRACT, system="List pets.", prompt="Alice: Tom", schema=Pets
            ) == Pets(owner="Alice", pets=["Tom"])
            standin.html_next(count=5)
            with pytest.raises(ModelError, match="not JSON \\(an HTML page\\?\\)"):  # an outage: waited out
                await client.generate_json(
                    Purpose.EXTRACT, system="List pets.", prompt="Alice: Tom", schema=Pets
                )
        finally:
            await client.aclose()
