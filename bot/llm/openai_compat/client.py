"""The client of an OpenAI-compatible endpoint (the package's docstring says what it copes with): JSON
answers validated and repaired once, a streamed chat reply with tools, embeddings at the model's own size
unless EMBEDDING_DIMENSIONS asks for fewer. The `openai` library's own retries are off: every call runs
through the shared retry loop (retry.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import openai
import pydantic

from bot.llm.answers import OffSchemaAnswer, checked_vectors, normalised, plain_schema, read_answer
from bot.llm.openai_compat.features import Features, error_message, refuses, response_format
from bot.llm.openai_compat.messages import (
    NO_TOOLS,
    EmptyStream,
    function_of,
    has_images,
    messages_of,
    reply_pieces,
    usage_tokens,
)
from bot.llm.openai_compat.responses import answer_text, require_json, streamed_answer
from bot.llm.openai_compat.written_calls import calls_written_as_text
from bot.llm.pace import MAX_DEADLINE_SECONDS
from bot.llm.providers import endpoint_name
from bot.llm.retry import THINKING_TOKENS, RetryingClient, retry_after
from bot.llm.usage import Usage
from bot.memory.model_ports import ChatTool, ChatTurn, ModelError, PartialCheck, Purpose, ToolCall

if TYPE_CHECKING:
    from bot.llm.providers import Part, ProviderSettings

log = logging.getLogger(__name__)

T = TypeVar("T", bound=pydantic.BaseModel)

EMBED_BATCH_SIZE = 100
JSON_TEMPERATURE = 0.2
REPAIR = (
    "That answer cannot be used: {error}. Answer again with only the JSON object, no other text, "
    "matching this JSON Schema:\n{schema}"
)


def open_client(settings: ProviderSettings, usage: Usage, part: Part) -> OpenAICompatClient:
    """The provider record's way in (`bot/llm/providers.py`)."""
    return OpenAICompatClient.from_settings(settings, usage, part=part)


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
        timeout_seconds: float = 60.0,
        max_retries: int = 4,
        tools: bool = True,
        images: bool = True,
        json_mode: Literal["auto", "schema", "object_schema", "object", "prompt"] = "auto",
        **options: Any,
    ) -> None:
        """The parameters every adapter takes (`RetryingClient`), and what the endpoint is offered."""
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
            **options,
        )
        self.provider = endpoint_name(self.base_url)
        self.features = Features(
            tools=tools,
            images=images,
            json_mode="schema" if json_mode == "auto" else json_mode,
            json_fallback=json_mode == "auto",
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
        self._closed = False

    @classmethod
    def from_settings(
        cls, settings: ProviderSettings, usage: Usage | None = None, *, part: Part = "chat"
    ) -> OpenAICompatClient:
        """The client of the settings' endpoint; `part`: which role it plays (for the model names)."""
        own = part == "embeddings" and bool(settings.value("EMBEDDING_BASE_URL"))  # an endpoint of its own
        return cls(
            api_key=settings.value("EMBEDDING_API_KEY" if own else "OPENAI_API_KEY"),
            base_url=settings.value("EMBEDDING_BASE_URL" if own else "OPENAI_BASE_URL"),
            chat_model=settings.chat_model_name if part == "chat" else "",
            memory_model=settings.memory_model_name if part == "chat" else "",
            embedding_model=settings.embedding_model,
            embedding_dimensions=settings.embedding_dimensions,
            timeout_seconds=settings.value("OPENAI_TIMEOUT_SECONDS"),
            max_retries=settings.value("OPENAI_MAX_RETRIES"),
            tools=settings.value("OPENAI_TOOLS") != "off",
            images=settings.value("OPENAI_IMAGES") != "off",
            json_mode=settings.value("OPENAI_JSON"),
            usage=usage,
            chat_max_tokens=settings.chat_max_output_tokens,
        )

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
                self.features.note_followed_format(provider=self.provider)
                return read
            except OffSchemaAnswer as exc:
                self.features.note_ignored_format(exc, provider=self.provider, model=self.memory_model)
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
        features = self.features
        while True:
            instruction = features.json_instruction(system, schema_text)
            messages = [{"role": "system", "content": instruction}, *turns] if instruction else turns
            options: dict[str, Any] = dict(limit)
            mode = features.json_mode
            if (answer_format := response_format(mode, schema.__name__, schema_text)) is not None:
                options["response_format"] = answer_format
            if stop_early is not None:
                options["stream"] = True
                if features.stream_usage:
                    options["stream_options"] = {"include_usage": True}
            try:
                response = await self._client.chat.completions.create(
                    model=self.memory_model,
                    messages=messages,
                    temperature=JSON_TEMPERATURE,
                    **options,
                )
            except openai.APIStatusError as exc:
                if "stream_options" in options and refuses(exc, "stream_options"):
                    features.stream_usage = False  # said by the chat when it meets the same refusal
                    continue
                if not features.step_down(exc, mode=mode, provider=self.provider):
                    raise
                continue
            if stop_early is not None:
                return await streamed_answer(
                    response, stop_early, purpose=purpose, provider=self.provider, usage=self.usage
                )
            require_json(response, self.where)
            self.usage.record(purpose, *usage_tokens(response.usage))
            return answer_text(response, purpose=purpose, provider=self.provider)

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
            require_json(response, self.where)
            self.usage.record(Purpose.EMBED, *usage_tokens(response.usage))
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
                with_images = self.features.images and has_images(turns)
                stream = await self._open_stream(system, turns, tools)
                chunks = self._within_deadline(stream)
                try:
                    async for piece in reply_pieces(chunks, provider=self.provider, usage=self.usage):
                        self.features.images_answered |= with_images
                        yield piece
                    return
                except EmptyStream as exc:
                    dropped = with_images and self.features.drop_images(
                        str(exc), provider=self.provider, model=self.chat_model
                    )
                    if not dropped:
                        raise
                finally:
                    with contextlib.suppress(Exception):
                        await stream.close()

        offered = {t.name for t in tools} if self.features.tools else set()
        async with contextlib.aclosing(self._retrying(Purpose.CHAT, attempt)) as pieces:
            async for piece in calls_written_as_text(pieces, offered):
                yield piece

    async def _open_stream(self, system: str, turns: Sequence[ChatTurn], tools: Sequence[ChatTool]) -> Any:
        """The streamed request with what the endpoint takes; a 400 naming tools, images or usage in the
        stream drops that for good and sends again (said once in the log)."""
        while True:
            features = self.features
            options: dict[str, Any] = {}
            instruction = system
            if tools and features.tools:
                options["tools"] = [function_of(tool) for tool in tools]
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
                dropped = features.drop_refused(
                    exc,
                    tools=bool(options.get("tools")),
                    images=has_images(turns),
                    provider=self.provider,
                    model=self.chat_model,
                )
                if dropped is None:
                    raise

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
        detail = self._scrub(f"HTTP {status}: {error_message(exc)}")
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
