"""The one retry loop every provider adapter runs its calls through, and the errors it ends in.

Exponential backoff with full jitter, the server's hint when it gives one (capped), a hard per-attempt
deadline (a hung server must not hang the bot), per-purpose usage counters, and failures turned into the
ports' errors (`ModelError` saying whether a retry can help). Each attempt takes its turn at the endpoint's
`EndpointGate` (a reply before learning) and its deadline from the endpoint's `Pace` (what its recent
calls took). An adapter subclasses `RetryingClient`
and supplies what is its provider's: which of its SDK's errors are API errors and what they mean
(`_api_error`), and where a retry hint is (`_retry_hint`). Error messages never contain the API key.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar, TypeVar

import aiohttp

from bot.gist import first_line
from bot.llm.answers import MalformedAnswer, OffSchemaAnswer
from bot.llm.pace import Pace
from bot.llm.schedule import EndpointGate
from bot.llm.usage import Usage
from bot.memory.model_ports import ModelBadAnswer, ModelError, ModelKeyRejected, ModelRefusal, Purpose

R = TypeVar("R")

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# What a thinking model may spend thinking before it writes its reply (Gemini 2.5's thinking, OpenAI's
# reasoning), on top of the reply's own limit: both count it against the request's output limit, and
# without it a hard question could end at the limit before a word of the answer.
THINKING_TOKENS = 4096
_TRANSPORT_MODULES = frozenset({"httpx", "httpx2", "httpcore"})


class RetryingClient:
    """The retry machinery and error classification an adapter inherits.

    The subclass sets `provider` (the name messages start with) and passes what every adapter is
    constructed with (`ClientOptions`'s parameters) to `__init__`.
    """

    provider: str = "the model"
    log: ClassVar[logging.Logger] = logging.getLogger(__name__)  # an adapter's own, so logs name it
    api_errors: ClassVar[tuple[type[BaseException], ...]] = ()  # the SDK's errors `_api_error` reads
    unreadable: ClassVar[tuple[type[BaseException], ...]] = (json.JSONDecodeError,)

    def __init__(
        self,
        *,
        api_key: str,
        timeout_seconds: float,
        max_retries: int,
        base_url: str = "",
        chat_model: str = "",
        memory_model: str = "",
        embedding_model: str = "",
        embedding_dimensions: int = 0,
        backoff_base_seconds: float = 1.0,
        backoff_max_seconds: float = 30.0,
        usage: Usage | None = None,
        chat_max_tokens: int | None = None,
    ) -> None:
        """The parameters every adapter takes. `chat_max_tokens`: every chat request's output limit
        (CHAT_MAX_OUTPUT_TOKENS), so a reply that runs away stops at the model; None: the model's own."""
        self.base_url = base_url.rstrip("/")
        self.chat_model = chat_model
        self.memory_model = memory_model
        self.embedding_model = embedding_model
        self.embedding_dimensions = embedding_dimensions
        self.chat_max_tokens = chat_max_tokens
        self.timeout_seconds = timeout_seconds  # 0 means no deadline
        self.pace = Pace(timeout_seconds)
        self.gate = EndpointGate()  # no limit; the composition root shares a limited one per endpoint
        self.max_retries = max(0, max_retries)
        self.backoff_base_seconds = backoff_base_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.usage = usage if usage is not None else Usage()
        self._api_key = api_key

    def __repr__(self) -> str:  # never show the key
        return (
            f"{type(self).__name__}(base_url={self.base_url or 'default'!r}, chat_model={self.chat_model!r})"
        )

    # ---- what the provider fills in ---------------------------------------------------------------------

    def _api_error(self, purpose: Purpose, model: str, exc: BaseException) -> ModelError:
        """The ModelError an API error of the provider's SDK (one of `api_errors`) means."""
        raise NotImplementedError

    def _retry_hint(self, exc: BaseException) -> float | None:
        """Seconds the server asked us to wait before trying again, if it said."""
        return None

    @property
    def where(self) -> str:
        """The endpoint as messages name it."""
        return self.base_url or f"the {self.provider} API"

    # ---- the loop ---------------------------------------------------------------------------------------

    async def _with_retries(
        self, purpose: Purpose, attempt: Callable[[], Awaitable[R]], *, foreground: bool | None = None
    ) -> R:
        """Run `attempt` under its deadline, retrying transient failures within the budget."""

        async def once() -> AsyncGenerator[R, None]:
            async with self._timed(purpose):
                result = await attempt()
            yield result

        [result] = [r async for r in self._retrying(purpose, once, foreground=foreground)]
        return result

    async def _retrying(
        self,
        purpose: Purpose,
        attempt: Callable[[], AsyncGenerator[R, None]],
        *,
        foreground: bool | None = None,
    ) -> AsyncGenerator[R, None]:
        """The one retry loop: yield what `attempt()` yields, trying again on a transient failure while
        nothing has been yielded (a retry after that would repeat what the caller already showed), with
        backoff or the server's hint, within the retry budget. A refusal is never retried. Each attempt
        holds a turn at the endpoint's gate: in the foreground for a reply (`foreground` None: whether
        `purpose` is the chat), else behind every reply."""
        ahead = purpose is Purpose.CHAT if foreground is None else foreground
        tries = 0
        while True:
            yielded = False
            try:
                async with (
                    self.gate.turn(foreground=ahead),
                    contextlib.aclosing(attempt()) as items,  # a reader stopping early closes it
                ):
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
        known = isinstance(exc, (ModelError, TimeoutError, *self.api_errors))
        cause = str(error) if known else f"{type(exc).__name__}: {exc}"
        return ModelError(
            self._scrub(f"{self.provider}'s reply stream broke off midway ({cause})"),
            purpose=error.purpose,
            status=error.status,
            retryable=error.retryable,
        )

    def _deadline(self, seconds: float | None = None) -> contextlib.AbstractAsyncContextManager[Any]:
        """`seconds` (default: the setting) as a deadline; none when the setting is 0."""
        limit = self.timeout_seconds if seconds is None else seconds
        if self.timeout_seconds > 0 and limit > 0:
            return asyncio.timeout(limit)
        return contextlib.nullcontext()

    @contextlib.asynccontextmanager
    async def _timed(self, purpose: Purpose) -> AsyncIterator[None]:
        """The body under the deadline the endpoint's pace gives `purpose`, its time recorded (a body that
        ran out of time counts as having taken the whole deadline, so the next call gets longer)."""
        deadline = self.pace.deadline(purpose)
        started = time.monotonic()
        try:
            async with self._deadline(deadline):
                yield
        except TimeoutError:
            if deadline is not None:
                self.pace.took(purpose, deadline)
            raise ModelError(
                f"{self.provider} did not answer within {deadline or 0:.4g}s ({purpose.value}, "
                f"{self._model_for(purpose)})",
                purpose=purpose,
                retryable=True,
            ) from None
        self.pace.took(purpose, time.monotonic() - started)

    async def _pause_before_retry(
        self, purpose: Purpose, error: ModelError, exc: BaseException, tries: int
    ) -> None:
        hint = self._retry_hint(exc)
        if hint is not None:
            delay = min(hint, self.backoff_max_seconds * 2)
        else:
            delay = random.uniform(0, min(self.backoff_max_seconds, self.backoff_base_seconds * 2**tries))
        self.usage.add(purpose, retries=1)
        self.log.warning(
            "%s %s request failed (status %s): %s; retry %d/%d in %.2fs%s",
            self.provider,
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

    def _model_for(self, purpose: Purpose) -> str:
        return {Purpose.CHAT: self.chat_model, Purpose.EMBED: self.embedding_model}.get(
            purpose, self.memory_model
        )

    def _classify(self, purpose: Purpose, exc: BaseException) -> ModelError | None:
        """Turn a failure into a ModelError saying whether a retry can help; None for programming errors."""
        model = self._model_for(purpose)
        if isinstance(exc, ModelError):
            return exc
        if isinstance(exc, self.api_errors):
            return self._api_error(purpose, model, exc)
        if isinstance(exc, TimeoutError):
            return ModelError(
                f"{self.provider} did not answer within {self.timeout_seconds:g}s ({purpose.value}, {model})",
                purpose=purpose,
                retryable=True,
            )
        if isinstance(exc, OffSchemaAnswer):
            return ModelBadAnswer(self._scrub(str(exc)), purpose=purpose, retryable=True)
        if isinstance(exc, (MalformedAnswer, *self.unreadable)):
            # An unreadable body: a 200 that is not JSON at all (a proxy's HTML page, a cut-off answer),
            # which says more about the endpoint than about this input: retried, and waited out.
            text = str(exc) if isinstance(exc, MalformedAnswer) else f"unreadable answer: {exc}"
            return ModelError(self._scrub(text), purpose=purpose, retryable=True)
        if (
            isinstance(exc, aiohttp.ClientError | OSError)
            or type(exc).__module__.split(".")[0] in _TRANSPORT_MODULES
        ):
            return self._unreachable(purpose, exc)
        return None

    def _status_error(
        self, purpose: Purpose, model: str, status: int, detail: str, *, key_rejected: bool, key: str
    ) -> ModelError:
        """The error an HTTP status means: the key (`key` names its setting), an unknown model, a rate
        limit or a server error (retryable), or a rejected request."""
        if key_rejected:
            return ModelKeyRejected(
                f"{self.provider} rejected the API key (check {key}) [{detail}]",
                purpose=purpose,
                status=status,
            )
        if status == 404:
            text = f"{self.provider} does not know model {model!r} or this endpoint [{detail}]"
        elif status == 429:
            text = f"{self.provider} rate limit or quota exhausted [{detail}]"
        elif status >= 500:
            text = f"{self.provider} server error [{detail}]"
        else:
            text = f"{self.provider} rejected the {purpose.value} request [{detail}]"
        return ModelError(text, purpose=purpose, status=status, retryable=status in RETRYABLE_STATUS)

    async def _within_deadline(
        self, stream: AsyncIterator[R], purpose: Purpose = Purpose.CHAT
    ) -> AsyncGenerator[R, None]:
        """A stream's items: the first within the pace's deadline (the server reads the prompt before it
        writes), each later one within the setting (a stall between chunks is a timeout)."""
        first = True
        while True:
            try:
                if first:
                    async with self._timed(purpose):
                        item = await anext(stream)
                else:
                    async with self._deadline():
                        item = await anext(stream)
            except StopAsyncIteration:
                return
            first = False
            yield item

    def _unreachable(self, purpose: Purpose, exc: BaseException) -> ModelError:
        return ModelError(
            self._scrub(f"could not reach {self.where}: {type(exc).__name__}: {first_line(exc)}"),
            purpose=purpose,
            retryable=True,
        )

    def _scrub(self, text: str) -> str:
        if self._api_key and len(self._api_key) >= 4:
            text = text.replace(self._api_key, "****")
        return text


def retry_after(raw: str | None) -> float | None:
    """Seconds to wait from an HTTP Retry-After value: a number of seconds or an HTTP date."""
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        with contextlib.suppress(TypeError, ValueError):
            when = email.utils.parsedate_to_datetime(raw)
            return max(0.0, when.timestamp() - time.time())
    return None
