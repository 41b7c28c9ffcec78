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
import socket
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import Field, ValidationError

from bot.app import failure_line, failures, open_memory
from bot.config import Settings
from bot.discord_bot.adminlog import AdminLog, plural
from bot.http_serving import listen, url_of
from bot.http_serving import serve as serve_asgi
from bot.mcp import arguments
from bot.mcp.arguments import schema
from bot.mcp.session import Binding, Session, login, open_session, since_of
from bot.memory import consult
from bot.memory.consult import ConsultError

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Long-term memory of a Discord community's bot. This session holds {holds}; it is fixed for the "
    "whole session and never sees more. recall(query) first: compact hits with ids; get(ids) for full "
    "texts and where they were said.{own} Facts are about people; conversations (ids e...) are what a "
    "channel talked about."
)
OWN = " list_my_facts(page) lists every fact of the person, page by page."
HTTP_PATH = "/mcp"
_QUOTED = re.compile(r"'[^']*'")


def build_server(session: Session, settings: Settings) -> MCPServer[Any]:
    """The tools this session may call: recall and get always; recap where it reads a server's
    conversations; remember and forget in a person's own session."""
    holds = session.holds
    own = OWN if session.reader.person is not None else ""
    server = _OneLineServer("memory-bot", instructions=INSTRUCTIONS.format(holds=holds, own=own))
    call = _caller(session, settings)

    def said(what: str) -> str:
        """A tool's description: what it does, then whose memory it reads (a client may show a tool
        apart from the server's instructions)."""
        return f"{what} This session holds {holds}."

    @server.tool(
        description=said(
            "Search memory: ids, short texts, where and when each was learned, best first, within a token "
            "budget. Read the full texts of chosen ids with get."
            + (" Everything known about the person: list_my_facts." if own else "")
        )
    )
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
                    "string",
                    "2026-05-01, 2 weeks, yesterday, Monday, last week, October, 3 days ago",
                    maxLength=100,
                )
            ),
        ] = None,
    ) -> dict[str, Any]:
        async def work() -> dict[str, Any]:
            asked = arguments.text(query, "query", 1000, required=True) or ""
            named = session.people(arguments.texts(people, "people", 100, 10))
            start = since_of(arguments.text(since, "since", 100))
            return await consult.recall(session.service, session.reader, asked, named, since=start)

        return await call("recall", work, _recalled)

    @server.tool(
        description=said("The full texts of facts and conversations, with where and when they were said.")
    )
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
        async def work() -> dict[str, Any]:
            return await consult.get(session.service, session.reader, arguments.ids(ids, consult.MAX_IDS))

        return await call("get", work, _read)

    if session.reader.community is not None:

        @server.tool(
            description=said("What the server's channels talked about, newest first, whole summaries.")
        )
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
            async def work() -> dict[str, Any]:
                start = since_of(arguments.text(since, "since", 100) or "7 days ago")
                assert start is not None
                where = arguments.text(channel, "channel", 100)
                channels = None if where is None else [_channel_id(session, where)]
                return await consult.recap(session.service, session.reader, channel_ids=channels, since=start)

            return await call("recap", work, _listed)

    if session.reader.person is not None:

        @server.tool(
            description=said(
                "Every fact remembered about this session's person here, newest first, one page at a time "
                "(as /facts): ids, full texts, where and when each was learned, the total and the next page."
            )
        )
        async def list_my_facts(
            page: Annotated[
                Any, Field(json_schema_extra=schema("integer", "the page, from 1 (default 1)", minimum=1))
            ] = None,
            page_size: Annotated[
                Any,
                Field(
                    json_schema_extra=schema(
                        "integer",
                        f"facts per page (default {consult.LIST_PAGE}, at most {consult.LIST_PAGE_MOST})",
                        minimum=1,
                        maximum=consult.LIST_PAGE_MOST,
                    )
                ),
            ] = None,
        ) -> dict[str, Any]:
            async def work() -> dict[str, Any]:
                number = arguments.number(page, "page", 1, MAX_PAGE)
                size = arguments.number(page_size, "page_size", consult.LIST_PAGE, consult.LIST_PAGE_MOST)
                return await consult.list_own(session.service, session.reader, page=number, size=size)

            return await call("list_my_facts", work, _listed_own)

        @server.tool(
            description=said(
                "Remember something about this session's person, in their own words (as /remember)."
            )
        )
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
            async def work() -> dict[str, Any]:
                said = arguments.text(text, "text", 2000, required=True) or ""
                return await consult.remember(session.service, session.reader, said)

            return await call("remember", work, _remembered)

        @server.tool(
            description=said(
                "Erase facts of this session's person for good (as /forget): nothing of them is kept."
            )
        )
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
            async def work() -> dict[str, Any]:
                return await consult.forget(
                    session.service, session.reader, arguments.ids(ids, consult.MAX_IDS)
                )

            return await call("forget", work, _forgot)

    return server


