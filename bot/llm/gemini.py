"""The only module that speaks to google-genai: structured JSON, streamed chat and batched embeddings.

google-genai's own retries are switched off (`HttpRetryOptions(attempts=1)`) because they cannot honour the
server's retry hint (`Retry-After`, `google.rpc.RetryInfo`) and, over aiohttp, silently sleep 1-10 s on a
connection error. This module runs one retry loop for every call instead: exponential backoff with full
jitter, the server's hint when it gives one, a hard per-attempt deadline (a hung server must not hang the
bot), and per-purpose usage counters. Error messages never contain the API key.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import math
import random
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import aiohttp
import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from bot.gist import first_line
from bot.memory.ports import (
    ChatTool,
    ChatTurn,
    InlineData,
    ModelBadAnswer,
    ModelError,
    ModelKeyRejected,
    ModelRefusal,
    Purpose,
    ToolCall,
    current_usage_scope,
)

if TYPE_CHECKING:
    from bot.config import Settings

log = logging.getLogger(__name__)

T = TypeVar("T", bound=pydantic.BaseModel)
R = TypeVar("R")

EMBED_BATCH_SIZE = 100  # batchEmbedContents accepts at most 100 requests
JSON_TEMPERATURE = 0.2
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# Finish reasons that mean "the model would not answer this", not "the answer is done".
REFUSAL_FINISH_REASONS = frozenset(
    {
        "SAFETY",
        "PROHIBITED_CONTENT",
        "BLOCKLIST",
        "SPII",
        "RECITATION",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "MODEL_ARMOR",
        "JAILBREAK",
    }
)
_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)s\s*$")
_NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)


class _MalformedAnswer(Exception):
    """The model answered 200 but not with the JSON we asked for; worth another try."""


class _OffSchemaAnswer(_MalformedAnswer):
    """A structured answer that does not fit its schema: a reply to this input, not an outage."""


class _Counters:
    calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    errors: int = 0
    retries: int = 0
    embedded_texts: int = 0


def _per_purpose() -> dict[Purpose, _Counters]:
    return {p: _Counters() for p in Purpose}


@dataclass
class Usage:
    """Counters since start, per purpose, so operators can see what the bot costs and how often it fails.

    `calls` counts requests that got an answer (refusals and malformed answers included), `errors` final
    failures (after retries), `retries` the extra attempts. Tokens come from the answers' usageMetadata.
    Calls made inside `usage_scope()` are also counted for that scope, so a server sees only its own.
    """

    counters: dict[Purpose, _Counters] = field(default_factory=_per_purpose)
    scopes: dict[str, dict[Purpose, _Counters]] = field(default_factory=dict)

    def add(self, purpose: Purpose, **amounts: int) -> None:
        """Add to the counters of `purpose`, overall and for the scope the call is made for (if any)."""
        targets = [self.counters[purpose]]
        scope = current_usage_scope()
        if scope is not None:
            targets.append(self.scopes.setdefault(scope, _per_purpose())[purpose])
        for counters in targets:
            for name, amount in amounts.items():
                setattr(counters, name, getattr(counters, name) + amount)

    def record(self, purpose: Purpose, metadata: Any) -> None:
        """Count one answered request and the tokens its usageMetadata reports (if any)."""
        self.add(purpose, calls=1)
        self.add_tokens(purpose, metadata)

    def add_tokens(self, purpose: Purpose, metadata: Any) -> None:
        if metadata is None:
            return
        output = getattr(metadata, "candidates_token_count", None) or 0
        output += getattr(metadata, "thoughts_token_count", None) or 0
        self.add(
            purpose,
            prompt_tokens=getattr(metadata, "prompt_token_count", None) or 0,
            output_tokens=output,
        )

    def snapshot(self, scope: str | None = None) -> dict[str, dict[str, int]]:
        """Plain JSON-ready numbers, e.g. `{"extract": {"calls": 3, ...}, "embed": {..., "embedded_texts": 40}}`.

        With `scope`, only the calls made for it.
        """
        counters = self.counters if scope is None else self.scopes.get(scope, _per_purpose())
        out: dict[str, dict[str, int]] = {}
        for purpose, c in counters.items():
            out[purpose.value] = {
                "calls": c.calls,
                "prompt_tokens": c.prompt_tokens,
                "output_tokens": c.output_tokens,
                "errors": c.errors,
                "retries": c.retries,
            }
        out[Purpose.EMBED.value]["embedded_texts"] = counters[Purpose.EMBED].embedded_texts
        return out


class GeminiClient:
    """Gemini for the bot: JSON answers for the memory engine, a streamed chat reply, batched embeddings."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str = "",
        chat_model: str,
        memory_model: str,
        embedding_model: str,
        embedding_dimensions: int,
        timeout_seconds: float = 30.0,
        max_retries: int = 4,
        backoff_base_seconds: float = 1.0,
        backoff_max_seconds: float = 30.0,
    ) -> None:
        self.chat_model = chat_model
        self.memory_model = memory_model
        self.embedding_model = embedding_model
        self.embedding_dimensions = embedding_dimensions
        self.timeout_seconds = timeout_seconds  # 0 means no deadline
        self.max_retries = max(0, max_retries)
        self.backoff_base_seconds = backoff_base_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.base_url = base_url.rstrip("/")
        self.usage = Usage()
        if not api_key.strip():
            raise ModelError("GEMINI_API_KEY is not set (or GOOGLE_API_KEY; a key from Google AI Studio)")
        self._api_key = api_key
        self._closed = False
        timeout_ms = math.ceil(timeout_seconds * 1000) if timeout_seconds > 0 else None
        self._client = genai.Client(
            api_key=api_key,
            vertexai=False,
            http_options=types.HttpOptions(
                base_url=self.base_url or None,
                timeout=timeout_ms,
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
        )
        # A streamed reply may legitimately take longer than one request's timeout; the deadline that matters
        # there is the gap between chunks, which chat_stream enforces itself.
        stream_ms = max(10 * timeout_ms, 300_000) if timeout_ms else None
        self._stream_http_options = types.HttpOptions(timeout=stream_ms)

    @classmethod
    def from_settings(cls, settings: Settings) -> GeminiClient:
        return cls(
            api_key=settings.gemini_api_key,
            base_url=settings.gemini_base_url,
            chat_model=settings.gemini_chat_model,
            memory_model=settings.gemini_memory_model,
            embedding_model=settings.embedding_model,
            embedding_dimensions=settings.embedding_dimensions,
            timeout_seconds=settings.gemini_timeout_seconds,
            max_retries=settings.gemini_max_retries,
        )

    def __repr__(self) -> str:  # never show the key
        return f"GeminiClient(base_url={self.base_url or 'default'!r}, chat_model={self.chat_model!r})"

    # ---- structured JSON --------------------------------------------------------------------------------

    async def generate_json(self, purpose: Purpose, *, system: str, prompt: str, schema: type[T]) -> T:
        """Ask the memory model for an answer shaped like `schema`; malformed answers are retried."""
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=JSON_TEMPERATURE,
            response_mime_type="application/json",
            response_schema=schema,
            automatic_function_calling=_NO_AFC,
        )

        async def attempt() -> T:
            response = await self._client.aio.models.generate_content(
                model=self.memory_model, contents=prompt, config=config
            )
            self.usage.record(purpose, response.usage_metadata)
            self._raise_if_refused(purpose, response, final=True)
            # A long answer takes a while to read: a worker thread keeps the event loop (and heartbeats) free.
            return await asyncio.to_thread(_read_answer, schema, _text_of(response))

        return await self._with_retries(purpose, attempt)

    # ---- embeddings -------------------------------------------------------------------------------------

    async def embed(self, texts: Sequence[str], task: Literal["document", "query"]) -> list[list[float]]:
        """Unit-length vectors of `embedding_dimensions` values, one request per 100 texts.

        Truncated Gemini embeddings are not normalised by the API, and cosine search assumes unit length.
        """
        if not texts:
            return []
        task_type = "RETRIEVAL_DOCUMENT" if task == "document" else "RETRIEVAL_QUERY"
        config = types.EmbedContentConfig(
            task_type=task_type, output_dimensionality=self.embedding_dimensions
        )
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH_SIZE):
            chunk = list(texts[start : start + EMBED_BATCH_SIZE])

            async def attempt(chunk: list[str] = chunk) -> list[list[float]]:
                response = await self._client.aio.models.embed_content(
                    model=self.embedding_model,
                    contents=[types.Content(parts=[types.Part(text=t)]) for t in chunk],
                    config=config,
                )
                self.usage.record(Purpose.EMBED, response.usage_metadata)
                embeddings = response.embeddings or []
                if len(embeddings) != len(chunk):
                    raise _MalformedAnswer(
                        f"Gemini returned {len(embeddings)} embeddings for {len(chunk)} texts"
                    )
                batch = [list(e.values or []) for e in embeddings]
                if any(not all(map(math.isfinite, v)) or not any(v) for v in batch):
                    # A NaN or all-zero vector would match nothing (or everything) in cosine search.
                    raise _MalformedAnswer(
                        "Gemini returned an embedding that is not a direction (NaN or zero)"
                    )
                return batch

            batch = await self._with_retries(Purpose.EMBED, attempt)
            for values in batch:
                # gemini-embedding-001 is Matryoshka-trained: a longer vector cut to its first N values (then
                # normalised) is what output_dimensionality gives, so an endpoint that ignores it still works.
                values = values[: self.embedding_dimensions]
                if len(values) != self.embedding_dimensions:
                    self.usage.add(Purpose.EMBED, errors=1)
                    raise ModelError(
                        f"Gemini returned a {len(values)}-dimensional embedding from {self.embedding_model!r}; "
                        f"EMBEDDING_DIMENSIONS is {self.embedding_dimensions}",
                        purpose=Purpose.EMBED,
                    )
                vectors.append(_normalised(values))
            self.usage.add(Purpose.EMBED, embedded_texts=len(chunk))
        return vectors

    # ---- chat -------------------------------------------------------------------------------------------

    async def chat_stream(
        self, *, system: str, turns: Sequence[ChatTurn], tools: Sequence[ChatTool] = ()
    ) -> AsyncGenerator[str | ToolCall, None]:
        """Yield the chat model's reply as text deltas, and the tools it calls as `ToolCall`s.

        Retries only while nothing has been yielded (a retry after that would repeat text the caller already
        showed). Raises ModelRefusal when blocked, ModelError on other failures.
        """
        contents = _contents(turns)
        if not contents:
            raise ModelError("there is nothing to answer: every turn is empty", purpose=Purpose.CHAT)
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            automatic_function_calling=_NO_AFC,
            http_options=self._stream_http_options,
            tools=[_tool(tools)] if tools else None,
        )

        async def attempt() -> AsyncGenerator[str | ToolCall, None]:
            metadata: Any = None
            answered = False
            stream: Any = None
            try:
                async with self._deadline():
                    stream = await self._client.aio.models.generate_content_stream(
                        model=self.chat_model, contents=contents, config=config
                    )
                saw_candidate = False
                while True:
                    try:
                        async with self._deadline():
                            chunk = await anext(stream)
                    except StopAsyncIteration:
                        break
                    if not answered:
                        answered = True
                        self.usage.add(Purpose.CHAT, calls=1)
                    metadata = chunk.usage_metadata or metadata
                    saw_candidate = saw_candidate or bool(chunk.candidates)
                    self._raise_if_refused(Purpose.CHAT, chunk, final=False)
                    text = _text_of(chunk)
                    if text:
                        yield text
                    for call in _calls_of(chunk):
                        yield call
                if not saw_candidate:
                    raise _MalformedAnswer("Gemini returned no answer candidates")
            finally:
                self.usage.add_tokens(Purpose.CHAT, metadata)
                if stream is not None:
                    with contextlib.suppress(Exception):
                        await stream.aclose()

        async with contextlib.aclosing(self._retrying(Purpose.CHAT, attempt)) as pieces:
            async for piece in pieces:
                yield piece

    async def aclose(self) -> None:
        """Close the HTTP sessions; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            await self._client.aio.aclose()

    # ---- retry machinery --------------------------------------------------------------------------------

    async def _with_retries(self, purpose: Purpose, attempt: Callable[[], Awaitable[R]]) -> R:
        """Run `attempt` under the per-attempt deadline, retrying transient failures within the budget."""

        async def once() -> AsyncGenerator[R, None]:
            async with self._deadline():
                result = await attempt()
            yield result

        [result] = [r async for r in self._retrying(purpose, once)]
        return result

    async def _retrying(
        self, purpose: Purpose, attempt: Callable[[], AsyncGenerator[R, None]]
    ) -> AsyncGenerator[R, None]:
        """The one retry loop: yield what `attempt()` yields, trying again on a transient failure while
        nothing has been yielded (a retry after that would repeat what the caller already showed), with
        backoff or the server's hint, within the retry budget. A refusal is never retried."""
        tries = 0
        while True:
            yielded = False
            try:
                async with contextlib.aclosing(attempt()) as items:  # a reader stopping early closes it
                    async for item in items:
                        yielded = True
                        yield item
                return
            except ModelRefusal:
                self.usage.add(purpose, errors=1)
                raise
            except Exception as exc:
                error = self._classify(purpose, exc)
                if error is None:
                    raise
                if yielded or not error.retryable or tries >= self.max_retries:
                    self.usage.add(purpose, errors=1)
                    raise self._final(self._broke_off(error, exc) if yielded else error, tries) from exc
                await self._pause_before_retry(purpose, error, exc, tries)
                tries += 1

    def _broke_off(self, error: ModelError, exc: BaseException) -> ModelError:
        """The error of a stream that was reached and then broke (a dropped connection, a stall)."""
        cause = (
            str(error)
            if isinstance(exc, ModelError | TimeoutError | genai_errors.APIError)
            else f"{type(exc).__name__}: {exc}"
        )
        return ModelError(
            self._scrub(f"Gemini's reply stream broke off midway ({cause})"),
            purpose=error.purpose,
            status=error.status,
            retryable=error.retryable,
        )

    def _deadline(self) -> contextlib.AbstractAsyncContextManager[Any]:
        if self.timeout_seconds > 0:
            return asyncio.timeout(self.timeout_seconds)
        return contextlib.nullcontext()

    async def _pause_before_retry(
        self, purpose: Purpose, error: ModelError, exc: BaseException, tries: int
    ) -> None:
        hint = _retry_hint(exc)
        if hint is not None:
            delay = min(hint, self.backoff_max_seconds * 2)
        else:
            delay = random.uniform(0, min(self.backoff_max_seconds, self.backoff_base_seconds * 2**tries))
        self.usage.add(purpose, retries=1)
        log.warning(
            "Gemini %s request failed (status %s): %s; retry %d/%d in %.2fs%s",
            purpose.value,
            error.status if error.status is not None else "-",
            error,
            tries + 1,
            self.max_retries,
            delay,
            " (server's hint)" if hint is not None else "",
        )
        await asyncio.sleep(delay)

    def _final(self, error: ModelError, retries: int) -> ModelError:
        if error.retryable and retries:
            return type(error)(
                f"{error} (gave up after {retries + 1} attempts)",
                purpose=error.purpose,
                status=error.status,
                retryable=error.retryable,
            )
        return error

    def _classify(self, purpose: Purpose, exc: BaseException) -> ModelError | None:
        """Turn a failure into a ModelError saying whether a retry can help; None for programming errors."""
        model = {Purpose.CHAT: self.chat_model, Purpose.EMBED: self.embedding_model}.get(
            purpose, self.memory_model
        )
        if isinstance(exc, ModelError):
            return exc
        if isinstance(exc, genai_errors.APIError):
            return self._api_error(purpose, model, exc)
        if isinstance(exc, TimeoutError):
            return ModelError(
                f"Gemini did not answer within {self.timeout_seconds:g}s ({purpose.value}, {model})",
                purpose=purpose,
                retryable=True,
            )
        if isinstance(exc, _OffSchemaAnswer):
            return ModelBadAnswer(self._scrub(str(exc)), purpose=purpose, retryable=True)
        if isinstance(exc, _MalformedAnswer | genai_errors.UnknownApiResponseError | json.JSONDecodeError):
            # JSONDecodeError: a 200 whose body is not JSON at all (a proxy's HTML page, a cut-off answer),
            # which says more about the endpoint than about this input: retried, and waited out.
            text = str(exc) if isinstance(exc, _MalformedAnswer) else f"unreadable answer: {exc}"
            return ModelError(self._scrub(text), purpose=purpose, retryable=True)
        if isinstance(exc, aiohttp.ClientError | OSError) or type(exc).__module__.split(".")[0] in {
            "httpx",
            "httpx2",
            "httpcore",
        }:
            where = self.base_url or "the Gemini API"
            return ModelError(
                self._scrub(f"could not reach {where}: {type(exc).__name__}: {first_line(exc)}"),
                purpose=purpose,
                retryable=True,
            )
        return None

    def _api_error(self, purpose: Purpose, model: str, exc: genai_errors.APIError) -> ModelError:
        status = exc.code
        detail = self._scrub(
            f"HTTP {status} {exc.status or ''}".rstrip() + f": {exc.message or 'no message'}"
        )
        reasons = {d.get("reason") for d in _error_details(exc) if isinstance(d, dict)}
        if status in (401, 403) or "API_KEY_INVALID" in reasons:
            return ModelKeyRejected(
                f"Gemini rejected the API key (check GEMINI_API_KEY) [{detail}]",
                purpose=purpose,
                status=status,
            )
        if status == 404:
            text = f"Gemini does not know model {model!r} or this endpoint [{detail}]"
        elif status == 429:
            text = f"Gemini rate limit or quota exhausted [{detail}]"
        elif status >= 500:
            text = f"Gemini server error [{detail}]"
        else:
            text = f"Gemini rejected the {purpose.value} request [{detail}]"
        return ModelError(text, purpose=purpose, status=status, retryable=status in RETRYABLE_STATUS)

    def _raise_if_refused(
        self, purpose: Purpose, response: types.GenerateContentResponse, *, final: bool
    ) -> None:
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason:
            reason = _enum_text(feedback.block_reason)
            message = feedback.block_reason_message or ""
            raise ModelRefusal(
                f"Gemini blocked the prompt ({reason}){': ' + message if message else ''}", purpose=purpose
            )
        candidates = response.candidates or []
        if not candidates:
            if final:  # no block reason given: an odd answer from the endpoint, not a verdict on the text
                raise _MalformedAnswer("Gemini returned no answer candidates")
            return
        reason = _enum_text(candidates[0].finish_reason)
        if reason in REFUSAL_FINISH_REASONS:
            raise ModelRefusal(f"Gemini stopped the answer (finish reason {reason})", purpose=purpose)

    def _scrub(self, text: str) -> str:
        if self._api_key and len(self._api_key) >= 4:
            text = text.replace(self._api_key, "****")
        return text


