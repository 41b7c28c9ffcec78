"""The only module that speaks to the `openai` library: any OpenAI-compatible endpoint (OpenAI, OpenRouter,
Ollama, LM Studio, vLLM, a llama.cpp server) for structured JSON, streamed chat and embeddings.

Endpoints differ in what they honour, so each feature has a way down rather than an error for people:
- JSON answers ask for the response schema (`json_schema`); an endpoint refusing it (a 400 naming
  `response_format`) is asked for JSON mode with the schema (`json_object` with `schema`, which
  llama-cpp-python's server turns into a grammar), then for JSON mode, then for the schema in the
  instruction. Every answer is validated, and one that does not fit gets one repair request (the bad
  answer and what is wrong with it); an endpoint that ignores `response_format` (or the schema beside
  JSON mode) from then on gets the schema in the instruction too.
- A JSON call given a check on its partial answer (`stop_early`) is streamed and closed as soon as the
  check gives a reason: a small model counting every line stops there, not at its token budget.
- Tools and images are offered until the endpoint refuses them (a 400 naming tools or images; or the
  settings switch them off): the request goes again without them, the log says so once, and the chat
  goes on without them (`features` says what holds, for `check --online`).
- Embeddings come at the model's own size; `dimensions=` is sent only when EMBEDDING_DIMENSIONS asks for
  fewer than the model gives.
The `openai` library's own retries are off: every call runs through the shared retry loop (retry.py).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar
from urllib.parse import urlsplit

import openai
import pydantic

from bot.llm.answers import (
    MalformedAnswer,
    OffSchemaAnswer,
    checked_vectors,
    normalised,
    plain_schema,
    read_answer,
)
from bot.llm.pace import MAX_DEADLINE_SECONDS
from bot.llm.retry import THINKING_TOKENS, RetryingClient, retry_after
from bot.llm.usage import Usage, tokens
from bot.memory.ports import (
    REPLY_CUT_NOTE,
    ChatTool,
    ChatTurn,
    InlineData,
    ModelCutOff,
    ModelError,
    ModelRefusal,
    PartialCheck,
    Purpose,
    ToolCall,
)

if TYPE_CHECKING:
    from bot.config import Settings

log = logging.getLogger(__name__)

T = TypeVar("T", bound=pydantic.BaseModel)

EMBED_BATCH_SIZE = 100
JSON_TEMPERATURE = 0.2
JSON_MODES = ("schema", "object_schema", "object", "prompt")  # the ways down, in order
NO_IMAGE = "[an image the model cannot see: this endpoint takes no images]"
# Said to a model whose endpoint takes no tools, so it never claims to have done what only a tool does.
NO_TOOLS = (
    "You have no tools here: you cannot remember, forget or look anything up yourself. When someone asks "
    "you to remember or forget something, tell them to use /remember or /forget."
)
REPAIR = (
    "That answer cannot be used: {error}. Answer again with only the JSON object, no other text, "
    "matching this JSON Schema:\n{schema}"
)
SCHEMA_INSTRUCTION = "Answer with one JSON object only, no other text, matching this JSON Schema:\n{schema}"
_REFUSING_WORDS = {
    "tools": ("tool", "function"),
    "images": ("image", "vision", "multimodal", "image_url"),
    "response_format": ("response_format", "json_schema", "json_object", "structured output"),
    "stream_options": ("stream_options", "include_usage"),
}


def endpoint_name(base_url: str) -> str:
    """How messages name the endpoint: "OpenAI" for OpenAI's API, else its host (and port)."""
    host = urlsplit(base_url).netloc if base_url else ""
    return "OpenAI" if not host or host == "api.openai.com" else host


# How many answers in a row must ignore response_format before the schema goes into the instruction, and
# after how many answers with it there response_format alone is tried again (an endpoint's model or
# server may change under the same URL).
IGNORED_EVIDENCE = 3
STEP_UP_AFTER = 100


class EmptyStream(MalformedAnswer):
    """A reply stream that ended before its first chunk."""


