"""A local stand-in for Gemini's REST API, so the real google-genai client can be tested without internet.

It speaks what google-genai sends when given a `base_url`: `POST /{v1|v1beta}/models/{model}:generateContent`,
`:streamGenerateContent?alt=sse` (server-sent events, one JSON object per `data:` line, as the real API),
`:batchEmbedContents` and `:embedContent`. Answers carry `usageMetadata` and errors use the real error JSON
(including `google.rpc.RetryInfo`), so retry and accounting code meets the shapes it will meet in production.
Tests replace `generate_handler` / `embed_handler` and queue faults with `fail_next`, `hang_next`,
`malformed_next` and `block_next`. Requests are recorded as sent (`requests`); `inline_parts` and
`function_parts` read the images and the tool calls and answers out of one. Function calls carry a
thought signature, and a conversation that sends a call back without it, or without an answer to each
call, is refused with a 400, as Gemini does.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
import math
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from standins.local import Fault, LocalServer

ROUTE = re.compile(r"^/(?P<version>v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")
KINDS = {
    "generateContent": "generate",
    "streamGenerateContent": "stream",
    "batchEmbedContents": "embed",
    "embedContent": "embed",
}
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
DEFAULT_EMBED_DIMS = 3072
MALFORMED_TEXT = '{"facts": [{"user_id": "1", "text": "cut off in the middl'
WORD = re.compile(r"\w+", re.UNICODE)
STOP_WORDS = frozenset(
    "a an the is are was were be been to of in on at for and or but this that these those it its i you he she "
    "we they me my your his her our their up has have had do does did with from by as so if not no yes any "
    "anyone what where who when how why which there here".split()
)
BASELINE_SIMILARITY_WEIGHT = 0.6
IMAGE_TOKENS = 258  # what Gemini counts for a small image (one tile)
# Gemini gives the first functionCall part of an answer a thought signature, and refuses a conversation
# that sends the call back without it; the stand-in does both.
THOUGHT_SIGNATURE = base64.b64encode(b"stand-in thought signature").decode()

GenerateHandler = Callable[
    [dict[str, Any]], "str | list[dict[str, Any]] | Awaitable[str | list[dict[str, Any]]]"
]
EmbedHandler = Callable[[str, "str | None", "int | None"], list[float]]


def tokens(text_length: int) -> int:
    """The stand-in's token estimate: about four characters a token, rounded up."""
    return math.ceil(text_length / 4)


