"""The end-to-end world: the real MemoryBot (discord.py + google-genai or openai) against the stand-ins on
127.0.0.1.

Two guilds (Alpha, Beta), three people (alice is an admin of Alpha), a log channel in each guild, and a
rule-based model (standins/brain.py) that learns first-person statements, behind the Gemini stand-in or,
with `model = "openai"`, the OpenAI-compatible one (the bot then runs with MODEL_PROVIDER=openai).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.discord_bot.client import MemoryBot
from bot.memory.models import Fact
from bot.storage import Store
from standins.brain import FakeBrain
from standins.discord import DiscordStandIn, Guild, run_bot
from standins.gemini import GeminiStandIn
from standins.openai import OpenAIStandIn, gemini_body
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
    gemini: GeminiStandIn  # the model's stand-in: an OpenAIStandIn when `provider` is "openai"
    brain: FakeBrain
    bot: MemoryBot
    alpha: Guild
    beta: Guild
    alice: dict[str, Any]
    bob: dict[str, Any]
    carol: dict[str, Any]
    provider: str = "gemini"

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
        """A table spelling out the backend's keyword index (what a forgotten or corrected text must leave):
        on SQLite, the fts5vocab table of its terms (folded words glued to their person's token)."""
        return "owner_words_terms" if isinstance(database, (Path, type(None))) else "fact_words"

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
        """The chat requests, as Gemini bodies whichever provider (the OpenAI stand-in's translation);
        a streamed request for JSON (a selection) is no chat."""
        streams = [
            r.json for r in self.gemini.requests if r.kind == "stream" and "response_format" not in r.json
        ]
        return [gemini_body(b) for b in streams] if self.provider == "openai" else streams

    def json_requests(self) -> list[Any]:
        """The requests for structured answers (extraction, consolidation, remembering): on an
        OpenAI-compatible API, those asking for JSON, streamed (a selection) or not."""
        if self.provider != "openai":
            return self.gemini.of_kind("generate")
        return [r for r in self.gemini.requests if r.kind == "chat" or r.json.get("response_format")]

    def query_embeddings(self) -> list[list[str]]:
        """The texts of each embedding request for a search (every embedding request on OpenAI's API,
        which has no task type: the last one of a reply is its search)."""
        if self.provider == "openai":
            return [list(r.json["input"]) for r in self.gemini.of_kind("embed")]
        return [
            [
                "".join(part.get("text", "") for part in item["content"]["parts"])
                for item in r.json["requests"]
            ]
            for r in self.gemini.of_kind("embed")
            if r.json["requests"][0].get("taskType") == "RETRIEVAL_QUERY"
        ]


# The database the next world opens: a file in its tmp_path (None), or a PostgreSQL URL. Set per test
# by the `world_database` fixture of tests/e2e/conftest.py, which runs each world test on both backends.
database: Path | str | None = None
# The model provider the next world's bot uses ("gemini" or "openai"); set by the `world_model` fixture.
model = "gemini"


def model_settings(standin: GeminiStandIn | OpenAIStandIn) -> dict[str, Any]:
    """The settings pointing the bot's models at `standin`, with a short retry budget."""
    if isinstance(standin, OpenAIStandIn):
        return {
            "model_provider": "openai",
            "openai_base_url": standin.base_url,
            "openai_api_key": "test-key",
            "embedding_model": "nomic-embed-text",
            "embedding_dimensions": 768,
            "openai_max_retries": 1,
            "openai_timeout_seconds": 5.0,
        }
    return {
        "gemini_base_url": standin.base_url,
        "embedding_model": "gemini-embedding-001",
        "embedding_dimensions": 768,
        "gemini_max_retries": 1,
        "gemini_timeout_seconds": 5.0,
    }


@contextlib.asynccontextmanager
async def world(tmp_path: Path, **overrides: Any) -> AsyncIterator[World]:
    standin = OpenAIStandIn() if model == "openai" else GeminiStandIn()
    async with standin as gemini, DiscordStandIn() as discord_standin:
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
            discord_api_base_url=discord_standin.api_base,
            discord_gateway_url=discord_standin.gateway_url,
            **{**model_settings(gemini), **overrides},  # a test may change the model's settings too
        )
        bot = MemoryBot(settings)
        bot.admin_log.interval = 0.2
        async with run_bot(bot, discord_standin):
            yield World(discord_standin, gemini, brain, bot, alpha, beta, alice, bob, carol, model)
        assert discord_standin.errors == []
