"""Two bot processes on one database, as `python -m bot` runs them with SHARD_COUNT and SHARD_IDS.

Each message is learned exactly once, commands are synced once, a setting changed through one
process is honoured by the other, and a process killed in the middle of a flush loses nothing.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.memory.models import BufferedMessage, Fact
from bot.memory.ports import Storage
from bot.memory.prompts.extraction import EXTRACT_TASK
from bot.storage.locations import open_storage
from standins.brain import FakeBrain
from standins.discord import DiscordStandIn, Guild
from standins.gemini import GeminiStandIn
from tests.e2e.test_e2e_process import BotProcess, bot_env, command_puts, no_bot_left_running, start_bot
from tests.e2e.world import eventually

pytestmark = pytest.mark.e2e
__all__ = ["no_bot_left_running"]  # the fixture that kills what a failing test leaves running

QUICK = {
    "MEMORY_FLUSH_QUIET_SECONDS": "1",
    "MEMORY_FLUSH_MIN_MESSAGES": "1",
    "MEMORY_FLUSH_CLAIM_SECONDS": "4",
}


def where(database: Path | str, tmp_path: Path) -> Path | str:
    """The bots' database: the test's PostgreSQL database, or the file bot_env names."""
    return database if isinstance(database, str) else tmp_path / "bot.sqlite3"


def opened(where: Path | str) -> Storage:
    return open_storage(where, embedding_model="gemini-embedding-001", dimensions=768)


def facts(where: Path | str, guild: Guild, user: dict[str, Any]) -> list[Fact]:
    store = opened(where)
    try:
        return store.list_facts(f"guild:{guild.id}", user["id"], limit=100)
    finally:
        store.close()


def pending(where: Path | str, guild: Guild) -> list[BufferedMessage]:
    store = opened(where)
    try:
        return store.pending_messages(str(guild.channels["general"]), 100)
    finally:
        store.close()


def extractions_of(gemini: GeminiStandIn, text: str) -> int:
    """Extraction requests that read `text` (each process's own would count apart)."""
    return sum(1 for r in gemini.of_kind("generate") if EXTRACT_TASK in str(r.json) and text in str(r.json))


def lease_holders(where: Path | str, key: str) -> list[str]:
    store = opened(where)
    try:
        return store.lease_holders([key])
    finally:
        store.close()


def holds(condition: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return condition()

    return check


async def guilds_on_two_shards(discord_standin: DiscordStandIn) -> tuple[Guild, Guild]:
    """A guild for shard 0 and one for shard 1 of 2 ((id >> 22) % 2, as Discord routes them)."""
    found: dict[int, Guild] = {}
    while len(found) < 2:
        guild = discord_standin.add_guild(f"Guild{len(discord_standin.guilds)}")
        found.setdefault((guild.id >> 22) % 2, guild)
        await asyncio.sleep(0.002)  # the next snowflake's time bits move on
    return found[0], found[1]


async def ready(env: dict[str, str], tmp_path: Path) -> BotProcess:
    bot = await start_bot(env, tmp_path)
    await bot.wait_line("ready as")
    return bot


async def kill_while_learning(
    bot: BotProcess,
    gemini: GeminiStandIn,
    discord_standin: DiscordStandIn,
    guild: Guild,
    author: dict[str, Any],
    text: str,
) -> None:
    """Say `text` in the guild's general channel and SIGKILL `bot` while Gemini reads it for memory."""
    gemini.hang_next(kind="generate")
    await discord_standin.send_message(guild.channels["general"], author, text)
    await eventually(holds(lambda: extractions_of(gemini, text) == 1), 20, what="the flush under way")
    bot.proc.kill()
    await bot.proc.wait()


async def stop(*bots: BotProcess) -> None:
    for bot in bots:
        if bot.proc.returncode is None:
            bot.proc.send_signal(signal.SIGTERM)
            assert await bot.finish() == 0


async def test_two_shard_processes_learn_each_message_once_and_a_killed_one_loses_nothing(
    tmp_path: Path, database: Path | str
) -> None:
    async with GeminiStandIn() as gemini, DiscordStandIn() as discord_standin:
        gemini.generate_handler = FakeBrain()
        zero, one = await guilds_on_two_shards(discord_standin)
        alice, bob = discord_standin.add_user("alice"), discord_standin.add_user("bob")
        env = bot_env(discord_standin, gemini, tmp_path, where(database, tmp_path), SHARD_COUNT="2", **QUICK)
        first = await ready({**env, "SHARD_IDS": "0"}, tmp_path)
        second = await ready({**env, "SHARD_IDS": "1"}, tmp_path)
        assert len(command_puts(discord_standin)) == 1  # only the process with shard 0 syncs

        await discord_standin.send_message(zero.channels["general"], alice, "I keep bees in Ghent")
        await discord_standin.send_message(one.channels["general"], bob, "I play the cello")
        await eventually(
            holds(lambda: len(facts(where(database, tmp_path), zero, alice)) == 1), 20, what="alice's fact"
        )
        await eventually(
            holds(lambda: len(facts(where(database, tmp_path), one, bob)) == 1), 20, what="bob's fact"
        )
        await asyncio.sleep(1.5)  # time for a second learning, if there were one
        assert [f.text for f in facts(where(database, tmp_path), zero, alice)] == [
            "alice keeps bees in Ghent"
        ]
        assert [f.text for f in facts(where(database, tmp_path), one, bob)] == ["bob plays the cello"]
        assert extractions_of(gemini, "I keep bees in Ghent") == 1
        assert extractions_of(gemini, "I play the cello") == 1

        # The shard-1 process dies while Gemini is reading its channel: the message stays buffered,
        # and the process that runs shard 1 next learns it, once (the dead one's lease goes with it).
        await kill_while_learning(second, gemini, discord_standin, one, bob, "I work as a ferry pilot")
        assert [m.content for m in pending(where(database, tmp_path), one)] == ["I work as a ferry pilot"]
        again = await ready({**env, "SHARD_IDS": "1"}, tmp_path)
        await eventually(
            holds(lambda: len(facts(where(database, tmp_path), one, bob)) == 2),
            30,
            what="the fact after the restart",
        )
        assert sorted(f.text for f in facts(where(database, tmp_path), one, bob)) == [
            "bob plays the cello",
            "bob works as a ferry pilot",
        ]
        assert pending(where(database, tmp_path), one) == []
        await stop(first, again)


async def test_a_restart_learns_at_once_what_its_killed_predecessor_was_learning(
    tmp_path: Path, database: Path | str
) -> None:
    """Killed (SIGKILL) while Gemini reads its channel, a bot leaves the channel's lease behind, for an
    hour here; restarted on the same host, it sees the lease's holder is dead and learns at once."""
    async with GeminiStandIn() as gemini, DiscordStandIn() as discord_standin:
        gemini.generate_handler = FakeBrain()
        guild = discord_standin.add_guild("Alpha")
        bob = discord_standin.add_user("bob")
        env = bot_env(
            discord_standin,
            gemini,
            tmp_path,
            where(database, tmp_path),
            **{**QUICK, "MEMORY_FLUSH_CLAIM_SECONDS": "3600"},
        )
        killed = await ready(env, tmp_path)
        await kill_while_learning(killed, gemini, discord_standin, guild, bob, "I work as a ferry pilot")
        assert [m.content for m in pending(where(database, tmp_path), guild)] == ["I work as a ferry pilot"]
        [holder] = lease_holders(where(database, tmp_path), f"channel:{guild.channels['general']}")
        assert holder.split("/")[-3] == str(killed.proc.pid)  # the lease outlived its process

        again = await ready(env, tmp_path)
        await eventually(
            holds(lambda: len(facts(where(database, tmp_path), guild, bob)) == 1),
            5,  # not the lease's hour
            what="the fact after the restart",
        )
        assert [f.text for f in facts(where(database, tmp_path), guild, bob)] == [
            "bob works as a ferry pilot"
        ]
        assert pending(where(database, tmp_path), guild) == []
        assert extractions_of(gemini, "ferry pilot") == 2
        await stop(again)


async def test_two_processes_on_one_shard_learn_once_and_share_an_opt_out(
    tmp_path: Path, database: Path | str
) -> None:
    """A rolling restart: both processes get every message for a while; an opt-out answered by one
    stops the other capturing that person within a second."""
    async with GeminiStandIn() as gemini, DiscordStandIn() as discord_standin:
        gemini.generate_handler = FakeBrain()
        guild = discord_standin.add_guild("Alpha")
        alice, bob = discord_standin.add_user("alice"), discord_standin.add_user("bob")
        env = bot_env(discord_standin, gemini, tmp_path, where(database, tmp_path), **QUICK)
        old, new = await ready(env, tmp_path), await ready(env, tmp_path)

        await discord_standin.send_message(guild.channels["general"], bob, "I play the cello")
        await eventually(
            holds(lambda: len(facts(where(database, tmp_path), guild, bob)) == 1), 20, what="bob's fact"
        )
        await asyncio.sleep(1.5)
        assert extractions_of(gemini, "I play the cello") == 1

        interaction = await discord_standin.invoke_command(
            alice, "memory", channel_id=guild.channels["general"], subcommand="optout"
        )
        assert "opted out" in (await interaction.wait_response())["data"]["content"]
        await asyncio.sleep(1.0)  # "within a second"
        await discord_standin.send_message(guild.channels["general"], alice, "I keep bees in Ghent")
        await discord_standin.send_message(guild.channels["general"], bob, "I have a red bicycle")
        await eventually(
            holds(lambda: len(facts(where(database, tmp_path), guild, bob)) == 2),
            20,
            what="bob's second fact",
        )
        assert facts(where(database, tmp_path), guild, alice) == []
        assert extractions_of(gemini, "bees") == 0  # neither process captured alice
        await stop(old, new)