MAX_PAGE = 1_000_000


class _OneLineServer(MCPServer[Any]):
    """The SDK's server, but arguments its schema refuses (one missing, say) are said in one line, as
    the bot's own readers say theirs, not as pydantic's errors with their links."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            raise ToolError(_refused(exc.__cause__)) from exc.__cause__


def _refused(error: ValidationError) -> str:
    """What pydantic refused, one clause an argument: "ids is missing"."""
    said = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "the arguments"
        said.append(f"{where} is missing" if problem["type"] == "missing" else f"{where}: {problem['msg']}")
    return "; ".join(said)


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


def _listed_own(answer: Answer) -> str:
    return f"listed their facts ({answer.get('total', 0)} in all, page {answer.get('page', 1)})"


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


Listening = Callable[[str, str], None]  # the URL served, whose memory the session holds


async def serve(
    settings: Settings,
    binding: Binding,
    *,
    http: tuple[str, int] | None = None,
    listening: Listening | None = None,
) -> None:
    """Open memory, bind the session, serve it until the client leaves (stdio) or a signal (HTTP);
    `listening` is told the URL once HTTP is served. The HTTP port is taken before anything else, so a
    port in use is said at once (CannotListen)."""
    bound = None if http is None else (http[0], listen(*http))
    try:
        await _serve(settings, binding, bound, listening)
    finally:
        if bound is not None:
            bound[1].close()


async def _serve(
    settings: Settings,
    binding: Binding,
    http: tuple[str, socket.socket] | None,
    listening: Listening | None,
) -> None:
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
            host, sock = http
            holds = session.holds

            def started(url: str) -> None:
                if listening is not None:
                    listening(url, holds)

            await _serve_http(server, settings.mcp_token, host, sock, started)
    finally:
        if session is not None:
            session.close_log()
        if admin_log is not None:
            await admin_log.stop()
        if bot is not None:
            with contextlib.suppress(Exception):
                await bot.close()
        await service.close(record_usage=False)


async def _serve_http(
    server: MCPServer[Any], token: str, host: str, sock: socket.socket, started: Callable[[str], None]
) -> None:
    url = url_of(host, sock, HTTP_PATH)
    app = BearerToken(server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host), token)
    await serve_asgi(app, sock, lambda: started(url), lifespan="on")


def run(settings: Settings, args: argparse.Namespace, listening: Listening | None = None) -> int:
    """`python -m bot mcp`: checked by the CLI; serve until the end. A session that cannot start raises
    ConsultError, DiscordUnavailable or CannotListen, which the CLI reports as a line."""
    binding = Binding(
        channel_id=args.channel,
        user_id=args.user,
        scope=args.scope,
        name=args.name if args.terminal else None,
    )
    http = (args.host, args.port) if args.http else None
    asyncio.run(serve(settings, binding, http=http, listening=listening))
    return 0
