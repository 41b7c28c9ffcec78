"""The Discord stand-in's REST plumbing, shared by every route.

Each request under /api/v10 is recorded (`requests`), checked against the injected failures
(`fail_route`) and the bot token, and answered by the first route whose method and path match; a route
aborts with `RestError` to answer with one of Discord's error bodies. Answers carry Discord's
rate-limit headers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from standins.discord.gateway import Gateway
from standins.discord.model import error_body, field_error
from standins.discord.records import RecordedRequest

log = logging.getLogger(__name__)

Body = Any
Handler = Callable[[web.Request, dict[str, str], RecordedRequest], Awaitable[tuple[int, Body]]]


@dataclass
class _FailRule:
    """An injected failure: answer matching requests with `status` and `body`, `remaining` times."""

    method: str
    pattern: re.Pattern[str]
    status: int
    remaining: int | None
    body: dict[str, Any]


class RestServer(Gateway):
    """Recording, failure injection, authentication and routing of REST requests."""

    def __init__(self, *, interaction_ack_timeout: float | None, **options: Any) -> None:
        super().__init__(**options)
        self.interaction_ack_timeout = interaction_ack_timeout
        self.requests: list[RecordedRequest] = []
        self.unknown_routes: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self._fail_rules: list[_FailRule] = []
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []

    def fail_route(
        self,
        method: str,
        path_regex: str,
        status: int = 403,
        count: int | None = 1,
        *,
        body: dict[str, Any] | None = None,
    ) -> None:
        """Answer the next `count` (None: all) matching REST requests with an error.

        `path_regex` is searched in the path after /api/v10 (e.g. r"/channels/\\d+/messages$"). The
        default bodies are Discord's: 403 Missing Permissions, 404 Unknown, 429 with retry_after."""
        if body is None:
            body = {
                403: error_body(50013, "Missing Permissions"),
                404: error_body(0, "404: Not Found"),
                429: {"message": "You are being rate limited.", "retry_after": 0.05, "global": False},
                500: error_body(0, "500: Internal Server Error"),
            }.get(status, error_body(0, f"{status}: stand-in injected failure"))
        self._fail_rules.append(_FailRule(method.upper(), re.compile(path_regex), status, count, body))

    async def wait_for_request(
        self, predicate: Callable[[RecordedRequest], bool], timeout: float = 5.0, *, start: int = 0
    ) -> RecordedRequest:
        """The first recorded request from index `start` on (default: all of them) matching `predicate`."""

        def check() -> RecordedRequest | None:
            return next((r for r in self.requests[start:] if r.status is not None and predicate(r)), None)

        return await self._changes.wait_until(check, timeout, "a matching REST request")

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        method = request.method.upper()
        body, files = await _read_body(request)
        recorded = RecordedRequest(method, path, dict(request.query), body, dict(request.headers), files)
        self.requests.append(recorded)
        try:
            status, payload = await self._answer(request, method, path, recorded)
        except RestError as exc:
            status, payload = exc.status, exc.body
        except Exception as exc:
            log.exception("stand-in error on %s %s", method, path)
            self.errors.append(f"{method} {path}: {exc!r}")
            status, payload = 400, error_body(0, f"stand-in error: {exc!r}")
        recorded.status, recorded.response = status, payload
        self._changes.notify()
        return _response(status, payload, f"{method} {path}")

    async def _answer(
        self, request: web.Request, method: str, path: str, recorded: RecordedRequest
    ) -> tuple[int, Body]:
        for rule in self._fail_rules:
            if rule.method in (method, "*") and rule.pattern.search(path) and rule.remaining != 0:
                if rule.remaining is not None:
                    rule.remaining -= 1
                return rule.status, rule.body
        oauth = await self._answer_oauth(request, method, path, recorded)
        if oauth is not None:
            return oauth
        is_webhook = path.startswith(("/webhooks/", "/interactions/"))
        if (
            self.token is not None
            and not is_webhook
            and request.headers.get("Authorization") != f"Bot {self.token}"
        ):
            return 401, error_body(0, "401: Unauthorized")
        for route_method, pattern, handler in self._routes:
            if route_method != method:
                continue
            match = pattern.fullmatch(path)
            if match is not None:
                return await handler(request, match.groupdict(), recorded)
        self.unknown_routes.append((method, path))
        return 404, error_body(0, "404: Not Found")

    async def _answer_oauth(
        self, request: web.Request, method: str, path: str, recorded: RecordedRequest
    ) -> tuple[int, Body] | None:
        """A request of the OAuth2 flow (the token endpoint, a bearer token), answered by routes/oauth.py;
        None for every other request."""
        return None

    def _route(self, method: str, pattern: str, handler: Handler) -> None:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
        self._routes.append((method, re.compile(regex), handler))


class RestError(Exception):
    """Abort a REST handler with a Discord error."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("message"))
        self.status = status
        self.body = body


def parse_id(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise RestError(
            400, field_error("id", "NUMBER_TYPE_COERCE", f"Value {value!r} is not snowflake.")
        ) from None


async def _read_body(request: web.Request) -> tuple[Any, list[dict[str, Any]]]:
    """The JSON body, or `payload_json` plus file descriptions of a multipart body."""
    files: list[dict[str, Any]] = []
    if request.content_type.startswith("multipart/"):
        body: Any = None
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                break
            name = getattr(part, "name", None)
            raw = await part.read()  # type: ignore[union-attr]
            if name == "payload_json":
                body = json.loads(raw)
            else:
                files.append(
                    {
                        "field": name,
                        "filename": getattr(part, "filename", None) or name,
                        "size": len(raw),
                        "content_type": part.headers.get("Content-Type"),
                        "data": bytes(raw),
                    }
                )
        return body, files
    raw_text = await request.text()
    if not raw_text:
        return None, files
    try:
        return json.loads(raw_text), files
    except ValueError:
        return raw_text, files


def _response(status: int, payload: Body, route: str) -> web.Response:
    """A response with exactly `Content-Type: application/json` and generous rate-limit headers."""
    reset_after = 60.0
    headers = {
        "X-RateLimit-Limit": "10000",
        "X-RateLimit-Remaining": "9999",
        "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
        "X-RateLimit-Reset-After": f"{reset_after:.3f}",
        "X-RateLimit-Bucket": hashlib.sha1(route.encode()).hexdigest()[:16],
    }
    if status == 429:
        retry_after = float(payload.get("retry_after", 0.05)) if isinstance(payload, dict) else 0.05
        headers.update(
            {
                "Retry-After": f"{retry_after:.3f}",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset-After": f"{retry_after:.3f}",
                "X-RateLimit-Scope": "user",
                "Via": "1.1 google",
            }
        )
    if status == 204 or payload is None:
        return web.Response(status=status, headers=headers)
    headers["Content-Type"] = "application/json"
    return web.Response(status=status, body=json.dumps(payload).encode(), headers=headers)