def _contents(turns: Sequence[ChatTurn]) -> list[types.Content]:
    """Gemini contents from turns; consecutive turns of one role become parts of one Content."""
    contents: list[types.Content] = []
    for turn in turns:
        parts = _parts(turn)
        if not parts:
            continue
        if contents and contents[-1].role == turn.role and contents[-1].parts is not None:
            contents[-1].parts.extend(parts)
        else:
            contents.append(types.Content(role=turn.role, parts=parts))
    return contents


def _parts(turn: ChatTurn) -> list[types.Part]:
    """A turn's parts: its text, then attachments (images as inline data), tool calls and their results.

    A call goes back with its id and thought signature, which Gemini requires of a conversation that
    continues after a function call.
    """
    parts = [types.Part(text=turn.text)] if turn.text.strip() else []
    for item in turn.parts:
        if isinstance(item, InlineData):
            parts.append(types.Part.from_bytes(data=item.data, mime_type=item.mime_type))
        elif item.strip():
            parts.append(types.Part(text=item))
    parts += [
        types.Part(
            function_call=types.FunctionCall(id=call.id, name=call.name, args=call.args),
            thought_signature=call.signature,
        )
        for call in turn.calls
    ]
    parts += [
        types.Part(
            function_response=types.FunctionResponse(id=result.id, name=result.name, response=result.response)
        )
        for result in turn.results
    ]
    return parts