@dataclass
class Features:
    """What the endpoint is taken to support, from the settings and what it has refused so far."""

    tools: bool = True
    images: bool = True
    json_mode: str = "schema"  # one of JSON_MODES
    schema_in_prompt: bool = False  # also when the endpoint ignores response_format
    ignored_in_a_row: int = 0  # answers that ignored response_format, since the last that followed it
    answers_since_step_down: int = 0  # JSON answers since the schema went into the instruction
    stream_usage: bool = True
    send_dimensions: bool = False


class OpenAICompatClient(RetryingClient):
    """An OpenAI-compatible endpoint for the bot: JSON answers, a streamed chat reply, embeddings."""

    log = log
    api_errors = (openai.APIError,)
    unreadable: ClassVar[tuple[type[BaseException], ...]] = (
        openai.APIResponseValidationError,
        json.JSONDecodeError,
    )

    def __init__(
        self,
        *,
        api_key: str = "",
        base_url: str = "",
        chat_model: str,
        memory_model: str,
        embedding_model: str,
        embedding_dimensions: int,
        timeout_seconds: float = 60.0,
        max_retries: int = 4,
        backoff_base_seconds: float = 1.0,
        backoff_max_seconds: float = 30.0,
        tools: bool = True,
        images: bool = True,
        json_mode: Literal["auto", "schema", "object_schema", "object", "prompt"] = "auto",
        usage: Usage | None = None,
        chat_max_tokens: int | None = None,
    ) -> None:
        """`chat_max_tokens`: every chat request's output limit (CHAT_MAX_OUTPUT_TOKENS), so a reply that
        runs away stops at the model; None: the model's own."""
        super().__init__(
            api_key=api_key,
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
            backoff_base_seconds=backoff_base_seconds,
            backoff_max_seconds=backoff_max_seconds,
            usage=usage,
        )
        self.base_url = base_url.rstrip("/")
        self.provider = endpoint_name(self.base_url)
        self.chat_model = chat_model
        self.chat_max_tokens = chat_max_tokens
        self.memory_model = memory_model
        self.embedding_model = embedding_model
        self.embedding_dimensions = embedding_dimensions
        self.json_fallback = json_mode == "auto"
        self.features = Features(
            tools=tools, images=images, json_mode="schema" if json_mode == "auto" else json_mode
        )
        self.switched_off = {name for name, on in (("tools", tools), ("images", images)) if not on}
        for name in sorted(self.switched_off):
            log.info("OPENAI_%s=off: the chat model gets no %s", name.upper(), name)
        # The deadlines are the bot's own (`_timed`, per chunk of a stream), which a slow endpoint's pace
        # stretches: the library's only stops a request nothing else would.
        http_timeout = MAX_DEADLINE_SECONDS if timeout_seconds > 0 else None
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "none",  # a local server wants no key; the library wants some text
            base_url=self.base_url or None,
            timeout=http_timeout,
            max_retries=0,
        )
        self.images_answered = False  # an image went through once: a later failure is not about images
        self._closed = False

    @classmethod
    def from_settings(
        cls, settings: Settings, usage: Usage | None = None, *, part: Literal["chat", "embeddings"] = "chat"
    ) -> OpenAICompatClient:
        """The client of the settings' endpoint; `part`: which role it plays (for the model names)."""
        own = part == "embeddings" and bool(settings.embedding_base_url)  # an endpoint of its own
        return cls(
            api_key=settings.embedding_api_key if own else settings.openai_api_key,
            base_url=settings.embedding_base_url if own else settings.openai_base_url,
            chat_model=settings.chat_model_name if part == "chat" else "",
            memory_model=settings.memory_model_name if part == "chat" else "",
            embedding_model=settings.embedding_model,
            embedding_dimensions=settings.embedding_dimensions,
            timeout_seconds=settings.openai_timeout_seconds,
            max_retries=settings.openai_max_retries,
            tools=settings.openai_tools != "off",
            images=settings.openai_images != "off",
            json_mode=settings.openai_json,  # type: ignore[arg-type]  # checked by the settings' parser
            usage=usage,
            chat_max_tokens=settings.chat_max_output_tokens,
        )

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatClient(base_url={self.base_url or 'default'!r}, chat_model={self.chat_model!r})"

    # ---- structured JSON --------------------------------------------------------------------------------

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
        """Ask the memory model for an answer shaped like `schema`: validated, repaired once, retried; one
        cut off at `max_output_tokens` (finish reason "length") is ModelCutOff at once. With `stop_early`
        the answer is streamed and read as it comes: once the check gives a reason, the request is
        closed (the server stops generating) and that is ModelCutOff too."""
        limit = self._token_limit(max_output_tokens)
        schema_text = json.dumps(plain_schema(schema), separators=(",", ":"))

        async def attempt() -> T:
            messages: list[Any] = [{"role": "user", "content": prompt}]
            answer = await self._json_answer(
                purpose, system, messages, schema, schema_text, limit, stop_early
            )
            try:
                read = await asyncio.to_thread(read_answer, schema, answer, self.provider)
                self._note_followed_format()
                return read
            except OffSchemaAnswer as exc:
                self._note_ignored_format(exc)
                messages += [
                    {"role": "assistant", "content": answer},
                    {"role": "user", "content": REPAIR.format(error=exc, schema=schema_text)},
                ]
                repaired = await self._json_answer(
                    purpose, system, messages, schema, schema_text, limit, stop_early
                )
                return await asyncio.to_thread(read_answer, schema, repaired, self.provider)

        return await self._with_retries(purpose, attempt)

    def _token_limit(self, tokens: int | None) -> dict[str, int]:
        """The answer's token limit as the endpoint names it: OpenAI's own API wants
        `max_completion_tokens` (its reasoning models refuse `max_tokens`), local servers `max_tokens`."""
        if tokens is None:
            return {}
        return {"max_completion_tokens" if self.provider == "OpenAI" else "max_tokens": tokens}

    def _json_instruction(self, system: str, schema_text: str) -> str:
        """The system instruction, with the schema written out unless the endpoint holds the answer to
        it (a schema it takes costs no prompt tokens: 262 of 1,705 for a selection on a local model)."""
        features = self.features
        if features.json_mode in ("schema", "object_schema") and not features.schema_in_prompt:
            return system
        return "\n\n".join(p for p in (system, SCHEMA_INSTRUCTION.format(schema=schema_text)) if p)

    def _note_ignored_format(self, exc: OffSchemaAnswer) -> None:
        """An answer asked for in a JSON mode that is not JSON at all, or any answer off the schema in
        JSON mode with the schema (an endpoint may take the `schema` key and ignore it): the schema goes
        in the instruction from now on."""
        features = self.features
        ignored = "invalid JSON" in str(exc) or features.json_mode == "object_schema"
        if not ignored or features.schema_in_prompt or features.json_mode == "prompt":
            return
        features.ignored_in_a_row += 1
        if features.ignored_in_a_row < IGNORED_EVIDENCE:  # one odd answer is no evidence of an endpoint
            return
        features.schema_in_prompt = True
        features.answers_since_step_down = 0
        log.warning(
            "%s seems to ignore response_format (%s answered without JSON %d times in a row); the schema "
            "now goes in the instruction, and response_format alone is tried again after %d answers",
            self.provider,
            self.memory_model,
            features.ignored_in_a_row,
            STEP_UP_AFTER,
        )

    def _note_followed_format(self) -> None:
        """A JSON answer read well: the endpoint followed response_format (the evidence against it starts
        over), or, while the schema is in the instruction, one more answer towards trying without it."""
        features = self.features
        if not features.schema_in_prompt:
            features.ignored_in_a_row = 0
            return
        features.answers_since_step_down += 1
        if features.answers_since_step_down >= STEP_UP_AFTER:
            features.schema_in_prompt = False
            features.ignored_in_a_row = 0
            log.info("%s: trying response_format without the schema in the instruction again", self.provider)

    async def _json_answer(
        self,
        purpose: Purpose,
        system: str,
        turns: list[Any],
        schema: type[T],
        schema_text: str,
        limit: dict[str, int],
        stop_early: PartialCheck | None = None,
    ) -> str:
        """One JSON request in the best mode the endpoint takes (stepping down on a 400 naming it)."""
        while True:
            instruction = self._json_instruction(system, schema_text)
            messages = [{"role": "system", "content": instruction}, *turns] if instruction else turns
            options: dict[str, Any] = dict(limit)
            mode = self.features.json_mode
            if mode == "schema":
                options["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": schema.__name__, "schema": json.loads(schema_text)},
                }
            elif mode == "object_schema":
                options["response_format"] = {"type": "json_object", "schema": json.loads(schema_text)}
            elif mode == "object":
                options["response_format"] = {"type": "json_object"}
            if stop_early is not None:
                options["stream"] = True
                if self.features.stream_usage:
                    options["stream_options"] = {"include_usage": True}
            try:
                response = await self._client.chat.completions.create(
                    model=self.memory_model,
                    messages=messages,
                    temperature=JSON_TEMPERATURE,
                    **options,
                )
            except openai.APIStatusError as exc:
                if "stream_options" in options and _refuses(exc, "stream_options"):
                    self.features.stream_usage = False  # said by the chat when it meets the same refusal
                    continue
                if not (self.json_fallback and mode != "prompt" and _refuses(exc, "response_format")):
                    raise
                self.features.json_mode = JSON_MODES[JSON_MODES.index(mode) + 1]
                log.warning(
                    "%s refuses response_format %s (%s); asking with %s instead",
                    self.provider,
                    mode,
                    _message(exc),
                    self.features.json_mode,
                )
                continue
            if stop_early is not None:
                return await self._streamed_answer(purpose, response, stop_early)
            self._require_json(response)
            self.usage.record(purpose, *_tokens(response.usage))
            return self._answer_text(purpose, response)

    def _require_json(self, response: Any) -> None:
        """An answer the SDK could not read as JSON comes back as the body's text (a proxy's or a login
        page's HTML with status 200): named as such, and worth another try, never "'str' object has no
        attribute 'usage'"."""
        if isinstance(response, str | bytes):
            start = " ".join(str(response[:80]).split())
            raise MalformedAnswer(
                f"{self.where} answered with something that is not JSON (an HTML page?): {start!r}"
            )

    async def _streamed_answer(self, purpose: Purpose, stream: Any, stop_early: PartialCheck) -> str:
        """A streamed JSON answer's text, judged by `stop_early` as it grows. Without usage in the stream
        (llama-cpp-python sends none) its pieces are counted as output tokens: a local server streams a
        token a piece."""
        text, pieces, usage, finished = "", 0, None, False
        try:
            async for chunk in stream:
                usage = chunk.usage or usage
                for choice in chunk.choices or []:
                    self._check_ending(purpose, choice.finish_reason, getattr(choice.delta, "refusal", None))
                    finished |= choice.finish_reason is not None
                    if choice.delta is not None and choice.delta.content:
                        text += choice.delta.content
                        pieces += 1
                if pieces and (reason := stop_early(text)):
                    raise ModelCutOff(
                        f"{self.provider}'s answer was stopped after {pieces} pieces: {reason}",
                        purpose=purpose,
                    )
            if not finished:  # a dropped connection or a proxy closing early: no answer to judge
                raise ModelError(
                    f"{self.provider}'s answer stream ended before the answer did ({pieces} pieces)",
                    purpose=purpose,
                    retryable=True,
                )
        finally:
            with contextlib.suppress(Exception):
                await stream.close()  # closing the request is what stops a server generating
            prompt_tokens, output_tokens = _tokens(usage) if usage is not None else (0, pieces)
            self.usage.record(purpose, prompt_tokens, output_tokens)
        return text

    def _answer_text(self, purpose: Purpose, response: Any) -> str:
        if not response.choices:
            raise MalformedAnswer(f"{self.provider} returned no answer choices")
        choice = response.choices[0]
        self._check_ending(purpose, choice.finish_reason, getattr(choice.message, "refusal", None))
        return str(choice.message.content or "")

    def _check_ending(self, purpose: Purpose, finish_reason: str | None, refusal: str | None) -> None:
        """Raise for an answer (or a streamed piece of one) that was refused or cut off at its limit."""
        if finish_reason == "content_filter" or refusal:
            raise ModelRefusal(
                f"{self.provider} would not answer ({refusal or 'finish reason content_filter'})",
                purpose=purpose,
            )
        if finish_reason == "length":
            raise ModelCutOff(
                f"{self.provider}'s answer reached its token limit and was cut off", purpose=purpose
            )

    # ---- embeddings -------------------------------------------------------------------------------------

    async def embed(self, texts: Sequence[str], task: Literal["document", "query"]) -> list[list[float]]:
        """Unit-length vectors of `embedding_dimensions` values, one request per 100 texts.

        The task is not sent: the OpenAI API has none (a model that wants prefixes gets the text as is).
        """
        if not texts:
            return []
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH_SIZE):
            chunk = list(texts[start : start + EMBED_BATCH_SIZE])

            async def attempt(chunk: list[str] = chunk) -> list[list[float]]:
                return await self._embed_batch(chunk)

            batch = await self._with_retries(Purpose.EMBED, attempt, foreground=task == "query")
            vectors += [normalised(v) for v in batch]
            self.usage.add(Purpose.EMBED, embedded_texts=len(chunk))
        return vectors

    async def _embed_batch(self, chunk: list[str]) -> list[list[float]]:
        wanted = self.embedding_dimensions
        while True:
            options = {"dimensions": wanted} if self.features.send_dimensions else {}
            response = await self._client.embeddings.create(
                model=self.embedding_model,
                input=chunk,
                encoding_format="float",
                **options,  # type: ignore[arg-type]
            )
            self._require_json(response)
            self.usage.record(Purpose.EMBED, *_tokens(response.usage))
            ordered = sorted(response.data or [], key=lambda d: d.index)
            batch = checked_vectors([list(d.embedding) for d in ordered], len(chunk), self.provider)
            size = len(batch[0])
            if size > wanted and not self.features.send_dimensions:
                # More than asked for: the model's own size is larger, so ask it for fewer (once, then always).
                self.features.send_dimensions = True
                log.info("%s gives %d dimensions; asking for %d", self.embedding_model, size, wanted)
                continue
            if any(len(v) != wanted for v in batch):
                hint = (
                    "it ignores `dimensions`"
                    if size > wanted
                    else f"set EMBEDDING_DIMENSIONS={size}, its own size"
                )
                raise ModelError(
                    f"{self.provider} returned a {size}-dimensional embedding from {self.embedding_model!r}; "
                    f"EMBEDDING_DIMENSIONS is {wanted} ({hint})",
                    purpose=Purpose.EMBED,
                )
            return batch

    # ---- chat -------------------------------------------------------------------------------------------

    async def chat_stream(
        self, *, system: str, turns: Sequence[ChatTurn], tools: Sequence[ChatTool] = ()
    ) -> AsyncGenerator[str | ToolCall, None]:
        """Yield the chat model's reply as text deltas, and the tools it calls as `ToolCall`s.

        Retries only while nothing has been yielded. Raises ModelRefusal when the endpoint's filter stops
        the answer, ModelError on other failures.
        """
        if not any(t.text.strip() or t.parts or t.calls or t.results for t in turns):
            raise ModelError("there is nothing to answer: every turn is empty", purpose=Purpose.CHAT)

        async def attempt() -> AsyncGenerator[str | ToolCall, None]:
            while True:
                with_images = self.features.images and _has_images(turns)
                stream = await self._open_stream(system, turns, tools)
                try:
                    async for piece in self._pieces(stream):
                        self.images_answered |= with_images
                        yield piece
                    return
                except EmptyStream as exc:
                    if not (with_images and self._drop_images(str(exc))):
                        raise

        offered = {t.name for t in tools} if self.features.tools else set()
        async with contextlib.aclosing(self._retrying(Purpose.CHAT, attempt)) as pieces:
            async for piece in calls_written_as_text(pieces, offered):
                yield piece

    async def _pieces(self, stream: Any) -> AsyncGenerator[str | ToolCall, None]:
        """A reply stream's text deltas, then its gathered tool calls; EmptyStream when nothing came."""
        calls: dict[int, dict[str, Any]] = {}
        cut = False
        try:
            answered = False
            async for chunk in self._within_deadline(stream):
                if not answered:
                    answered = True
                    self.usage.add(Purpose.CHAT, calls=1)
                self.usage.add_tokens(Purpose.CHAT, *_tokens(chunk.usage))
                for choice in chunk.choices or []:
                    if choice.finish_reason == "content_filter":
                        raise ModelRefusal(
                            f"{self.provider} stopped the answer (finish reason content_filter)",
                            purpose=Purpose.CHAT,
                        )
                    cut = cut or choice.finish_reason == "length"
                    if choice.delta is None:
                        continue
                    if choice.delta.content:
                        yield choice.delta.content
                    for delta in choice.delta.tool_calls or []:
                        _gather_call(calls.setdefault(delta.index, {}), delta)
            if not answered:
                raise EmptyStream(f"{self.provider} returned an empty stream")
            for index in sorted(calls):
                if calls[index].get("name"):
                    yield _tool_call(calls[index], index)
            if cut:  # stopped at the reply's output limit: the reader is told it is not whole
                yield REPLY_CUT_NOTE
        finally:
            with contextlib.suppress(Exception):
                await stream.close()

    def _drop_images(self, why: str) -> bool:
        """A request with an image got an empty stream from an endpoint that has never answered one: a
        text-only model's chat template fails so in llama-cpp-python's server (the error comes after the
        stream's headers). Images go for good, said once; False when the image cannot be the cause."""
        if self.images_answered or not self.features.images:
            return False
        self.features.images = False
        log.warning(
            "%s (%s) failed a request with an image (%s): the bot goes on without images",
            self.provider,
            self.chat_model,
            why,
        )
        return True

    async def _open_stream(self, system: str, turns: Sequence[ChatTurn], tools: Sequence[ChatTool]) -> Any:
        """The streamed request with what the endpoint takes; a 400 naming tools, images or usage in the
        stream drops that for good and sends again (said once in the log)."""
        while True:
            features = self.features
            options: dict[str, Any] = {}
            instruction = system
            if tools and features.tools:
                options["tools"] = [_function(tool) for tool in tools]
            elif tools:
                instruction = f"{system}\n\n{NO_TOOLS}" if system else NO_TOOLS
            if features.stream_usage:
                options["stream_options"] = {"include_usage": True}
            if self.chat_max_tokens is not None:  # OpenAI's own reasoning models count their reasoning in it
                thinking = THINKING_TOKENS if self.provider == "OpenAI" else 0
                options.update(self._token_limit(self.chat_max_tokens + thinking))
            try:
                async with self._timed(Purpose.CHAT):  # a local server reads the prompt before answering
                    return await self._client.chat.completions.create(
                        model=self.chat_model,
                        messages=messages_of(instruction, turns, images=features.images),
                        stream=True,
                        **options,
                    )
            except openai.BadRequestError as exc:
                dropped = self._drop_refused(exc, tools=bool(options.get("tools")), turns=turns)
                if dropped is None:
                    raise

    def _drop_refused(
        self, exc: openai.BadRequestError, *, tools: bool, turns: Sequence[ChatTurn]
    ) -> str | None:
        """Switch off the feature a 400 names (tools, images, usage in the stream); None when none."""
        features = self.features
        has_images = features.images and _has_images(turns)
        if tools and _names(exc, "tools"):
            features.tools, name = False, "tools"
        elif has_images and _names(exc, "images"):
            features.images, name = False, "images"
        elif features.stream_usage and _names(exc, "stream_options"):
            features.stream_usage, name = False, "stream_options"
        else:
            return None
        log.warning(
            "%s (%s) refuses %s (%s): the bot goes on without them",
            self.provider,
            self.chat_model,
            name,
            _message(exc),
        )
        return name

    async def aclose(self) -> None:
        """Close the HTTP client; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            await self._client.close()

    # ---- what is the endpoint's in the retry loop -------------------------------------------------------

    def _api_error(self, purpose: Purpose, model: str, exc: BaseException) -> ModelError:
        if isinstance(exc, openai.APITimeoutError):
            return ModelError(
                f"{self.provider} did not answer within {self.timeout_seconds:g}s ({purpose.value}, {model})",
                purpose=purpose,
                retryable=True,
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return self._unreachable(purpose, cause)
        if isinstance(exc, openai.APIResponseValidationError) or not isinstance(exc, openai.APIStatusError):
            return ModelError(self._scrub(f"unreadable answer: {exc}"), purpose=purpose, retryable=True)
        status = exc.status_code
        detail = self._scrub(f"HTTP {status}: {_message(exc)}")
        rejected = status in (401, 403)
        return self._status_error(purpose, model, status, detail, key_rejected=rejected, key="OPENAI_API_KEY")

    def _retry_hint(self, exc: BaseException) -> float | None:
        """Seconds the server asked us to wait: retry-after-ms, else Retry-After."""
        if not isinstance(exc, openai.APIStatusError):
            return None
        headers = exc.response.headers
        with contextlib.suppress(TypeError, ValueError):
            millis = headers.get("retry-after-ms")
            if millis:
                return max(0.0, float(millis) / 1000)
        return retry_after(headers.get("retry-after"))


def messages_of(system: str, turns: Sequence[ChatTurn], *, images: bool) -> list[Any]:
    """Chat messages from turns: consecutive turns of one role join in one message; a model turn's tool
    calls go as the assistant's `tool_calls`, and the results after it as `tool` messages with their ids."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for turn in turns:
        for result in turn.results:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": result.id or result.name,
                    "content": json.dumps(result.response, ensure_ascii=False),
                }
            )
        parts = _content_parts(turn, images=images)
        role = "user" if turn.role == "user" else "assistant"
        if turn.calls:
            messages.append(
                {
                    "role": "assistant",
                    "content": _joined(parts) or None,
                    "tool_calls": [
                        {
                            "id": call.id or call.name,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": json.dumps(call.args, ensure_ascii=False),
                            },
                        }
                        for call in turn.calls
                    ],
                }
            )
            continue
        if not parts:
            continue
        last = messages[-1] if messages else None
        if last is not None and last["role"] == role and "tool_calls" not in last and role != "system":
            last["parts"] += parts
        else:
            messages.append({"role": role, "parts": parts})
    return [_finished(m) for m in messages]


