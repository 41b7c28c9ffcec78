"""A local stand-in for the OpenAI-compatible API, so the real `openai` client can be tested without internet.

It speaks what the `openai` library sends when given a `base_url` (`base_url` here ends in /v1, as
OpenAI's does; the routes answer without it too, as a base URL given without /v1 makes them):
`POST /v1/chat/completions`, plain or streamed (server-sent `data: {...}` chunks, usage when
`stream_options.include_usage`, then `data: [DONE]`), with tools, `response_format` (json_schema, strict
or not, and json_object), image parts and token limits; `POST /v1/embeddings` (float or base64) and
`GET /v1/models`. Embeddings are `hashed_embedding` normalised, in the model's own width (`EMBED_WIDTHS`,
else `default_embed_dims`) or `dimensions`. Errors use OpenAI's error JSON; a key given to the stand-in is
required as a Bearer token.

The chat's answers come from `generate_handler`, the same handler the Gemini stand-in takes (so
`standins.brain.FakeBrain` answers on both providers): a request is translated into the Gemini body it
reads (`gemini_body`), and its text or functionCall parts back into content or tool_calls (FakeBrain
knows a memory task by the marker that starts the system messages: a schema the adapter adds to the
instruction goes after it). Switches make
it act like an endpoint that does less (`ignores_response_format`, `rejects_json_schema`, `no_tools`,
`no_images`; `like_llama_cpp`: all that llama-cpp-python's server does differently), and tests queue
faults with `fail_next`, `hang_next`, `break_next`, `filter_next` and `malformed_next`. With
`one_at_a_time` (and `interrupts`, `seconds_per_prompt_token`) it serves as a local server on a CPU does. Requests are
recorded as sent (`requests`, `kind` "chat", "stream", "embed" or "models").
"""

from __future__ import annotations

import array
import asyncio
import base64
import json
import math
import re
import time
import uuid
from typing import Any, Literal

from aiohttp import web

from standins.gemini import (
    MALFORMED_TEXT,
    EmbedHandler,
    GenerateHandler,
    generated,
    hashed_embedding,
    inline_parts,
    prompt_tokens,
    tokens,
)
from standins.local import Fault, LocalServer

ROUTE = re.compile(r"^(?:/v1)?/(?P<name>chat/completions|embeddings|models)$")
KINDS = {("POST", "chat/completions"): "chat", ("POST", "embeddings"): "embed", ("GET", "models"): "models"}
# The widths the usual embedding models answer in; any other model answers in `default_embed_dims`.
EMBED_WIDTHS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
}
ERROR_TYPES = {429: "requests"}
ERROR_CODES = {429: "rate_limit_exceeded"}
IMAGE_TOKENS = 85  # what OpenAI counts for a low-detail image
WRAPPED_JSON = "Sure! Here is the JSON you asked for:\n```json\n{}\n```"
_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)$", re.S)


class Refused(Exception):
    """A request the endpoint answers with a 400, in OpenAI's words (or another status, in its own)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class TemplateFailed(Refused):
    """llama-cpp-python's chat template could not render the request: a 500, or an empty stream."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=500)