def _tool(tools: Sequence[ChatTool]) -> types.Tool:
    return types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name=tool.name,
                description=tool.description,
                parameters=types.Schema(
                    type=types.Type.OBJECT,
                    properties={
                        name: types.Schema(type=types.Type.STRING, description=about)
                        for name, about in tool.parameters.items()
                    },
                    required=[name for name in tool.parameters if name not in tool.optional],
                ),
            )
            for tool in tools
        ]
    )


def _calls_of(response: types.GenerateContentResponse) -> list[ToolCall]:
    """The function calls in the first candidate (arguments as the model gave them)."""
    if not response.candidates or response.candidates[0].content is None:
        return []
    return [
        ToolCall(
            p.function_call.name,
            dict(p.function_call.args or {}),
            id=p.function_call.id,
            signature=p.thought_signature,
        )
        for p in response.candidates[0].content.parts or []
        if p.function_call is not None and p.function_call.name
    ]


def _text_of(response: types.GenerateContentResponse) -> str:
    """The first candidate's visible text (thoughts left out), without the SDK's non-text warnings."""
    if not response.candidates:
        return ""
    content = response.candidates[0].content
    if content is None or not content.parts:
        return ""
    return "".join(p.text for p in content.parts if p.text and not p.thought)


def _read_answer(schema: type[T], answer: str) -> T:
    """The answer's JSON validated against `schema`, leniently (see `_strip_fences`, `_bare_list_as`)."""
    text = _strip_fences(answer)
    try:
        return schema.model_validate_json(text)
    except pydantic.ValidationError as exc:
        wrapped = _bare_list_as(schema, text)
        if wrapped is not None:
            return wrapped
        raise _OffSchemaAnswer(_describe_invalid(schema, text, exc)) from exc