def _content_parts(turn: ChatTurn, *, images: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text.strip() else []
    for item in turn.parts:
        if isinstance(item, InlineData):
            if images:
                url = f"data:{item.mime_type};base64,{base64.b64encode(item.data).decode('ascii')}"
                parts.append({"type": "image_url", "image_url": {"url": url}})
            else:
                parts.append({"type": "text", "text": NO_IMAGE})
        elif item.strip():
            parts.append({"type": "text", "text": item})
    return parts


def _joined(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p["text"] for p in parts if p["type"] == "text")


def _finished(message: dict[str, Any]) -> dict[str, Any]:
    """A message's content: plain text when it has no image (what every endpoint takes), else parts."""
    parts = message.pop("parts", None)
    if parts is None:
        return message
    if all(p["type"] == "text" for p in parts):
        message["content"] = _joined(parts)
    else:
        message["content"] = parts
    return message


def _function(tool: ChatTool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": {
                "type": "object",
                "properties": {
                    name: {"type": "string", "description": about} for name, about in tool.parameters.items()
                },
                "required": [name for name in tool.parameters if name not in tool.optional],
            },
        },
    }


def _gather_call(call: dict[str, Any], delta: Any) -> None:
    """A streamed tool call arrives in pieces: the id and name once, the arguments in fragments."""
    if delta.id:
        call["id"] = delta.id
    function = delta.function
    if function is not None:
        if function.name:
            call["name"] = function.name
        call["arguments"] = call.get("arguments", "") + (function.arguments or "")


