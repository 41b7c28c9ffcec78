"""End-to-end: `python -m bot mcp` served to the MCP SDK's own client, over stdio and streamable HTTP, on
both backends, with permissions read from the Discord stand-in's REST API.

The seeded server: bob said he likes hiking in #general, works on Falcon in #staff-only (which only the
staff role, bob's, can read), asked to be remembered as having diabetes (sensitive), and told the bot in
DMs that he lives in Oslo; alice likes tea (#general). #general and #staff-only each have a conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bot.app import open_memory
from bot.memory.models import BufferedMessage, NewFact, Origin, iso, utcnow
from bot.memory.ports import Storage
from bot.storage import AsyncStore
from standins.brain import FakeBrain
from standins.discord import DiscordStandIn
from standins.gemini import GeminiStandIn
from tests.conftest import make_settings, record_episode
from tests.e2e.world import eventually
from tests.integration.test_cli import clean_env, run_cli

pytestmark = pytest.mark.e2e

TOKEN = "bot-token"
MCP_TOKEN = "mcp-secret"
_ids = itertools.count(900_000_000_000_000_001)


@dataclass
class Server:
    """The stand-ins, the settings' environment and what was seeded (ids by name)."""

    discord: DiscordStandIn
    env: dict[str, str]
    scope: str
    general: int
    staff: int
    log_channel: int
    bob: str
    alice: str
    facts: dict[str, int]
    episodes: dict[str, int]
    database: Path | str
    settings: Any


@pytest.fixture
async def server(
    tmp_path: Path, database: Path | str, gemini_brain: tuple[GeminiStandIn, FakeBrain]
) -> AsyncIterator[Server]:
    gemini, _ = gemini_brain
    async with DiscordStandIn(token=TOKEN) as discord:
        alpha = discord.add_guild("Alpha")
        alice = discord.add_user("alice", admin_in=[alpha.id])
        bob = discord.add_user("bob")
        staff_role = await discord.add_role(alpha, "staff")
        await discord.set_roles(alpha, bob, [staff_role])
        staff = await discord.add_role_channel(alpha, "staff-only", staff_role)
        general, log_channel = alpha.channels["general"], alpha.channels["bot-log"]
        settings = make_settings(
            tmp_path,
            database,
            gemini_base_url=gemini.base_url,
            embedding_model="gemini-embedding-001",
            embedding_dimensions=768,
        )
        where = {"DATABASE_URL": database} if isinstance(database, str) else {"DATABASE_PATH": str(database)}
        env = clean_env(
            GEMINI_API_KEY="test-key",
            GEMINI_BASE_URL=gemini.base_url,
            GEMINI_MAX_RETRIES="1",
            EMBEDDING_MODEL="gemini-embedding-001",
            EMBEDDING_DIMENSIONS="768",
            DISCORD_TOKEN=TOKEN,
            DISCORD_API_BASE_URL=discord.api_base,
            ADMIN_LOG_CHANNEL_ID=str(log_channel),
            MCP_TOKEN=MCP_TOKEN,
            **where,
        )
        scope = f"guild:{alpha.id}"
        facts, episodes = await seed(settings, scope, str(bob["id"]), str(alice["id"]), general, staff)
        yield Server(
            discord, env, scope, general, staff, log_channel, str(bob["id"]), str(alice["id"]), facts,
            episodes, database, settings,
        )  # fmt: skip


async def seed(
    settings: Any, scope: str, bob: str, alice: str, general: int, staff: int
) -> tuple[dict[str, int], dict[str, int]]:
    """The facts and conversations of the module's docstring, embedded by the model stand-in."""
    service = await open_memory(settings)

    def fact(user: str, name: str, text: str, channel: int, **more: Any) -> NewFact:
        message = str(next(_ids))
        origins = {message: Origin(str(channel))}
        return NewFact(more.pop("scope", scope), user, name, text, [message], origins=origins, **more)

    try:
        await service.import_facts(
            [
                fact(bob, "bob", "bob likes hiking", general),
                fact(bob, "bob", "bob works on project Falcon", staff),
                fact(bob, "bob", "bob has diabetes", general, sensitive=True),
                fact(bob, "bob", "bob lives in Oslo", 123, scope="dm"),
                fact(alice, "alice", "alice likes tea", general),
            ]
        )
        known = await service.export_facts(scope, None) + await service.export_facts("dm", None)
        facts = {f.text.split()[-1].lower(): f.id for f in known}
        episodes = {}
        for name, channel, summary in (
            ("general", general, "The channel planned a hiking trip to the lake on Saturday."),
            ("staff", staff, "The staff discussed the secret launch date of Falcon."),
        ):
            said = BufferedMessage(str(next(_ids)), scope, str(channel), bob, "bob", summary, iso(utcnow()))
            episodes[name] = await record_episode(service, said)
    finally:
        await service.close(record_usage=False)
    return facts, episodes


