"""The only module that speaks to google-genai: structured JSON, streamed chat and batched embeddings.

google-genai's own retries are switched off (`HttpRetryOptions(attempts=1)`) because they cannot honour the
server's retry hint (`Retry-After`, `google.rpc.RetryInfo`) and, over aiohttp, silently sleep 1-10 s on a
connection error. Every call runs through the shared retry loop instead (retry.py: backoff with the
server's hint, a per-attempt deadline, usage counters); this module adds what is Gemini's: its requests,
its answers' shapes, its errors and where its retry hints are. Error messages never contain the API key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from bot.llm.answers import MalformedAnswer, checked_vectors, normalised, read_answer
from bot.llm.pace import MAX_DEADLINE_SECONDS
from bot.llm.retry import THINKING_TOKENS, RetryingClient, retry_after
from bot.llm.usage import Usage, tokens
from bot.memory.model_ports import (
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
    from bot.llm.providers import Part, ProviderSettings

log = logging.getLogger(__name__)

T = TypeVar("T", bound=pydantic.BaseModel)

EMBED_BATCH_SIZE = 100  # batchEmbedContents accepts at most 100 requests
JSON_TEMPERATURE = 0.2
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


def open_client(settings: ProviderSettings, usage: Usage, part: Part) -> GeminiClient:
    """The provider record's way in (`bot/llm/providers.py`)."""
    return GeminiClient.from_settings(settings, usage, part)


