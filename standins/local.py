"""What the model API stand-ins share: an aiohttp server on 127.0.0.1, the requests it saw, usage counters,
queued faults, and server-sent events that can stop short.

A stand-in subclasses `LocalServer`, names its request kinds in `kinds` and serves every route in
`_handle`, recording each request with `_record` and taking queued faults with `_take_fault`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any, Self

from aiohttp import web


@dataclass
class RecordedRequest:
    """One request as the stand-in saw it; `kind` is None for routes it does not serve."""

    method: str
    path: str
    query: dict[str, str]
    model: str | None
    kind: str | None
    json: Any
    headers: dict[str, str]


@dataclass
class Fault:
    action: str  # "fail" | "hang" | "malformed", and what a stand-in adds ("block", "break", "filter")
    kind: str | None
    status: int = 500
    retry_after: float | None = None
    retry_info_delay: str | None = None


class LocalServer:
    """An aiohttp server on a random free port of 127.0.0.1, started and stopped as an async context."""

    kinds: tuple[str, ...] = ()  # the generating kinds counted in `counters`, beside "embed"

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[RecordedRequest] = []
        self.stream_chunk_delay = 0.0
        self.latency = 0.0
        self.counters: dict[str, dict[str, int]] = {}
        self.reset_counters()
        self._faults: list[Fault] = []
        self._runner: web.AppRunner | None = None
        self._release = asyncio.Event()

    # ---- lifecycle ------------------------------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._release = asyncio.Event()
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[union-attr]
        port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def stop(self) -> None:
        self._release.set()  # let hung handlers finish so shutdown is quick
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError

    # ---- test controls --------------------------------------------------------------------------------------

    def reset_counters(self) -> None:
        self.counters = {kind: {"requests": 0, "prompt_tokens": 0, "output_tokens": 0} for kind in self.kinds}
        self.counters["embed"] = {"requests": 0, "prompt_tokens": 0, "output_tokens": 0, "texts": 0}

    def fail_next(
        self, status: int = 500, *, count: int = 1, retry_after: float | None = None, kind: str | None = None
    ) -> None:
        """Answer the next `count` requests (of `kind`, if given) with an error in the real API's shape."""
        self._faults += [Fault("fail", kind, status, retry_after) for _ in range(count)]

    def hang_next(self, *, count: int = 1, kind: str | None = None) -> None:
        """Never answer the next `count` requests (until `stop`), to exercise client timeouts."""
        self._faults += [Fault("hang", kind) for _ in range(count)]

    def malformed_next(self, *, count: int = 1, kind: str | None = None) -> None:
        """Answer 200 with a model text that is not valid JSON (embed requests: a body that is not JSON)."""
        self._faults += [Fault("malformed", kind) for _ in range(count)]

    def html_next(self, *, count: int = 1, kind: str | None = None) -> None:
        """Answer the next `count` requests with an HTML page and status 200, as a proxy or a captive
        portal in front of an endpoint does (the OpenAI-compatible stand-in)."""
        self._faults += [Fault("html", kind) for _ in range(count)]

    def of_kind(self, kind: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == kind]

    # ---- serving --------------------------------------------------------------------------------------------

    @staticmethod
    async def _json(request: web.Request) -> Any:
        """The request's JSON body, or None when it has none or it is not JSON."""
        raw = await request.read()
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _record(self, request: web.Request, model: str | None, kind: str | None, body: Any) -> None:
        self.requests.append(
            RecordedRequest(
                method=request.method,
                path=request.path,
                query=dict(request.query),
                model=model,
                kind=kind,
                json=body,
                headers=dict(request.headers),
            )
        )

    def _fault_applies(self, fault: Fault, kind: str) -> bool:
        """Whether a queued fault can happen to a request of this kind (a stand-in narrows it)."""
        return True

    def _take_fault(self, kind: str) -> Fault | None:
        for index, fault in enumerate(self._faults):
            if fault.kind in (None, kind) and self._fault_applies(fault, kind):
                return self._faults.pop(index)
        return None

    async def _sse(
        self, request: web.Request, events: list[str], *, complete: bool = True
    ) -> web.StreamResponse:
        """Stream server-sent events, `stream_chunk_delay` apart; not `complete`: drop the connection after
        them, as a server that dies mid-answer does."""
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for index, event in enumerate(events):
                if index and self.stream_chunk_delay:
                    await self._pause(self.stream_chunk_delay)
                if index and self._cut_short():  # as llama-cpp-python's server: the end, said as such
                    await response.write(b"data: [DONE]\n\n")
                    break
                await response.write(event.encode())
            if not complete and request.transport is not None:
                request.transport.abort()
                return response
            await response.write_eof()
        except ConnectionError:  # the client gave up mid-stream (e.g. its timeout); nothing left to do
            pass
        return response

    def _cut_short(self) -> bool:
        """Whether to end the stream being sent here and now (a stand-in that interrupts says so)."""
        return False

    async def _pause(self, seconds: float) -> None:
        """Sleep, but wake at once when the stand-in stops, so shutdown never waits on a slow answer."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._release.wait(), seconds)