# How small local models write a tool call as text when their server does not turn it into one:
# a JSON object, in a code fence, in <tool_call> tags or in doubled braces.
_WRITTEN_OPENINGS = ("{", "`", "<tool_call>")
_WRAPPERS = re.compile(r"^```(?:json)?\s*|\s*```$|^<tool_call>\s*|\s*</tool_call>$", re.I)


async def calls_written_as_text(
    pieces: AsyncIterator[str | ToolCall], offered: set[str]
) -> AsyncGenerator[str | ToolCall, None]:
    """The reply's pieces, with a call of an offered tool that the model wrote out as text (llama-cpp-
    python's server with a model whose template it cannot parse) turned into a `ToolCall`, so nobody is
    shown a JSON blob. A reply that starts like one is held back until it ends or stops looking like one."""
    held = ""
    passing = not offered
    async for piece in pieces:
        if passing or not isinstance(piece, str):
            yield piece
            continue
        held += piece
        start = held.lstrip()
        if start and not any(start.startswith(o) or o.startswith(start) for o in _WRITTEN_OPENINGS):
            passing = True
            yield held
    if passing or not held.strip():
        return
    call = _written_call(held, offered)
    yield call if call is not None else held


def _written_call(text: str, offered: set[str]) -> ToolCall | None:
    """The tool call a reply's text writes out, when it is one of an offered tool and nothing else."""
    body = _WRAPPERS.sub("", text.strip()).strip()
    while body.startswith("{{") and body.endswith("}}"):
        body = body[1:-1]
    try:
        written = json.loads(body)
    except ValueError:  # not JSON, or a number past Python's 4,300 digits
        return None
    if not isinstance(written, dict) or written.get("name") not in offered:
        return None
    args = written.get("arguments", written.get("parameters", {}))
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    return ToolCall(str(written["name"]), args if isinstance(args, dict) else {}, id="call_written_0")


