"""The end-to-end world: the real MemoryBot (discord.py + google-genai) against both stand-ins on 127.0.0.1.

Two guilds (Alpha, Beta), three people (alice is an admin of Alpha), a log channel in each guild, and a
rule-based Gemini (standins/brain.py) that learns first-person statements.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.client import MemoryBot
from bot.memory.models import Fact
from bot.storage import Store
from standins.brain import FakeBrain
from standins.discord import DiscordStandIn, Guild, run_bot
from standins.gemini import GeminiStandIn
from tests.conftest import make_settings


async def eventually(
    check: Callable[[], Awaitable[bool]], timeout: float = 10.0, what: str = "condition"
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        await asyncio.sleep(0.02)


@dataclass
class World:
    discord: DiscordStandIn
    gemini: GeminiStandIn
    brain: FakeBrain
    bot: MemoryBot
    alpha: Guild
    beta: Guild
    alice: dict[str, Any]
    bob: dict[str, Any]
    carol: dict[str, Any]

    @property
    def general(self) -> int:
        return self.alpha.channels["general"]

    async def captured(self, message_id: int | str) -> bool:
        """Whether a message is in the durable buffer."""
        await self.bot.memory.capture_buffer.wait_written()
        row = self.bot.memory.store.sync.conn.execute(  # type: ignore[attr-defined]
            "SELECT 1 FROM pending_messages WHERE message_id = ?", (str(message_id),)
        ).fetchone()
        return row is not None

    @property
    def text_index(self) -> str:
        """The table of the backend's keyword index (what a forgotten or corrected text must leave)."""
        return "facts_fts" if isinstance(database, (Path, type(None))) else "fact_words"

    async def say(
        self,
        channel_id: int,
        author: dict[str, Any],
        text: str,
        *,
        expect_capture: bool = True,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Post as a person; wait until the bot has captured it (or, if not expected, has seen it)."""
        message = await self.discord.send_message(channel_id, author, text, **kwargs)
        if expect_capture:
            await eventually(lambda: self.captured(message["id"]), what=f"capture of {text!r}")
        else:
            await self.seen(channel_id)
        return message

    async def seen(self, channel_id: int) -> None:
        """Wait until the bot has processed everything sent so far (a captured marker from carol, removed after)."""
        marker = await self.discord.send_message(channel_id, self.carol, "marker message for synchronisation")
        await eventually(lambda: self.captured(marker["id"]), what="marker capture")
        await self.bot.memory.store.call(Store.delete_pending_messages, [str(marker["id"])])

    async def flush(self) -> None:
        await self.bot.memory.flush_now()

    async def facts(self, scope: str, user: dict[str, Any]) -> list[Fact]:
        return await self.bot.memory.list_facts(scope, str(user["id"]), limit=1000)

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r.json for r in self.gemini.requests if r.kind == "stream"]


# The database the next world opens: a file in its tmp_path (None), or a PostgreSQL URL. Set per test
# by the `world_database` fixture of tests/e2e/conftest.py, which runs each world test on both backends.
database: Path | str | None = None


@contextlib.asynccontextmanager
async def world(tmp_path: Path, **overrides: Any) -> AsyncIterator[World]:
    async with GeminiStandIn() as gemini, DiscordStandIn() as discord_standin:
        brain = FakeBrain()
        gemini.generate_handler = brain
        alpha = discord_standin.add_guild("Alpha")
        beta = discord_standin.add_guild("Beta")
        alice = discord_standin.add_user("alice", admin_in=[alpha.id])
        bob = discord_standin.add_user("bob")
        carol = discord_standin.add_user("carol")
        settings = make_settings(
            tmp_path,
            database,
            gemini_base_url=gemini.base_url,
            embedding_model="gemini-embedding-001",
            embedding_dimensions=768,
            gemini_max_retries=1,
            gemini_timeout_seconds=5.0,
            discord_api_base_url=discord_standin.api_base,
            discord_gateway_url=discord_standin.gateway_url,
            **overrides,
        )
        bot = MemoryBot(settings)
        bot.admin_log.interval = 0.2
        async with run_bot(bot, discord_standin):
            yield World(discord_standin, gemini, brain, bot, alpha, beta, alice, bob, carol)
        assert discord_standin.errors == []