class GeminiClient(RetryingClient):
    """Gemini for the bot: JSON answers for the memory engine, a streamed chat reply, batched embeddings."""

    provider = "Gemini"
    log = log
    api_errors = (genai_errors.APIError,)
    unreadable: ClassVar[tuple[type[BaseException], ...]] = (
        genai_errors.UnknownApiResponseError,
        json.JSONDecodeError,
    )

    def __init__(self, *, timeout_seconds: float = 30.0, max_retries: int = 4, **options: Any) -> None:
        """The parameters every adapter takes (`RetryingClient`); the key is required."""
        super().__init__(timeout_seconds=timeout_seconds, max_retries=max_retries, **options)
        if not self._api_key.strip():
            raise ModelError("GEMINI_API_KEY is not set (or GOOGLE_API_KEY; a key from Google AI Studio)")
        self._closed = False
        # The deadlines are the bot's own (`_timed`, per chunk of a stream), which a slow endpoint's pace
        # stretches: the library's only stops a request nothing else would.
        timeout_ms = math.ceil(MAX_DEADLINE_SECONDS * 1000) if timeout_seconds > 0 else None
        self._client = genai.Client(
            api_key=self._api_key,
            vertexai=False,
            http_options=types.HttpOptions(
                base_url=self.base_url or None,
                timeout=timeout_ms,
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
        )

    @classmethod
    def from_settings(
        cls, settings: ProviderSettings, usage: Usage | None = None, part: Part = "chat"
    ) -> GeminiClient:
        """The client of the settings; `part`: which role it plays (for the model names)."""
        chats = part == "chat"
        return cls(
            api_key=settings.value("GEMINI_API_KEY"),
            base_url=settings.value("GEMINI_BASE_URL"),
            chat_model=settings.chat_model_name if chats else "",
            memory_model=settings.memory_model_name if chats else "",
            embedding_model=settings.embedding_model,
            embedding_dimensions=settings.embedding_dimensions,
            timeout_seconds=settings.value("GEMINI_TIMEOUT_SECONDS"),
            max_retries=settings.value("GEMINI_MAX_RETRIES"),
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
        """Ask the memory model for an answer shaped like `schema`; malformed answers are retried, one cut
        off at `max_output_tokens` (finish reason MAX_TOKENS) is ModelCutOff at once. The answer is read
        whole (`stop_early` is for endpoints that stream JSON, where small models loop); the caller
        judges it as it would have judged the part."""
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=JSON_TEMPERATURE,
            max_output_tokens=max_output_tokens,
            response_mime_type="application/json",
            response_schema=schema,
            automatic_function_calling=_NO_AFC,
        )

        async def attempt() -> T:
            response = await self._client.aio.models.generate_content(
                model=self.memory_model, contents=prompt, config=config
            )
            self.usage.record(purpose, *_tokens(response.usage_metadata))
            self._raise_if_refused(purpose, response, final=True)
            if _finish_reason(response) == "MAX_TOKENS":
                raise ModelCutOff(
                    f"Gemini's answer reached its limit of {max_output_tokens} tokens and was cut off",
                    purpose=purpose,
                )
            # A long answer takes a while to read: a worker thread keeps the event loop (and heartbeats) free.
            return await asyncio.to_thread(read_answer, schema, _text_of(response), self.provider)

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
                self.usage.record(Purpose.EMBED, *_tokens(response.usage_metadata))
                batch = [list(e.values or []) for e in response.embeddings or []]
                return checked_vectors(batch, len(chunk), self.provider)

            batch = await self._with_retries(Purpose.EMBED, attempt, foreground=task == "query")
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
                vectors.append(normalised(values))
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
            tools=[_tool(tools)] if tools else None,
            # The reply's limit and room to think first (THINKING_TOKENS): the reply itself is bounded again
            # by the reply use case, at CHAT_MAX_OUTPUT_TOKENS' characters.
            max_output_tokens=None
            if self.chat_max_tokens is None
            else self.chat_max_tokens + THINKING_TOKENS,
        )

        async def attempt() -> AsyncGenerator[str | ToolCall, None]:
            metadata: Any = None
            answered = False
            cut = False
            stream: Any = None
            try:
                async with self._timed(Purpose.CHAT):
                    stream = await self._client.aio.models.generate_content_stream(
                        model=self.chat_model, contents=contents, config=config
                    )
                saw_candidate = False
                async for chunk in self._within_deadline(stream):
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
                    cut = cut or _finish_reason(chunk) == "MAX_TOKENS"
                if not saw_candidate:
                    raise MalformedAnswer("Gemini returned no answer candidates")
                if cut:  # stopped at the reply's output limit: the reader is told it is not whole
                    yield REPLY_CUT_NOTE
            finally:
                self.usage.add_tokens(Purpose.CHAT, *_tokens(metadata))
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

    # ---- what is Gemini's in the retry loop ---------------------------------------------------------------

    def _api_error(self, purpose: Purpose, model: str, exc: BaseException) -> ModelError:
        assert isinstance(exc, genai_errors.APIError)
        status = exc.code
        detail = self._scrub(
            f"HTTP {status} {exc.status or ''}".rstrip() + f": {exc.message or 'no message'}"
        )
        reasons = {d.get("reason") for d in _error_details(exc) if isinstance(d, dict)}
        rejected = status in (401, 403) or "API_KEY_INVALID" in reasons
        return self._status_error(purpose, model, status, detail, key_rejected=rejected, key="GEMINI_API_KEY")

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
                raise MalformedAnswer("Gemini returned no answer candidates")
            return
        reason = _enum_text(candidates[0].finish_reason)
        if reason in REFUSAL_FINISH_REASONS:
            raise ModelRefusal(f"Gemini stopped the answer (finish reason {reason})", purpose=purpose)

    def _retry_hint(self, exc: BaseException) -> float | None:
        """Seconds the server asked us to wait: the Retry-After header, else a google.rpc.RetryInfo detail."""
        if not isinstance(exc, genai_errors.APIError):
            return None
        headers = getattr(exc.response, "headers", None)
        hint = retry_after(headers.get("Retry-After") if headers is not None else None)
        if hint is not None:
            return hint
        for detail in _error_details(exc):
            if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
                match = _DURATION.match(str(detail.get("retryDelay", "")))
                if match:
                    return max(0.0, float(match.group(1)))
        return None


def _finish_reason(response: types.GenerateContentResponse) -> str:
    return _enum_text(response.candidates[0].finish_reason) if response.candidates else ""


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


def _tokens(metadata: Any) -> tuple[int, int]:
    """(prompt, output) tokens of a usageMetadata; thoughts count as output, as Gemini bills them."""
    if metadata is None:
        return 0, 0
    output = tokens(getattr(metadata, "candidates_token_count", None))
    output += tokens(getattr(metadata, "thoughts_token_count", None))
    return tokens(getattr(metadata, "prompt_token_count", None)), output


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