def answer(result: Any) -> dict[str, Any]:
    """A tool call's answer as JSON (its text content), after checking it is no error."""
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


def error(result: Any) -> str:
    assert result.is_error
    text: str = result.content[0].text
    assert "Traceback" not in text and 'File "' not in text
    return text


def texts(data: dict[str, Any]) -> str:
    return json.dumps(data)


async def log_lines(s: Server, needle: str) -> str:
    """The admin log of the server, once a line containing `needle` is there."""

    async def posted() -> bool:
        return any(needle in m["content"] for m in s.discord.bot_messages(s.log_channel))

    await eventually(posted, what=f"an admin-log line with {needle!r}")
    return "\n".join(m["content"] for m in s.discord.bot_messages(s.log_channel))


@contextlib.asynccontextmanager
async def stdio_session(s: Server, tmp_path: Path, *args: str) -> AsyncIterator[ClientSession]:
    async with stdio_hello(s, tmp_path, *args) as (session, _):
        yield session


@contextlib.asynccontextmanager
async def stdio_hello(s: Server, tmp_path: Path, *args: str) -> AsyncIterator[tuple[ClientSession, str]]:
    """A stdio session and the server's instructions, as its client was greeted."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "bot", "mcp", *args], env=s.env, cwd=str(tmp_path)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        hello = await session.initialize()
        yield session, hello.instructions or ""


async def descriptions(session: ClientSession) -> dict[str, str]:
    return {t.name: t.description or "" for t in (await session.list_tools()).tools}


async def test_a_channel_session_over_stdio_never_returns_staff_dm_or_sensitive_facts(
    server: Server, tmp_path: Path
) -> None:
    s = server
    async with stdio_hello(s, tmp_path, "--channel", str(s.general)) as (session, hello):
        described = await descriptions(session)
        assert set(described) == {"recall", "get", "recap"}  # no remember or forget for a channel's readers
        whose = "a reply in #general of the Discord server 'Alpha'"
        assert whose in hello and all(whose in d for d in described.values()), described

        found = answer(
            await session.call_tool(
                "recall", {"query": "hiking Falcon diabetes Oslo tea", "people": ["bob", "alice"]}
            )
        )
        shown = texts(found)
        assert "bob likes hiking" in shown and "alice likes tea" in shown and "#general" in shown
        assert "Falcon" not in shown and "diabetes" not in shown and "Oslo" not in shown

        every = [f"f{i}" for i in s.facts.values()] + [f"e{i}" for i in s.episodes.values()]
        full = answer(await session.call_tool("get", {"ids": every}))
        assert sorted(r["id"] for r in full["results"]) == sorted(
            [f"f{s.facts['hiking']}", f"f{s.facts['tea']}", f"e{s.episodes['general']}"]
        )
        assert "Falcon" not in texts(full) and "diabetes" not in texts(full)
        [hiking] = [r for r in full["results"] if r["id"] == f"f{s.facts['hiking']}"]
        assert hiking["text"] == "bob likes hiking" and hiking["sources"][0]["link"].startswith("https://")

        recap = answer(await session.call_tool("recap", {}))
        assert [c["id"] for c in recap["conversations"]] == [f"e{s.episodes['general']}"]
        server_memory = answer(await session.call_tool("recall", {"query": "launch date trip"}))
        assert "Falcon" not in texts(server_memory)

        assert "not an id" in error(await session.call_tool("get", {"ids": ["bogus"]}))
        assert "query" in error(await session.call_tool("recall", {"people": ["bob"]}))
        assert "since" in error(await session.call_tool("recall", {"query": "x", "since": "someday"}))
        assert "carol" in error(await session.call_tool("recall", {"query": "x", "people": ["carol"]}))
        assert "remember" in error(await session.call_tool("remember", {"text": "I like tea"}))
    lines = await log_lines(s, "An MCP client for #general looked up memory")
    assert "An MCP client for #general read 2 facts" in lines
    assert "hiking" not in lines and "tea" not in lines  # the log names ids, never texts


@contextlib.asynccontextmanager
async def http_server(s: Server, tmp_path: Path, *args: str) -> AsyncIterator[str]:
    """`python -m bot mcp --http` on a free port; its URL once it says it serves there, which is once it
    answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "mcp", "--http", "--port", str(port), *args,
        cwd=tmp_path, env=s.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert f"at {url} " in line, line or (await proc.stderr.read()).decode()
        _, writer = await asyncio.open_connection("127.0.0.1", port)  # said once it answers
        writer.close()
        yield url
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 15)