def _describe_invalid(schema: type[pydantic.BaseModel], text: str, exc: pydantic.ValidationError) -> str:
    """One line for the logs: invalid JSON (often a cut-off answer) or JSON of the wrong shape."""
    errors = exc.errors()
    first: dict[str, Any] = dict(errors[0]) if errors else {}
    if first.get("type") == "json_invalid":
        return f"Gemini answered with invalid JSON ({first.get('msg', 'invalid')}; {len(text)} characters)"
    where = ".".join(str(p) for p in first.get("loc", ())) or "answer"
    return f"Gemini answered with JSON that does not fit {schema.__name__} ({where}: {first.get('msg', 'invalid')})"


_FENCED = re.compile(r"```[A-Za-z]*\s*(.*?)\s*```", re.S)


def _strip_fences(text: str) -> str:
    """The JSON in a model's text: as it is, else inside a ``` fence, else from the first { to the last }.

    Models asked for JSON sometimes add a fence or a sentence around it; the schema check comes after.
    """
    stripped = text.strip()
    if stripped.startswith(("{", "[")) or not stripped:
        return stripped
    fenced = _FENCED.search(stripped)
    if fenced:
        return fenced.group(1)
    start, end = stripped.find("{"), stripped.rfind("}")
    return stripped[start : end + 1] if 0 <= start < end else stripped