def gemini_body(body: dict[str, Any], *, with_tools: bool = True) -> dict[str, Any]:
    """A chat completions request as the Gemini body `generate_handler` reads: system (and developer)
    messages as the system instruction, the rest as contents with text, inlineData, functionCall and
    functionResponse parts (a run of tool messages is one user turn answering its calls), tools as
    functionDeclarations and the sampling options as generationConfig."""
    messages = body.get("messages") or []
    system = [_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool_call_id -> the function it called
    for message in messages:
        turn = _turn(message, names)
        if turn is None:
            continue
        if contents and _answers(contents[-1]) and _answers(turn):
            contents[-1]["parts"] += turn["parts"]
        else:
            contents.append(turn)
    translated: dict[str, Any] = {"contents": contents, "generationConfig": _generation_config(body)}
    if system:
        translated["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if with_tools and body.get("tools") and body.get("tool_choice") != "none":
        declarations = [_declaration(tool["function"]) for tool in body["tools"] if "function" in tool]
        translated["tools"] = [{"functionDeclarations": declarations}]
    return translated


def _turn(message: dict[str, Any], names: dict[str, str]) -> dict[str, Any] | None:
    """One message as a Gemini content (None for system messages); an assistant's calls are noted in
    `names`, so that the tool messages answering them name their function."""
    role = message.get("role")
    if role == "user":
        return {"role": "user", "parts": _user_parts(message.get("content"))}
    if role == "assistant":
        text = _text(message.get("content"))
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        for call in message.get("tool_calls") or []:
            names[call.get("id", "")] = call["function"]["name"]
            parts.append({"functionCall": {"name": call["function"]["name"], "args": _args(call)}})
        return {"role": "model", "parts": parts}
    if role == "tool":
        answer = {
            "name": names.get(message.get("tool_call_id", ""), ""),
            "response": _response(_text(message.get("content"))),
        }
        return {"role": "user", "parts": [{"functionResponse": answer}]}
    return None


def _answers(content: dict[str, Any]) -> bool:
    """Whether a content is the answer of tool messages (which the next tool message joins)."""
    return any("functionResponse" in part for part in content["parts"])


def image_parts(body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """The (MIME type, bytes) of every data-URL image of a chat request, in order."""
    return inline_parts(gemini_body(body))


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool message of a chat request, in order: what a test asserts the bot answered its calls with."""
    return [m for m in body.get("messages") or [] if m.get("role") == "tool"]


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if p.get("type") == "text")


def _user_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    parts: list[dict[str, Any]] = []
    for part in content or []:
        if part.get("type") == "text":
            parts.append({"text": part.get("text", "")})
        elif part.get("type") == "image_url":
            url = str((part.get("image_url") or {}).get("url", ""))
            match = _DATA_URL.match(url)
            if match is None:
                parts.append({"fileData": {"fileUri": url}})
            else:
                parts.append({"inlineData": {"mimeType": match["mime"], "data": match["data"]}})
        else:
            raise Refused(
                f"Invalid value: '{part.get('type')}'. Supported values are: 'text' and 'image_url'."
            )
    return parts


def _args(call: dict[str, Any]) -> dict[str, Any]:
    try:
        args = json.loads(call["function"].get("arguments") or "{}")
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}


def _response(content: str) -> dict[str, Any]:
    """A tool message's content as a functionResponse's response: its JSON object, else the text."""
    try:
        parsed = json.loads(content)
    except ValueError:
        return {"result": content}
    return parsed if isinstance(parsed, dict) else {"result": parsed}


def _declaration(function: dict[str, Any]) -> dict[str, Any]:
    keys = ("name", "description", "parameters")
    return {key: function[key] for key in keys if key in function}


def _generation_config(body: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    for key, value in (("temperature", body.get("temperature")), ("seed", body.get("seed"))):
        if value is not None:
            config[key] = value
    if limit is not None:
        config["maxOutputTokens"] = limit
    response_format = body.get("response_format") or {}
    if response_format.get("type") in ("json_object", "json_schema"):
        config["responseMimeType"] = "application/json"
    if response_format.get("type") == "json_schema":
        config["responseJsonSchema"] = (response_format.get("json_schema") or {}).get("schema")
    elif response_format.get("type") == "json_object" and response_format.get("schema"):
        config["responseJsonSchema"] = response_format["schema"]  # llama-cpp-python's grammar from it
    return config


def strict_schema_problem(schema: Any, path: str = "") -> str | None:
    """What OpenAI's strict mode refuses in a JSON schema, or None: every object must list all its
    properties as required and set additionalProperties to false."""
    if isinstance(schema, list):
        return next((p for item in schema if (p := strict_schema_problem(item, path))), None)
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return f"In context=({path}), 'additionalProperties' is required to be supplied and to be false."
        missing = [name for name in properties if name not in (schema.get("required") or [])]
        if missing:
            return (
                f"In context=({path}), 'required' is required to be supplied and to be an array including "
                f"every key in properties. Missing '{missing[0]}'."
            )
    children: list[tuple[Any, str]] = []
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            children += [(item, f"{path}, '{key}', '{name}'") for name, item in value.items()]
        elif key in ("items", "anyOf", "allOf", "oneOf"):
            children.append((value, f"{path}, '{key}'"))
    for child, where in children:
        if problem := strict_schema_problem(child, where.lstrip(", ")):
            return problem
    return None


def embedding_width(model: str, default: int) -> int:
    """A model's own width, its Ollama tag ("nomic-embed-text:latest") set aside."""
    return EMBED_WIDTHS.get(model.split(":", 1)[0], default)


def _default_generate(body: dict[str, Any]) -> str:
    return "OK"


class OpenAIStandIn(LocalServer):
    """An aiohttp server on 127.0.0.1 (random free port) that answers like an OpenAI-compatible API."""

    kinds = ("chat", "stream")

    def __init__(
        self,
        *,
        api_key: str | None = None,
        chat_models: tuple[str, ...] = ("gpt-4o-mini",),
        embedding_models: tuple[str, ...] = ("text-embedding-3-small",),
        default_embed_dims: int = 768,
        ignores_response_format: bool = False,
        rejects_json_schema: bool = False,
        no_tools: Literal["reject", "ignore"] | None = None,
        no_images: bool = False,
        like_llama_cpp: bool = False,
    ) -> None:
        super().__init__()
        # api_key None is a local server: any key or none. A string must come as `Authorization: Bearer`.
        self.api_key = api_key
        # What GET /models lists; a request may name any model, as a local server serving one takes any.
        self.chat_models = chat_models
        self.embedding_models = embedding_models
        self.default_embed_dims = default_embed_dims
        # An endpoint that takes response_format but answers as it likes: JSON comes in prose and a fence.
        self.ignores_response_format = ignores_response_format
        # An endpoint with JSON mode (json_object) but no structured outputs: json_schema is a 400.
        self.rejects_json_schema = rejects_json_schema
        # A model without tool calling: "reject" answers a request with tools with a 400, "ignore" drops them.
        self.no_tools = no_tools
        # A text-only model: a request with an image part is a 400.
        self.no_images = no_images
        # llama-cpp-python 0.3.16's server (`python -m llama_cpp.server`, a GGUF's own chat template), as
        # measured on 2026-11-26: a json_schema response_format fails its request validation with a 500; a
        # message with image parts fails its chat template (a 500, and a stream that ends before its first
        # event); tools are taken and never called; a stream carries no usage.
        self.like_llama_cpp = like_llama_cpp
        # A server that answers one request at a time (llama-cpp-python's): requests wait their turn, and
        # reading a prompt takes `seconds_per_prompt_token` (a CPU's pace) before the answer starts.
        self.one_at_a_time = False
        self.seconds_per_prompt_token = 0.0
        # ... and, as its `interrupt_requests` default does, ends the stream it is sending (a bare
        # `[DONE]`, no finish reason) as soon as another request waits; `interrupted` counts them.
        self.interrupts = False
        self.interrupted = 0
        self._turn = asyncio.Lock()
        self._queued = 0
        self.generate_handler: GenerateHandler = _default_generate
        self.embed_handler: EmbedHandler = hashed_embedding
        self.stream_chunk_size = 40

    @property
    def root_url(self) -> str:
        """The server without /v1: a base URL as some users write it, which the routes answer too."""
        return self.base_url.removesuffix("/v1")

    async def start(self) -> str:
        self.base_url = await super().start() + "/v1"
        return self.base_url

    def break_next(self, *, count: int = 1) -> None:
        """Cut the next `count` streamed answers midway: half the chunks, then the connection drops."""
        self._faults += [Fault("break", "stream") for _ in range(count)]

    def filter_next(self, *, count: int = 1, kind: str | None = None) -> None:
        """Answer the next `count` chats with no content and finish_reason "content_filter"."""
        self._faults += [Fault("filter", kind) for _ in range(count)]

    # ---- serving --------------------------------------------------------------------------------------------

    def _fault_applies(self, fault: Fault, kind: str) -> bool:
        return kind != "embed" or fault.action in ("fail", "hang", "malformed")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await self._json(request)
        match = ROUTE.match(request.path)
        kind = KINDS.get((request.method, match["name"])) if match else None
        if kind == "chat" and isinstance(body, dict) and body.get("stream"):
            kind = "stream"
        model = body.get("model") if isinstance(body, dict) else None
        self._record(request, model, kind, body)
        if self.latency:
            await self._pause(self.latency)
        if kind is None:
            return _error(404, f"Invalid URL ({request.method} {request.path})")
        if denied := self._denied(request.headers.get("Authorization", "")):
            return _error(401, denied, code="invalid_api_key")
        if kind == "models":
            return web.json_response({"object": "list", "data": [self._model(m) for m in self._models()]})
        self.counters[kind]["requests"] += 1
        if not isinstance(body, dict):
            return _error(400, "We could not parse the JSON body of your request.")
        if not isinstance(model, str) or not model:
            return _error(400, "you must provide a model parameter")
        fault = self._take_fault(kind)
        if fault is not None and fault.action == "fail":
            return _error(fault.status, f"stand-in fault {fault.status}", retry_after=fault.retry_after)
        if fault is not None and fault.action == "hang":
            await self._release.wait()
            return _error(503, "stand-in stopped while hanging")
        if fault is not None and fault.action == "html":  # a proxy's or a login page, with status 200
            return web.Response(
                status=200, text="<html><body>Please sign in</body></html>", content_type="text/html"
            )
        try:
            if kind == "embed":
                return self._embed(model, body, malformed=fault is not None)
            if not self.one_at_a_time:
                return await self._chat(request, kind, model, body, fault)
            self._queued += 1
            try:
                await self._turn.acquire()
            finally:
                self._queued -= 1
            try:
                await self._pause(self.seconds_per_prompt_token * prompt_tokens(gemini_body(body), 0))
                return await self._chat(request, kind, model, body, fault)
            finally:
                self._turn.release()
        except Refused as refused:
            return _error(refused.status, str(refused))

    def _cut_short(self) -> bool:
        if self.interrupts and self._queued:
            self.interrupted += 1
            return True
        return False

    def _denied(self, authorization: str) -> str | None:
        """Why a request's key is refused, in OpenAI's words, or None (also when the stand-in has no key)."""
        if self.api_key is None:
            return None
        key = authorization.removeprefix("Bearer ").strip() if authorization.startswith("Bearer ") else ""
        if not key:
            return (
                "You didn't provide an API key. You need to provide your API key in an Authorization header "
                "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            )
        if key != self.api_key:
            return f"Incorrect API key provided: {key[:3]}***{key[-4:]}."
        return None

    def _models(self) -> list[str]:
        return list(dict.fromkeys(self.chat_models + self.embedding_models))

    @staticmethod
    def _model(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 1700000000, "owned_by": "stand-in"}

    # ---- chat -----------------------------------------------------------------------------------------------

    def _check(self, body: dict[str, Any]) -> None:
        """Refuse (400) what the endpoint refuses: a malformed conversation, or what its switches lack."""
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refused("Invalid 'messages': empty array. Expected an array with minimum length 1.")
        _check_tool_turns(messages)
        if self.no_tools == "reject" and body.get("tools"):
            raise Refused(f"tools are not supported by {body['model']}")
        if self.no_images and any(
            isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
            for m in messages
        ):
            raise Refused("Invalid content type. image_url is only supported by certain models.")
        if strict := [t["function"] for t in body.get("tools") or [] if t.get("function", {}).get("strict")]:
            for function in strict:
                if problem := strict_schema_problem(function.get("parameters") or {}):
                    raise Refused(f"Invalid schema for function '{function.get('name')}': {problem}")
        if self.like_llama_cpp:
            _check_as_llama_cpp(body)
        elif not self.ignores_response_format:
            _check_response_format(body, rejects_json_schema=self.rejects_json_schema)

    async def _chat(
        self, request: web.Request, kind: str, model: str, body: dict[str, Any], fault: Fault | None
    ) -> web.StreamResponse:
        try:
            self._check(body)
        except TemplateFailed:
            if kind == "stream":
                return await self._sse(request, [])  # llama-cpp-python's stream: headers, then nothing
            raise
        with_tools = self.no_tools is None and not self.like_llama_cpp
        translated = gemini_body(body, with_tools=with_tools)
        prompt = prompt_tokens(translated, IMAGE_TOKENS)
        self.counters[kind]["prompt_tokens"] += prompt
        calls: list[dict[str, Any]] = []
        finish = "stop"
        if fault is not None and fault.action == "filter":
            text, finish = "", "content_filter"
        elif fault is not None and fault.action == "malformed":
            text = MALFORMED_TEXT
        else:
            text, parts = await generated(self.generate_handler, translated)
            calls = [_tool_call(p["functionCall"]) for p in parts]
            text = self._as_endpoint_writes(text)
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if calls:
            finish = "tool_calls"
        elif limit is not None and tokens(len(text)) > limit:
            text, finish = text[: 4 * limit], "length"
        output = tokens(len(text) + sum(len(json.dumps(c)) for c in calls))
        self.counters[kind]["output_tokens"] += output
        usage = {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
        head = {
            "id": "chatcmpl-" + uuid.uuid4().hex[:24],
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_standin",
        }
        if kind == "chat":
            message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
            if calls:
                message["tool_calls"] = calls
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            return web.json_response(
                {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
        with_usage = bool((body.get("stream_options") or {}).get("include_usage")) and not self.like_llama_cpp
        chunks = [
            _chunk(head, delta, reason, with_usage) for delta, reason in self._deltas(text, calls, finish)
        ]
        if with_usage:
            chunks.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        broken = fault is not None and fault.action == "break"
        return await self._stream(request, chunks, broken=broken)

    def _as_endpoint_writes(self, text: str) -> str:
        """The answer as this endpoint writes it: an endpoint that ignores response_format wraps JSON."""
        if not self.ignores_response_format:
            return text
        try:
            json.loads(text)
        except ValueError:
            return text
        return WRAPPED_JSON.format(text)

    def _deltas(
        self, text: str, calls: list[dict[str, Any]], finish: str
    ) -> list[tuple[dict[str, Any], str | None]]:
        """The streamed pieces: the role, the text in `stream_chunk_size` pieces, each tool call's name
        and then its arguments in pieces, and an empty delta with the finish reason."""
        size = max(1, self.stream_chunk_size)
        deltas: list[tuple[dict[str, Any], str | None]] = [({"role": "assistant", "content": ""}, None)]
        deltas += [({"content": text[i : i + size]}, None) for i in range(0, len(text), size)]
        for index, call in enumerate(calls):
            opening = {"index": index, "id": call["id"], "type": "function"}
            function = call["function"]
            deltas.append(
                ({"tool_calls": [{**opening, "function": {"name": function["name"], "arguments": ""}}]}, None)
            )
            arguments = function["arguments"]
            deltas += [
                ({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + size]}}]}, None)
                for i in range(0, len(arguments), size)
            ]
        deltas.append(({}, finish))
        return deltas

    async def _stream(
        self, request: web.Request, chunks: list[dict[str, Any]], *, broken: bool
    ) -> web.StreamResponse:
        lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
        if broken:
            lines = lines[: max(1, len(chunks) // 2)]
        return await self._sse(request, lines, complete=not broken)

    # ---- embeddings -----------------------------------------------------------------------------------------

    def _embed(self, model: str, body: dict[str, Any], *, malformed: bool) -> web.Response:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            raise Refused(
                "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
            )
        if len(texts) > 2048:
            raise Refused(f"'$.input' is invalid: at most 2048 inputs, got {len(texts)}.")
        width = embedding_width(model, self.default_embed_dims)
        dims = body.get("dimensions")
        if dims is not None and not (isinstance(dims, int) and 0 < dims <= width):
            raise Refused(f"Invalid value for 'dimensions' = {dims}. Must be between 1 and {width}.")
        if malformed:
            return web.Response(
                status=200,
                text='{"object": "list", "data": [{"embedding": [0.1, ',
                content_type="application/json",
            )
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            raise Refused(f"Invalid value: '{encoding}'. Supported values are: 'float' and 'base64'.")
        data = []
        for index, text in enumerate(texts):
            # `dimensions` as the Gemini stand-in takes outputDimensionality: the text hashed into that
            # width. A real model's vector is cut to it; a cut hashed vector keeps the shared baseline
            # whole but few of its words (unrelated texts ~0.9 alike at 64 of 1536), so recall would not
            # behave as in the Gemini tests.
            vector = _unit(self.embed_handler(text, None, dims or width))
            value: Any = (
                vector
                if encoding == "float"
                else base64.b64encode(array.array("f", vector).tobytes()).decode()
            )
            data.append({"object": "embedding", "index": index, "embedding": value})
        prompt = tokens(sum(len(t) for t in texts))
        self.counters["embed"]["prompt_tokens"] += prompt
        self.counters["embed"]["texts"] += len(texts)
        usage = {"prompt_tokens": prompt, "total_tokens": prompt}
        return web.json_response({"object": "list", "data": data, "model": model, "usage": usage})


def _check_tool_turns(messages: list[dict[str, Any]]) -> None:
    """Refuse what OpenAI refuses after tool calls: a call left without a tool message answering it, or
    a tool message answering no call of the assistant message before it."""
    waiting: list[str] = []
    for message in messages:
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in waiting:
                raise Refused(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'."
                )
            waiting.remove(message["tool_call_id"])
            continue
        if waiting:
            break
        waiting = [call.get("id") for call in message.get("tool_calls") or []]
    if waiting:
        raise Refused(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(waiting)}"
        )


def _check_as_llama_cpp(body: dict[str, Any]) -> None:
    """What llama-cpp-python's server fails on, in its words: its request model knows no json_schema,
    and a GGUF's chat template concatenates a message's content as text."""
    kind = (body.get("response_format") or {}).get("type", "text")
    if kind not in ("text", "json_object"):
        raise Refused(
            "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            f"'msg': \"Input should be 'text' or 'json_object'\", 'input': '{kind}'}}",
            status=500,
        )
    if any(isinstance(m.get("content"), list) for m in body["messages"]):
        raise TemplateFailed('can only concatenate str (not "list") to str')


def _check_response_format(body: dict[str, Any], *, rejects_json_schema: bool) -> None:
    response_format = body.get("response_format") or {"type": "text"}
    kind = response_format.get("type")
    if kind not in ("text", "json_object", "json_schema"):
        raise Refused(
            f"Invalid value: '{kind}'. Supported values are: 'json_object', 'json_schema', and 'text'."
        )
    if kind == "json_object" and "json" not in json.dumps(body.get("messages")).lower():
        raise Refused(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type "
            "'json_object'."
        )
    if kind != "json_schema":
        return
    if rejects_json_schema:
        raise Refused(
            "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."
        )
    spec = response_format.get("json_schema") or {}
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", str(spec.get("name", ""))):
        raise Refused("Invalid 'response_format.json_schema.name': must match ^[a-zA-Z0-9_-]+$.")
    if spec.get("strict") and (problem := strict_schema_problem(spec.get("schema") or {})):
        raise Refused(f"Invalid schema for response_format '{spec['name']}': {problem}")


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(call.get("args") or {})
    function = {"name": call["name"], "arguments": arguments}
    return {"id": "call_" + uuid.uuid4().hex[:24], "type": "function", "function": function}


def _chunk(
    head: dict[str, Any], delta: dict[str, Any], finish: str | None, with_usage: bool
) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    chunk = {**head, "object": "chat.completion.chunk", "choices": [choice]}
    return {**chunk, "usage": None} if with_usage else chunk


def _unit(vector: list[float]) -> list[float]:
    """Normalised to length 1, as OpenAI's embeddings are."""
    norm = math.sqrt(math.fsum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def _error(
    status: int, message: str, *, code: str | None = None, retry_after: float | None = None
) -> web.Response:
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    error = {"message": message, "type": kind, "param": None, "code": code or ERROR_CODES.get(status)}
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else None
    return web.json_response({"error": error}, status=status, headers=headers)