async def test_a_person_session_over_http_reads_and_changes_only_that_persons_facts(
    server: Server, tmp_path: Path
) -> None:
    s = server
    async with http_server(s, tmp_path, "--user", s.bob, "--scope", s.scope) as url:
        async with aiohttp.ClientSession() as http:
            hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            async with http.post(url, json=hello) as refused:
                assert refused.status == 401
            wrong = {"Authorization": "Bearer nope"}
            async with http.post(url, json=hello, headers=wrong) as refused:
                assert refused.status == 401

        client = create_mcp_http_client(headers={"Authorization": f"Bearer {MCP_TOKEN}"})
        async with (
            client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            found = texts(
                answer(await session.call_tool("recall", {"query": "diabetes hiking Falcon tea Oslo"}))
            )
            assert "bob has diabetes" in found and "bob works on project Falcon" in found
            assert "alice" not in found and "Oslo" not in found  # not another's, not another scope's
            assert "only the facts of bob" in error(
                await session.call_tool("recall", {"query": "tea", "people": ["alice"]})
            )
            alices = f"f{s.facts['tea']}"
            assert answer(await session.call_tool("get", {"ids": [alices]}))["not_found"] == [alices]
            recap = answer(await session.call_tool("recap", {}))  # bob reads #staff-only: both
            assert {c["id"] for c in recap["conversations"]} == {f"e{i}" for i in s.episodes.values()}

            stored = answer(await session.call_tool("remember", {"text": "I play the oboe"}))
            [oboe] = stored["stored"]
            assert oboe["text"] == "bob plays the oboe"
            gone = answer(await session.call_tool("forget", {"ids": [oboe["id"], alices]}))
            assert gone == {"forgotten": [oboe["id"]], "not_found": [alices]}
            assert "ids is empty" in error(await session.call_tool("forget", {"ids": []}))
    store = await AsyncStore.open(
        s.settings.database_location, embedding_model="gemini-embedding-001", dimensions=768
    )
    try:
        assert await store.call(Storage.get_fact, int(oboe["id"][1:])) is None
        assert not [f for f in await store.call(Storage.export_facts, s.scope, s.bob) if "oboe" in f.text]
        assert await store.call(Storage.keyword_search, s.scope, s.bob, "oboe", 5) == []
        assert await store.call(Storage.get_fact, s.facts["tea"]) is not None  # alice's stays
    finally:
        await store.close()
    lines = await log_lines(s, "forgot 1 fact")
    assert "An MCP client for bob remembered 1 fact" in lines and "oboe" not in lines


async def test_http_is_refused_without_a_token_and_a_session_needs_an_audience(
    server: Server, tmp_path: Path
) -> None:
    no_token = {k: v for k, v in server.env.items() if k != "MCP_TOKEN"}
    code, _, err = await run_cli(
        "mcp", "--http", "--channel", str(server.general), env=no_token, cwd=tmp_path
    )
    assert code == 1 and "MCP_TOKEN is not set" in err
    code, _, err = await run_cli("mcp", env=server.env, cwd=tmp_path)
    assert code == 2 and "one of the arguments --channel --user --terminal is required" in err
    code, _, err = await run_cli("mcp", "--user", server.bob, env=server.env, cwd=tmp_path)
    assert code == 1 and "--user needs --scope" in err
    assert "Traceback" not in err


async def test_a_missing_settings_file_is_named_by_its_full_path(server: Server, tmp_path: Path) -> None:
    """MCP clients start the server in a folder of their choosing: the error says where it looked."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, _, err = await run_cli(
        "--env-file", "memory.env", "mcp", "--channel", str(server.general), env=server.env, cwd=elsewhere
    )
    assert code == 1 and f"settings file {elsewhere / 'memory.env'} does not exist" in err, err
    no_key = {k: v for k, v in server.env.items() if k != "GEMINI_API_KEY"}
    code, _, err = await run_cli("mcp", "--channel", str(server.general), env=no_key, cwd=elsewhere)
    assert code == 1 and "GEMINI_API_KEY is not set" in err
    assert f"there is no {elsewhere / '.env'}" in err and "--env-file /full/path/.env" in err, err


async def test_a_port_in_use_is_one_clear_line(server: Server, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = await run_cli(
            "mcp",
            "--http",
            "--port",
            str(port),
            "--channel",
            str(server.general),
            env=server.env,
            cwd=tmp_path,
        )
    assert code == 1, err
    assert err.strip() == (
        f"error: port {port} on 127.0.0.1 is already in use (another server?): choose another with --port"
    ), err
    assert "Errno" not in err and out == ""


async def test_every_argument_is_bounded_and_odd_input_gets_one_short_line(
    server: Server, tmp_path: Path
) -> None:
    """A client (or a model it runs) sending huge, overflowing or mistyped arguments gets one short line
    for each, never a traceback, pydantic's multi-line errors or its own text echoed back whole; the
    admin log gets a line a minute per tool, not one per call."""
    s = server
    huge = "x" * 200_000
    async with stdio_session(s, tmp_path, "--channel", str(s.general)) as session:
        refusals = [
            await session.call_tool("get", {"ids": ["f" + "9" * 5000]}),
            await session.call_tool("get", {"ids": [2**64]}),
            await session.call_tool("get", {"ids": [f"f{i}" for i in range(100)]}),
            await session.call_tool("get", {"ids": "f1"}),
            await session.call_tool("recall", {"query": huge}),
            await session.call_tool("recall", {"query": 5}),
            await session.call_tool("recall", {"query": "tea", "people": [huge]}),
            await session.call_tool("recall", {"query": "tea", "people": ["bob"] * 50}),
            await session.call_tool("recall", {"query": "tea", "since": "9999-12-31T23:59:59-14:00"}),
            await session.call_tool("recall", {"query": "tea", "since": huge}),
            await session.call_tool("recap", {"channel": huge}),
        ]
        for result in refusals:
            line = error(result)
            assert "\n" not in line and len(line) < 300, line
            assert "pydantic" not in line and "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" not in line
        answered = answer(await session.call_tool("recall", {"query": "tea", "since": "99999999 days ago"}))
        assert "results" in answered
    lines = await log_lines(s, "more calls")  # the calls not posted one by one, summed up at the end
    assert len([line for line in lines.splitlines() if "called get" in line]) == 1
    assert "xxxxxxxxxx" not in lines


async def test_a_person_session_says_whose_memory_it_holds_and_pages_their_own_facts(
    server: Server, tmp_path: Path
) -> None:
    """The instructions and every tool name the member and the server; list_my_facts pages bob's facts
    in Alpha as /facts shows them (his sensitive one too), never alice's, his DMs' or another server's;
    a fact told through MCP says so; refused arguments are one line."""
    s = server
    service = await open_memory(s.settings)
    try:
        origin = {"900000000000000999": Origin(str(s.general))}
        await service.import_facts(
            [NewFact("guild:42", s.bob, "bob", "bob likes chess", ["900000000000000999"], origins=origin)]
        )
    finally:
        await service.close(record_usage=False)
    async with stdio_hello(s, tmp_path, "--user", s.bob, "--scope", s.scope) as (session, hello):
        described = await descriptions(session)
        assert set(described) == {"recall", "get", "recap", "list_my_facts", "remember", "forget"}
        whose = f"the memory of bob (Discord user {s.bob}) in the Discord server 'Alpha' ({s.scope})"
        assert whose in hello and all(whose in d for d in described.values()), described
        assert "\n" not in described["recall"] and "  " not in described["recall"]
        assert "list_my_facts" in described["recall"] and "list_my_facts" in hello

        first = answer(await session.call_tool("list_my_facts", {"page_size": 2}))
        assert (first["total"], first["page"], first["pages"], first["next_page"]) == (3, 1, 2, 2)
        second = answer(await session.call_tool("list_my_facts", {"page": 2, "page_size": 2}))
        assert len(first["facts"]) == 2 and len(second["facts"]) == 1 and "next_page" not in second
        listed = {f["text"] for f in first["facts"] + second["facts"]}
        assert listed == {"bob likes hiking", "bob works on project Falcon", "bob has diabetes"}
        assert {f["learned_in"] for f in first["facts"] + second["facts"]} == {"#general", "#staff-only"}

        [oboe] = answer(await session.call_tool("remember", {"text": "I play the oboe"}))["stored"]
        [newest] = answer(await session.call_tool("list_my_facts", {"page_size": 1}))["facts"]
        assert (newest["id"], newest["learned_in"]) == (oboe["id"], "told through MCP")
        [got] = answer(await session.call_tool("get", {"ids": [oboe["id"]]}))["results"]
        assert got["learned_in"] == "told through MCP"

        for arguments, said in (
            ({"page": 0}, "page must be a whole number from 1"),
            ({"page_size": 500}, "page_size must be a whole number from 1 to 50"),
            ({"page": "two"}, "page must be a whole number"),
        ):
            line = error(await session.call_tool("list_my_facts", arguments))
            assert said in line and "\n" not in line, line
        for tool in ("get", "recall", "remember", "forget"):
            line = error(await session.call_tool(tool, {}))
            assert line.endswith(" is missing") and "\n" not in line and "pydantic" not in line, line
    lines = await log_lines(s, "listed their facts")
    assert "An MCP client for bob listed their facts (3 in all, page 1)" in lines


async def test_a_channel_session_cannot_list_anyones_facts(server: Server, tmp_path: Path) -> None:
    async with stdio_session(server, tmp_path, "--channel", str(server.general)) as session:
        line = error(await session.call_tool("list_my_facts", {}))
        assert "list_my_facts" in line and "\n" not in line