def inline_parts(body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """The (MIME type, bytes) of every inline data part of a request's contents, in order: what a test
    asserts an image arrived as."""
    found: list[tuple[str, bytes]] = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            blob = part.get("inlineData") or part.get("inline_data")
            if isinstance(blob, dict):
                found.append(
                    (
                        str(blob.get("mimeType") or blob.get("mime_type")),
                        _decode(str(blob.get("data", ""))),
                    )
                )
    return found


def _decode(data: str) -> bytes:
    """Base64 as google-genai writes it (URL-safe, padding left off) or as the REST docs show it."""
    return base64.urlsafe_b64decode(data.replace("+", "-").replace("/", "_") + "=" * (-len(data) % 4))


def function_parts(body: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """Every `functionCall` or `functionResponse` (by `key`) of a request's contents, in order."""
    return [
        part[key]
        for content in body.get("contents") or []
        for part in content.get("parts") or []
        if key in part
    ]


def check_tool_turns(body: dict[str, Any]) -> str | None:
    """What Gemini would refuse (400) in a conversation that goes on after function calls, or None: a
    call sent back without the thought signature it came with, or a call turn not followed by a user turn
    answering each of its calls."""
    contents = body.get("contents") or []
    for index, content in enumerate(contents):
        calls = [p for p in content.get("parts") or [] if "functionCall" in p]
        if not calls:
            continue
        if _decode(str(calls[0].get("thoughtSignature") or "")) != base64.b64decode(THOUGHT_SIGNATURE):
            return "Function call is missing a thought_signature in functionCall parts."
        after = contents[index + 1] if index + 1 < len(contents) else {}
        answers = [p["functionResponse"] for p in after.get("parts") or [] if "functionResponse" in p]
        if after.get("role") != "user" or len(answers) != len(calls):
            return (
                "Please ensure that the number of function response parts is equal to the number of "
                "function call parts of the function call turn."
            )
        if [a.get("name") for a in answers] != [c["functionCall"].get("name") for c in calls]:
            return "Function response names do not match the function calls."
    return None


def prompt_tokens(body: dict[str, Any], image_tokens: int = IMAGE_TOKENS) -> int:
    """The stand-in's count of a generate request's input: its texts, tool answers and images."""
    return tokens(
        sum(len(t) for t in text_parts({k: body.get(k) for k in ("contents", "systemInstruction")}))
        + sum(len(json.dumps(r)) for r in function_parts(body, "functionResponse"))
    ) + image_tokens * len(inline_parts(body))


def text_parts(value: Any) -> list[str]:
    """Every `text` string inside a request or response body, in order."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "text" and isinstance(item, str):
                found.append(item)
            else:
                found.extend(text_parts(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(text_parts(item))
    return found


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def hashed_embedding(text: str, task_type: str | None, dims: int | None) -> list[float]:
    """Deterministic bag of words + character trigrams, feature-hashed into `dims` signed buckets.

    Words are lower-cased, crudely stemmed ("weekends" ~ "weekend") and stop words dropped; a shared component
    gives every pair a baseline similarity, as real embeddings have. With it, cosine distances fall where the
    bot's default thresholds expect real ones: same text 0, same topic ~0.1-0.35, loosely related ~0.35-0.5,
    unrelated ~0.65-0.7. Deliberately NOT normalised (the client must normalise).
    """
    size = dims or DEFAULT_EMBED_DIMS
    vector = [0.0] * size
    words = [_stem(w) for w in WORD.findall(text.lower()) if w not in STOP_WORDS]
    features: list[tuple[str, float]] = [("w:" + w, 3.0) for w in words]
    for word in words:
        padded = f" {word} "
        features += [("t:" + padded[i : i + 3], 1.0) for i in range(len(padded) - 2)]
    if not features:
        features = [("empty", 1.0)]
    for feature, weight in features:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        number = int.from_bytes(digest, "big")
        vector[number % size] += weight if (number >> 63) & 1 else -weight
    norm = math.sqrt(math.fsum(v * v for v in vector)) or 1.0
    vector = [3.0 * v / norm for v in vector]
    vector[0] += 3.0 * BASELINE_SIMILARITY_WEIGHT
    return vector


async def generated(handler: GenerateHandler, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A handler's answer as its text and its functionCall parts: a handler answers with text, or with a
    list of parts (text and functionCall ones), at once or awaited."""
    produced = handler(body)
    answer = await produced if inspect.isawaitable(produced) else produced
    if isinstance(answer, str):
        return answer, []
    text = "".join(p["text"] for p in answer if isinstance(p.get("text"), str))
    return text, [p for p in answer if "functionCall" in p]


def _default_generate(body: dict[str, Any]) -> str:
    return "OK"


class GeminiStandIn(LocalServer):
    """An aiohttp server on 127.0.0.1 (random free port) that answers like Gemini's REST API."""

    kinds = ("generate", "stream")

    def __init__(self, *, api_key: str | None = None) -> None:
        super().__init__()
        # api_key None accepts any non-empty key; a string makes other keys fail like the real API (400).
        self.api_key = api_key
        self.generate_handler: GenerateHandler = _default_generate
        self.embed_handler: EmbedHandler = hashed_embedding
        self.stream_chunk_size = 40
        # An endpoint (or proxy) that ignores `maxOutputTokens` and answers at any length.
        self.ignores_max_tokens = False

    # ---- test controls --------------------------------------------------------------------------------------

    def fail_next(
        self,
        status: int = 500,
        *,
        count: int = 1,
        retry_after: float | None = None,
        retry_info_delay: str | None = None,
        kind: str | None = None,
    ) -> None:
        """Answer the next `count` requests (of `kind`, if given) with an error in the real API's shape."""
        self._faults += [Fault("fail", kind, status, retry_after, retry_info_delay) for _ in range(count)]

    def block_next(self, *, count: int = 1, kind: str | None = None) -> None:
        """Answer with a safety block: promptFeedback.blockReason SAFETY and no candidates (not for embed)."""
        self._faults += [Fault("block", kind) for _ in range(count)]

    # ---- serving --------------------------------------------------------------------------------------------

    def _fault_applies(self, fault: Fault, kind: str) -> bool:
        return not (fault.action == "block" and kind == "embed")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await self._json(request)
        match = ROUTE.match(request.path)
        method = match["method"] if match else ""
        kind = KINDS.get(method) if match and request.method == "POST" else None
        self._record(request, match["model"] if match else None, kind, body)
        if self.latency:
            await self._pause(self.latency)
        if kind is None:
            return _error(404, f"Method not found: {request.method} {request.path}")
        self.counters[kind]["requests"] += 1
        key = request.headers.get("x-goog-api-key") or request.query.get("key")
        if not key:
            return _error(
                403,
                "Method doesn't allow unregistered callers (callers without established identity). "
                "Please use API Key or other form of API consumer identity to call this API.",
            )
        if self.api_key is not None and key != self.api_key:
            return _error(400, "API key not valid. Please pass a valid API key.", reason="API_KEY_INVALID")
        if not isinstance(body, dict):
            return _error(400, "Invalid JSON payload received.")

        fault = self._take_fault(kind)
        if fault is not None and fault.action == "fail":
            return _error(
                fault.status,
                f"stand-in fault {fault.status}",
                retry_after=fault.retry_after,
                retry_info_delay=fault.retry_info_delay,
            )
        if fault is not None and fault.action == "hang":
            await self._release.wait()
            return _error(503, "stand-in stopped while hanging")

        assert match is not None
        model = match["model"]
        if kind == "embed":
            return self._embed(method, model, body, malformed=fault is not None)
        refused = check_tool_turns(body)
        if refused is not None:
            return _error(400, refused)
        prompt = prompt_tokens(body)
        if fault is not None and fault.action == "block":
            self.counters[kind]["prompt_tokens"] += prompt
            blocked = {
                "promptFeedback": {
                    "blockReason": "SAFETY",
                    "safetyRatings": [
                        {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}
                    ],
                },
                "usageMetadata": {"promptTokenCount": prompt, "totalTokenCount": prompt},
                "modelVersion": model,
                "responseId": uuid.uuid4().hex[:16],
            }
            if kind == "stream":
                return await self._sse(request, _events([blocked]))
            return web.json_response(blocked)

        calls: list[dict[str, Any]] = []
        if fault is not None and fault.action == "malformed":
            text = MALFORMED_TEXT
        else:
            text, calls = await generated(self.generate_handler, body)
        finish = "STOP"
        limit = (body.get("generationConfig") or {}).get("maxOutputTokens")
        if limit is not None and not calls and tokens(len(text)) > limit and not self.ignores_max_tokens:
            # cut off, as Gemini does
            text, finish = text[: 4 * limit], "MAX_TOKENS"
        output_tokens = tokens(len(text) + sum(len(json.dumps(c)) for c in calls))
        self.counters[kind]["prompt_tokens"] += prompt
        self.counters[kind]["output_tokens"] += output_tokens
        response_id = uuid.uuid4().hex[:16]
        if kind == "generate":
            return web.json_response(
                {
                    "candidates": [_candidate(text, finish, calls)],
                    "usageMetadata": _usage(prompt, output_tokens),
                    "modelVersion": model,
                    "responseId": response_id,
                }
            )
        size = max(1, self.stream_chunk_size)
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        chunks = []
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            so_far = tokens(sum(len(p) for p in pieces[: index + 1]))
            chunks.append(
                {
                    "candidates": [_candidate(piece, finish if last else None, calls if last else [])],
                    "usageMetadata": _usage(prompt, so_far),
                    "modelVersion": model,
                    "responseId": response_id,
                }
            )
        return await self._sse(request, _events(chunks))

    def _embed(self, method: str, model: str, body: dict[str, Any], *, malformed: bool) -> web.Response:
        requests = body.get("requests") if method == "batchEmbedContents" else [body]
        if not isinstance(requests, list) or not requests:
            return _error(400, "requests must not be empty")
        if len(requests) > 100:
            return _error(
                400, "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch"
            )
        if malformed:
            return web.Response(
                status=200, text='{"embeddings": [{"values": [0.1, ', content_type="application/json"
            )
        vectors = []
        prompt_chars = 0
        for item in requests:
            text = "".join(text_parts(item.get("content")))
            prompt_chars += len(text)
            vectors.append(self.embed_handler(text, item.get("taskType"), item.get("outputDimensionality")))
        prompt_tokens = tokens(prompt_chars)
        self.counters["embed"]["prompt_tokens"] += prompt_tokens
        self.counters["embed"]["texts"] += len(requests)
        usage = {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens}
        if method == "embedContent":
            return web.json_response({"embedding": {"values": vectors[0]}, "usageMetadata": usage})
        return web.json_response({"embeddings": [{"values": v} for v in vectors], "usageMetadata": usage})


def _events(chunks: list[dict[str, Any]]) -> list[str]:
    """Server-sent events as Gemini writes them: one JSON object per `data:` line."""
    return [f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks]


def _candidate(
    text: str, finish_reason: str | None, calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    parts = [{"text": text}] if text or not calls else []
    if calls:
        calls = [{**calls[0], "thoughtSignature": THOUGHT_SIGNATURE}, *calls[1:]]
    candidate: dict[str, Any] = {"content": {"parts": parts + (calls or []), "role": "model"}, "index": 0}
    if finish_reason:
        candidate["finishReason"] = finish_reason
    return candidate


def _usage(prompt_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt_tokens + output_tokens,
    }


def _error(
    status: int,
    message: str,
    *,
    retry_after: float | None = None,
    retry_info_delay: str | None = None,
    reason: str | None = None,
) -> web.Response:
    details: list[dict[str, Any]] = []
    if reason:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "googleapis.com",
            }
        )
    if retry_info_delay is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_info_delay})
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else None
    return web.json_response({"error": error}, status=status, headers=headers)
