"""Run a real discord.py client against a `DiscordStandIn` for the length of a test."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import TypeVar

import discord
import yarl

from standins.discord.server import DiscordStandIn
from standins.discord.state import ComponentReader

ClientT = TypeVar("ClientT", bound=discord.Client)


@contextlib.contextmanager
def patch_discord_urls(standin: DiscordStandIn) -> Iterator[None]:
    """Point discord.py's REST base and gateway at the stand-in; restore the originals on exit."""
    old_base = discord.http.Route.BASE
    old_gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    discord.http.Route.BASE = standin.api_base
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(standin.gateway_url)
    try:
        yield
    finally:
        discord.http.Route.BASE = old_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway


@contextlib.asynccontextmanager
async def run_bot(
    bot: ClientT,
    standin: DiscordStandIn,
    token: str = "test-token",
    *,
    ready_timeout: float = 15.0,
    guild_ready_timeout: float | None = 0.05,
    close_timeout: float = 10.0,
) -> AsyncIterator[ClientT]:
    """Start `bot.start(token)` as a task against the stand-in and yield once the bot is ready.

    discord.py waits `guild_ready_timeout` (2 s by default) after the last GUILD_CREATE before it fires
    on_ready; this lowers it so tests start fast (None keeps the bot's own value). If the bot fails
    before it is ready (for example `discord.PrivilegedIntentsRequired`), that exception is raised here.
    On exit the bot is closed, its task awaited, and the URLs restored."""
    with patch_discord_urls(standin):
        if guild_ready_timeout is not None:
            bot._connection.guild_ready_timeout = guild_ready_timeout
        task = asyncio.create_task(bot.start(token), name="discord-standin-bot")
        reader = _component_reader(bot)
        standin.component_readers.append(reader)
        try:
            await _wait_ready(bot, task, ready_timeout)
            yield bot
            if task.done():
                task.result()  # the bot died during the test: surface why
        finally:
            standin.component_readers.remove(reader)
            await _shutdown(bot, task, close_timeout)


def _component_reader(bot: discord.Client) -> ComponentReader:
    """Whether discord.py would dispatch a click on this component now: a view stored for the message,
    a persistent one, or a dynamic item whose template matches (read from its view store, the one place
    that knows)."""

    def knows(message_id: int, component_type: int, custom_id: str) -> bool:
        store = bot._connection._view_store
        key = (component_type, custom_id)
        if key in store._views.get(message_id, {}) or key in store._views.get(None, {}):
            return True
        return any(pattern.fullmatch(custom_id) for pattern in store._dynamic_items)

    return knows


async def _wait_ready(bot: discord.Client, task: asyncio.Task[None], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not bot.is_ready():
        if task.done():
            task.result()  # raises the bot's error
            raise RuntimeError("the bot stopped before it was ready")
        if loop.time() > deadline:
            raise TimeoutError(f"the bot was not ready after {timeout}s")
        await asyncio.wait({task}, timeout=0.01)


async def _shutdown(bot: discord.Client, task: asyncio.Task[None], timeout: float) -> None:
    try:
        await asyncio.wait_for(bot.close(), timeout)
    finally:
        if not task.done():
            try:
                await asyncio.wait_for(task, timeout)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        elif not task.cancelled():
            # Retrieve the exception so asyncio does not warn; _wait_ready already raised it if it mattered.
            task.exception()