def _tool_call(call: dict[str, Any], index: int) -> ToolCall:
    try:
        args = json.loads(call.get("arguments") or "{}")
    except ValueError:  # not JSON, or a number past Python's 4,300 digits: a call without arguments
        args = {}
    return ToolCall(
        str(call.get("name", "")),
        args if isinstance(args, dict) else {},
        id=call.get("id") or f"call_{index}",
    )


def _tokens(usage: Any) -> tuple[int, int]:
    if usage is None:
        return 0, 0
    return tokens(getattr(usage, "prompt_tokens", None)), tokens(getattr(usage, "completion_tokens", None))


def _message(exc: openai.APIStatusError) -> str:
    """The error's own words, from its body ({"error": {"message": ...}}) when it has one."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(exc.message)


def _has_images(turns: Sequence[ChatTurn]) -> bool:
    return any(isinstance(p, InlineData) for t in turns for p in t.parts)


def _refuses(exc: openai.APIStatusError, feature: str) -> bool:
    """Whether an error is the endpoint refusing `feature`: a 400 or 422 naming it, or a 500 naming it
    (llama-cpp-python's server answers its request validation errors with a 500)."""
    return exc.status_code in (400, 422, 500) and _names(exc, feature)


def _names(exc: openai.APIStatusError, feature: str) -> bool:
    """Whether a 400 is about `feature` (its words in the error's message)."""
    text = f"{_message(exc)} {json.dumps(exc.body) if exc.body is not None else ''}".lower()
    return any(word in text for word in _REFUSING_WORDS[feature])
