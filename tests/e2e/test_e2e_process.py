"""`python -m bot` as a host runs it: start-up log, command sync, SIGTERM, and clear start-up failures."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.storage.locations import open_storage
from standins.discord import DiscordStandIn
from standins.gemini import GeminiStandIn
from tests.e2e.world import eventually
from tests.integration.test_cli import clean_env

pytestmark = pytest.mark.e2e


class BotProcess:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.stderr = ""
        assert proc.stdout is not None
        self._reader = asyncio.create_task(self._read(proc.stdout))

    async def _read(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            self.lines.append(line.decode())

    async def wait_line(self, text: str, timeout: float = 20.0) -> str:
        async def found() -> bool:
            return any(text in line for line in self.lines) or self.proc.returncode is not None

        await eventually(found, timeout, what=f"log line {text!r}")
        return next(line for line in self.lines if text in line)

    async def finish(self, timeout: float = 20.0) -> int:
        code = await asyncio.wait_for(self.proc.wait(), timeout)
        await self._reader
        assert self.proc.stderr is not None
        self.stderr = (await self.proc.stderr.read()).decode()
        return code


STARTED: list[asyncio.subprocess.Process] = []


async def start_bot(env: dict[str, str], cwd: Path) -> BotProcess:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    STARTED.append(proc)
    return BotProcess(proc)


@pytest.fixture(autouse=True)
async def no_bot_left_running() -> AsyncIterator[None]:
    """A failing test must not leave a bot process behind."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.fixture
async def stand_ins() -> AsyncIterator[tuple[DiscordStandIn, GeminiStandIn]]:
    async with GeminiStandIn() as gemini, DiscordStandIn() as discord_standin:
        yield discord_standin, gemini


def bot_env(
    discord_standin: DiscordStandIn,
    gemini: GeminiStandIn,
    tmp_path: Path,
    database: Path | str | None = None,
    **extra: str,
) -> dict[str, str]:
    """The bot's environment; its database is `database` (a PostgreSQL URL goes in DATABASE_URL), or a file."""
    where = {"DATABASE_URL": database} if isinstance(database, str) else {}
    settings = {
        **where,
        "DISCORD_TOKEN": "test-token",
        "GEMINI_API_KEY": "test-key",
        "GEMINI_BASE_URL": gemini.base_url,
        "DISCORD_API_BASE_URL": discord_standin.api_base,
        "DISCORD_GATEWAY_URL": discord_standin.gateway_url,
        "DATABASE_PATH": str(tmp_path / "bot.sqlite3"),
        "MEMORY_FLUSH_QUIET_SECONDS": "3600",
    }
    return clean_env(**{**settings, **extra})


def command_puts(discord_standin: DiscordStandIn) -> list[str]:
    return [r.path for r in discord_standin.requests if r.method == "PUT" and r.path.endswith("/commands")]


async def test_without_a_token_it_says_so_in_one_line(tmp_path: Path) -> None:
    proc = await start_bot(clean_env(GEMINI_API_KEY="k"), tmp_path)
    assert await proc.finish() == 1
    assert proc.stderr.strip().splitlines() == [
        "error: DISCORD_TOKEN is not set (the bot token from the Discord developer portal); see README.md and "
        ".env.example. Meanwhile `python -m bot chat` talks with the bot here, without Discord"
    ]


async def test_refused_privileged_intents_are_explained(tmp_path: Path) -> None:
    async with GeminiStandIn() as gemini, DiscordStandIn(refuse_privileged_intents=True) as discord_standin:
        discord_standin.add_guild("Alpha")
        proc = await start_bot(bot_env(discord_standin, gemini, tmp_path), tmp_path)
        assert await proc.finish() == 1
    assert "MESSAGE CONTENT INTENT" in proc.stderr and "SERVER MEMBERS INTENT" in proc.stderr


async def test_discord_out_of_reach_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    env = clean_env(
        DISCORD_TOKEN="test-token",
        GEMINI_API_KEY="test-key",
        DISCORD_API_BASE_URL="http://127.0.0.1:9",  # nothing listens on the discard port
        DISCORD_GATEWAY_URL="ws://127.0.0.1:9",
        DATABASE_PATH=str(tmp_path / "bot.sqlite3"),
    )
    proc = await start_bot(env, tmp_path)
    assert await proc.finish() == 1
    assert "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("error: ")] == [
        "error: cannot reach Discord (http://127.0.0.1:9): Cannot connect to host 127.0.0.1:9"
    ]
    assert not any("PyNaCl" in line for line in proc.lines)  # a text bot says nothing about voice