def _bare_list_as(schema: type[T], text: str) -> T | None:
    """`[...]` read as `{"facts": [...]}` when the schema's one required field is that list (the others
    having defaults); None when it does not fit."""
    fields = [(name, f) for name, f in schema.model_fields.items() if f.is_required()]
    if len(fields) != 1 or not str(fields[0][1].annotation).startswith("list["):
        return None
    try:
        items = json.loads(text)
        return schema.model_validate({fields[0][0]: items}) if isinstance(items, list) else None
    except (ValueError, pydantic.ValidationError):
        return None


def _normalised(values: Sequence[float]) -> list[float]:
    norm = math.sqrt(math.fsum(v * v for v in values))
    if norm == 0 or not math.isfinite(norm):
        return [float(v) for v in values]
    return [v / norm for v in values]


def _enum_text(value: Any) -> str:
    if value is None:
        return ""
    return str(getattr(value, "value", value))


def _error_details(exc: genai_errors.APIError) -> list[Any]:
    body = exc.details
    if isinstance(body, dict):
        error = body.get("error", body)
        details = error.get("details") if isinstance(error, dict) else None
        if isinstance(details, list):
            return details
    return []


def _retry_hint(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait: the Retry-After header, else a google.rpc.RetryInfo detail."""
    if not isinstance(exc, genai_errors.APIError):
        return None
    headers = getattr(exc.response, "headers", None)
    raw = headers.get("Retry-After") if headers is not None else None
    if raw:
        try:
            return max(0.0, float(raw))
        except ValueError:
            with contextlib.suppress(TypeError, ValueError):
                when = email.utils.parsedate_to_datetime(raw)
                return max(0.0, when.timestamp() - time.time())
    for detail in _error_details(exc):
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return max(0.0, float(match.group(1)))
    return None
