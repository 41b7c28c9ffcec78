"""`python -m bot mcp`: the memory as MCP tools, over stdio (desktop clients) or streamable HTTP (agents
on other machines, with the bearer token MCP_TOKEN).

A thin front-end like the Discord cogs and the terminal: it parses a tool call's arguments, runs the
engine's use case (`bot/memory/consult.py`) under the session's fixed audience (`session.py`), and logs
the call as a line of the server's admin log, never with a fact's text. Failures answer as MCP tool
errors in one line, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import json
import logging
import re
import signal
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from bot.app import failure_line, failures, open_memory
from bot.config import Settings
from bot.discord_bot.adminlog import AdminLog, plural
from bot.mcp import arguments
from bot.mcp.arguments import schema
from bot.mcp.session import Binding, Session, login, open_session, since_of
from bot.memory import consult
from bot.memory.consult import ConsultError

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Long-term memory of a Discord community's bot, bound to one audience for this whole session: only "
    "what its readers may know. recall(query) first: compact hits with ids; get(ids) for full texts and "
    "where they were said. Facts are about people; conversations (ids e...) are what a channel talked about."
)
HTTP_PATH = "/mcp"
_QUOTED = re.compile(r"'[^']*'")


def build_server(session: Session, settings: Settings) -> MCPServer[Any]:
    """The tools this session may call: recall and get always; recap where it reads a server's
    conversations; remember and forget in a person's own session."""
    server: MCPServer[Any] = MCPServer("memory-bot", instructions=INSTRUCTIONS)
    call = _caller(session, settings)

    @server.tool()
    async def recall(
        query: Annotated[
            Any, Field(json_schema_extra=schema("string", "what to look for, in words", maxLength=1000))
        ],
        people: Annotated[
            Any,
            Field(
                json_schema_extra=schema(
                    "array",
                    "whose facts: Discord ids or names (default: the server's own memory)",
                    items={"type": "string", "maxLength": 100},
                    maxItems=10,
                )
            ),
        ] = None,
        since: Annotated[
            Any,
            Field(
                json_schema_extra=schema(
                    "string", "2026-05-01, yesterday, last week, October, 3 days ago", maxLength=100
                )
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Search memory: ids, short texts, where and when each was learned, best first, within a token
        budget. Read the full texts of chosen ids with get."""

        async def work() -> dict[str, Any]:
            asked = arguments.text(query, "query", 1000, required=True) or ""
            named = session.people(arguments.texts(people, "people", 100, 10))
            start = since_of(arguments.text(since, "since", 100))
            return await consult.recall(session.service, session.reader, asked, named, since=start)

        return await call("recall", work, _recalled)

    @server.tool()
    async def get(
        ids: Annotated[
            Any,
            Field(
                json_schema_extra=schema(
                    "array",
                    "ids from recall: f12, e7",
                    items={"type": ["string", "integer"], "maxLength": 30},
                    maxItems=consult.MAX_IDS,
                )
            ),
        ],
    ) -> dict[str, Any]:
        """The full texts of facts and conversations, with where and when they were said."""

        async def work() -> dict[str, Any]:
            return await consult.get(session.service, session.reader, arguments.ids(ids, consult.MAX_IDS))

        return await call("get", work, _read)

    if session.reader.community is not None:

        @server.tool()
        async def recap(
            channel: Annotated[
                Any,
                Field(
                    json_schema_extra=schema("string", "one channel: its id, <#id> or #name", maxLength=100)
                ),
            ] = None,
            since: Annotated[
                Any, Field(json_schema_extra=schema("string", "default: the last 7 days", maxLength=100))
            ] = None,
        ) -> dict[str, Any]:
            """What the server's channels talked about, newest first, whole summaries."""

            async def work() -> dict[str, Any]:
                start = since_of(arguments.text(since, "since", 100) or "7 days ago")
                assert start is not None
                where = arguments.text(channel, "channel", 100)
                channels = None if where is None else [_channel_id(session, where)]
                return await consult.recap(session.service, session.reader, channel_ids=channels, since=start)

            return await call("recap", work, _listed)

    if session.reader.person is not None:

        @server.tool()
        async def remember(
            text: Annotated[
                Any,
                Field(
                    json_schema_extra=schema(
                        "string", "what the person says about themselves", maxLength=2000
                    )
                ),
            ],
        ) -> dict[str, Any]:
            """Remember something about this session's person, in their own words (as /remember)."""

            async def work() -> dict[str, Any]:
                said = arguments.text(text, "text", 2000, required=True) or ""
                return await consult.remember(session.service, session.reader, said)

            return await call("remember", work, _remembered)

        @server.tool()
        async def forget(
            ids: Annotated[
                Any,
                Field(
                    json_schema_extra=schema(
                        "array",
                        "fact ids: f12",
                        items={"type": ["string", "integer"], "maxLength": 30},
                        maxItems=consult.MAX_IDS,
                    )
                ),
            ],
        ) -> dict[str, Any]:
            """Erase facts of this session's person for good (as /forget): nothing of them is kept."""

            async def work() -> dict[str, Any]:
                return await consult.forget(
                    session.service, session.reader, arguments.ids(ids, consult.MAX_IDS)
                )

            return await call("forget", work, _forgot)

    return server


Answer = dict[str, Any]


def _caller(
    session: Session, settings: Settings
) -> Callable[[str, Callable[[], Awaitable[Answer]], Callable[[Answer], str]], Awaitable[Answer]]:
    """Runs a tool's work in the session and logs it; a refusal or failure is one line for the client."""

    async def call(tool: str, work: Callable[[], Awaitable[Answer]], said: Callable[[Answer], str]) -> Answer:
        try:
            answer = await session.run(work)
        except ConsultError as exc:
            said_by_client = _QUOTED.sub("'…'", str(exc))  # the admin log quotes nothing a client sent
            session.note(tool, f"An MCP client for {session.who} called {tool}, refused: {said_by_client}.")
            raise ToolError(str(exc)) from None
        except failures(settings) as exc:
            session.note(tool, f"An MCP client for {session.who} called {tool}, which failed.")
            raise ToolError(f"memory cannot be reached just now: {failure_line(settings, exc)}") from None
        except Exception:  # a bug: one line for the client and the admin, the traceback in the log alone
            log.exception("the MCP tool %s failed", tool)
            session.note(
                tool, f"An MCP client for {session.who} called {tool}, which failed (see the bot's log)."
            )
            raise ToolError(f"{tool} failed; the operator's log says why") from None
        session.note(tool, f"An MCP client for {session.who} {said(answer)}.")
        return answer

    return call


def _ids(entries: list[dict[str, Any]]) -> str:
    facts = [e["id"][1:] for e in entries if str(e["id"]).startswith("f")]
    episodes = [e["id"][1:] for e in entries if str(e["id"]).startswith("e")]
    parts = []
    if facts:
        parts.append(f"{plural(len(facts), 'fact')} (#{', #'.join(facts)})")
    if episodes:
        parts.append(f"{plural(len(episodes), 'conversation')} (#{', #'.join(episodes)})")
    return " and ".join(parts) or "nothing"


def _recalled(answer: Answer) -> str:
    return f"looked up memory: {_ids(answer.get('results', []))}"


def _read(answer: Answer) -> str:
    return f"read {_ids(answer.get('results', []))}"


def _listed(answer: Answer) -> str:
    return f"listed {_ids(answer.get('conversations', []))}"


def _remembered(answer: Answer) -> str:
    return f"remembered {_ids(answer.get('stored', []))}"


def _forgot(answer: Answer) -> str:
    return f"forgot {_ids([{'id': i} for i in answer.get('forgotten', [])])}"


def _channel_id(session: Session, text: str) -> str:
    """A channel named by id, <#id> or #name (among the server's channels)."""
    bare = text.strip().removeprefix("<#").removesuffix(">")
    if bare.isascii() and bare.isdigit():
        return bare
    guild = session.view.guild if session.view is not None else None
    wanted = bare.removeprefix("#").casefold()
    for channel in guild.channels if guild is not None else []:
        if channel.name.casefold() == wanted:
            return str(channel.id)
    raise ConsultError(f"{arguments.shown(text)} names no channel of this server; give its id")


# ---- running ---------------------------------------------------------------------------------------


class BearerToken:
    """Refuses every HTTP request without `Authorization: Bearer <MCP_TOKEN>` (compared in constant time)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps({"error": "a bearer token (MCP_TOKEN) is required"}).encode()
                headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def serve(settings: Settings, binding: Binding, *, http: tuple[str, int] | None = None) -> None:
    """Open memory, bind the session, serve it until the client leaves (stdio) or a signal (HTTP)."""
    service = await open_memory(settings)
    admin_log: AdminLog | None = None
    bot = None
    session: Session | None = None
    try:
        await service.reload_caches()
        bot = await login(service, settings)
        session = await open_session(service, binding, bot=bot)
        if bot is not None:
            admin_log = AdminLog(bot, default_channel_id=settings.admin_log_channel_id, interval=1.0)
            admin_log.start()
            service.add_listener(admin_log.on_memory_event)
            session.admin_log = admin_log
        server = build_server(session, settings)
        log.info("MCP session for %s in %s", session.who, session.reader.scope)
        if http is None:
            await server.run_stdio_async()
        else:
            await _serve_http(server, settings.mcp_token, *http)
    finally:
        if session is not None:
            session.close_log()
        if admin_log is not None:
            await admin_log.stop()
        if bot is not None:
            with contextlib.suppress(Exception):
                await bot.close()
        await service.close(record_usage=False)


async def _serve_http(server: MCPServer[Any], token: str, host: str, port: int) -> None:
    import uvicorn

    class Server(uvicorn.Server):
        """Stops on SIGTERM or SIGINT as uvicorn does, without raising the signal again once stopped,
        so the admin log's last lines are posted and memory is closed before the process ends."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.force_exit = self.should_exit and sig == signal.SIGINT
            self.should_exit = True

    app = BearerToken(server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host), token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await Server(config).serve()


def run(settings: Settings, args: argparse.Namespace) -> int:
    """`python -m bot mcp`: checked by the CLI; serve until the end. A session that cannot start raises
    ConsultError or DiscordUnavailable, which the CLI reports as a line."""
    binding = Binding(
        channel_id=args.channel,
        user_id=args.user,
        scope=args.scope,
        name=args.name if args.terminal else None,
    )
    http = (args.host, args.port) if args.http else None
    asyncio.run(serve(settings, binding, http=http))
    return 0
