"""Serving the dashboard: memory opened as the MCP server opens it, the bot logged in over REST (the admin
pages read permissions with its token, DISCORD_TOKEN), the pages on uvicorn, until a signal.

The port is bound before memory is opened, so a port in use is said at once, in one line
(`bot/http_serving.py`, shared with `mcp --http`). Uvicorn's access log is off: `pages.Guard` logs each
request without its query string (a search's words).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from bot.app import failure_line, failures, open_memory
from bot.config import Settings
from bot.discord_rest import DiscordUnavailable, DiscordView, RestBot
from bot.http_serving import listen, serve, url_of
from bot.memory.service import MemoryService
from bot.web.discord_sign_in import DiscordSignIn
from bot.web.pages import WebConfig, build_app
from bot.web.servers import ServerViews
from bot.web.sessions import SessionSigner

log = logging.getLogger(__name__)

MIN_SECRET_CHARS = 32
CALLBACK_PATH = re.compile(r"(/[A-Za-z0-9._-]+)+")  # served as written: no Starlette {parameter}, no "/"
OWN_PATHS = {"/auth/login", "/auth/logout"}  # the pages' own paths, which the way back must not take
OWN_PREFIXES = ("/memory/", "/static/")


class CannotServe(Exception):
    """The dashboard's settings are missing or too weak: one line for the CLI."""


def web_config(settings: Settings) -> WebConfig:
    """The pages' configuration from the settings; CannotServe names what is missing or too weak."""
    missing = settings.missing(
        "DISCORD_CLIENT_ID", "DISCORD_CLIENT_SECRET", "WEB_REDIRECT_URL", "WEB_SESSION_SECRET"
    )
    if missing:
        raise CannotServe("; ".join(missing))
    if len(settings.web_session_secret) < MIN_SECRET_CHARS:
        raise CannotServe(
            f"WEB_SESSION_SECRET has {len(settings.web_session_secret)} characters: it needs at least "
            f"{MIN_SECRET_CHARS} (python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    redirect = urlsplit(settings.web_redirect_url)
    path = redirect.path
    if (
        not CALLBACK_PATH.fullmatch(path)
        or path in OWN_PATHS
        or path.startswith(OWN_PREFIXES)
        or redirect.query
    ):
        raise CannotServe(
            f"WEB_REDIRECT_URL's path {path or '/'!r} cannot be the sign-in's way back: give the "
            "dashboard's address with /auth/callback (letters, digits, / - _ . only; no query)"
        )
    return WebConfig(
        sign_in=DiscordSignIn.from_settings(settings),
        signer=SessionSigner(settings.web_session_secret, settings.web_session_hours * 3600),
        secure=redirect.scheme == "https",
        callback_path=path,
        failures=failures(settings),
        failure_line=functools.partial(failure_line, settings),
        auto_reply_channel_ids=frozenset(str(c) for c in settings.auto_reply_channel_ids),
    )


def run(settings: Settings, host: str, port: int, listening: Callable[[str], None] | None = None) -> int:
    """`python -m bot web`: checked (CannotServe, CannotListen), then served until SIGTERM or Ctrl+C."""
    config = web_config(settings)
    sock = listen(host, port)
    try:
        asyncio.run(_serve(settings, config, sock, url_of(host, sock, "/"), listening))
    finally:
        sock.close()
    return 0


async def _serve(
    settings: Settings,
    config: WebConfig,
    sock: socket.socket,
    url: str,
    listening: Callable[[str], None] | None,
) -> None:
    service = await open_memory(settings)
    views = ServerViews(None)
    try:
        await service.reload_caches()
        views = ServerViews(await _bot(settings, service))
        await serve(
            build_app(service, config, views),
            sock,
            lambda: listening(url) if listening else None,
            lifespan="off",
        )
    finally:
        await views.close()
        await service.close(record_usage=False)


async def _bot(settings: Settings, service: MemoryService) -> RestBot | None:
    """The bot logged in over REST, for the admin pages' reading of permissions; None (logged) when
    Discord cannot be read, and then nobody is an admin here."""
    try:
        return await DiscordView.login(settings, service)
    except DiscordUnavailable as exc:
        log.warning("%s: the admin pages answer nobody (a member's pages work)", exc)
        return None