async def test_start_sync_capture_and_sigterm(
    tmp_path: Path, stand_ins: tuple[DiscordStandIn, GeminiStandIn], database: Path | str
) -> None:
    discord_standin, gemini = stand_ins
    guild = discord_standin.add_guild("Alpha")
    alice = discord_standin.add_user("alice")
    log_channel = str(guild.channels["bot-log"])
    env = bot_env(discord_standin, gemini, tmp_path, database, ADMIN_LOG_CHANNEL_ID=log_channel)
    where = database if isinstance(database, str) else tmp_path / "bot.sqlite3"

    bot = await start_bot(env, tmp_path)
    ready = await bot.wait_line("ready as")
    assert "in 1 guilds; 0 active facts, 0 pending messages" in ready
    assert "test-token" not in "".join(bot.lines) and "test-key" not in "".join(bot.lines)
    puts = command_puts(discord_standin)
    assert len(puts) == 1 and "/guilds/" not in puts[0]  # global sync, once
    names = {c["name"] for c in discord_standin.synced_commands[None]}
    assert {"facts", "forget", "memory", "memory-admin"} <= names
    await discord_standin.wait_for_bot_message(
        guild.channels["bot-log"], lambda m: "started" in m["content"], timeout=10
    )

    await discord_standin.send_message(guild.channels["general"], alice, "I grow tomatoes on my balcony")

    async def captured() -> bool:  # read beside the running bot, as an operator's command would
        store = open_storage(where, embedding_model="any", dimensions=1, allow_model_change=True)
        try:
            return store.count_pending() == 1  # type: ignore[attr-defined]
        finally:
            store.close()

    await eventually(captured, what="the message in the durable buffer")
    bot.proc.send_signal(signal.SIGTERM)
    assert await bot.finish() == 0
    assert any("received SIGTERM" in line for line in bot.lines)
    await discord_standin.wait_for_bot_message(
        guild.channels["bot-log"], lambda m: "shutting down" in m["content"], timeout=5
    )

    # The restart finds the captured message waiting, and does not sync unchanged commands again.
    again = await start_bot(env, tmp_path)
    ready = await again.wait_line("ready as")
    assert "1 pending messages" in ready
    assert any("app commands unchanged" in line for line in again.lines)
    assert len(command_puts(discord_standin)) == 1
    again.proc.send_signal(signal.SIGTERM)
    assert await again.finish() == 0


async def test_dev_guild_sync_goes_to_that_guild(
    tmp_path: Path, stand_ins: tuple[DiscordStandIn, GeminiStandIn]
) -> None:
    discord_standin, gemini = stand_ins
    guild = discord_standin.add_guild("Dev")
    bot = await start_bot(bot_env(discord_standin, gemini, tmp_path, DEV_GUILD_ID=str(guild.id)), tmp_path)
    await bot.wait_line("ready as")
    [put] = command_puts(discord_standin)
    assert f"/guilds/{guild.id}/commands" in put
    os.kill(bot.proc.pid, signal.SIGINT)
    assert await bot.finish() == 0


async def test_a_failed_command_sync_does_not_stop_the_bot(
    tmp_path: Path, stand_ins: tuple[DiscordStandIn, GeminiStandIn]
) -> None:
    discord_standin, gemini = stand_ins
    discord_standin.add_guild("Alpha")
    discord_standin.fail_route("PUT", r"/commands$", status=403, count=None)
    bot = await start_bot(bot_env(discord_standin, gemini, tmp_path), tmp_path)
    await bot.wait_line("ready as")
    assert any("syncing app commands failed" in line for line in bot.lines)
    bot.proc.send_signal(signal.SIGTERM)
    assert await bot.finish() == 0


async def start_and_stop(env: dict[str, str], cwd: Path) -> None:
    bot = await start_bot(env, cwd)
    await bot.wait_line("ready as")
    bot.proc.send_signal(signal.SIGTERM)
    assert await bot.finish() == 0


async def test_commands_are_synced_again_when_discord_lacks_them_and_a_dev_guild_is_cleared(
    tmp_path: Path, stand_ins: tuple[DiscordStandIn, GeminiStandIn]
) -> None:
    discord_standin, gemini = stand_ins
    dev = discord_standin.add_guild("Dev")
    env = bot_env(discord_standin, gemini, tmp_path)
    await start_and_stop({**env, "DEV_GUILD_ID": str(dev.id)}, tmp_path)
    assert command_puts(discord_standin) == [
        f"/applications/{discord_standin.application_id}/guilds/{dev.id}/commands"
    ]
    # Back to global commands: the dev server's copies are removed, or it would show each command twice.
    await start_and_stop(env, tmp_path)
    assert discord_standin.synced_commands[dev.id] == []
    assert {c["name"] for c in discord_standin.synced_commands[None]} >= {"facts", "forget", "memory"}
    puts = len(command_puts(discord_standin))
    # Someone removed the commands on Discord's side: the next start puts them back.
    discord_standin.synced_commands[None] = []
    await start_and_stop(env, tmp_path)
    assert len(command_puts(discord_standin)) == puts + 1 and discord_standin.synced_commands[None]
    await start_and_stop(env, tmp_path)  # and then leaves them alone
    assert len(command_puts(discord_standin)) == puts + 1


async def test_another_application_on_the_same_database_gets_its_commands(
    tmp_path: Path, stand_ins: tuple[DiscordStandIn, GeminiStandIn], database: Path | str
) -> None:
    discord_standin, gemini = stand_ins
    discord_standin.add_guild("Alpha")
    await start_and_stop(bot_env(discord_standin, gemini, tmp_path, database), tmp_path)
    async with DiscordStandIn() as other_application:
        other_application.add_guild("Alpha")
        await start_and_stop(bot_env(other_application, gemini, tmp_path, database), tmp_path)
        assert len(command_puts(other_application)) == 1 and other_application.synced_commands[None]
