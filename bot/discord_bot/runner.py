"""Running the bot as a process: logging, the proxy URLs, SIGTERM, and clear words when start-up fails."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import sys

import aiohttp
import discord

from bot.app import failure_line, failures
from bot.config import Settings
from bot.discord_bot.client import MemoryBot, make_bot, point_discord_at
from bot.gist import first_line

log = logging.getLogger(__name__)

# With the model provider's key alone the memory can be tried already (README, command 1).
TRY_CHAT = ". Meanwhile `python -m bot chat` talks with the bot here, without Discord"
TOKEN_REJECTED = "Discord rejected DISCORD_TOKEN; copy the bot token again from the developer portal"


async def serve(settings: Settings) -> None:
    """Log in, connect, and run until the gateway closes or SIGTERM/SIGINT asks for a graceful close."""
    point_discord_at(settings.discord_api_base_url, settings.discord_gateway_url)
    bot = make_bot(settings)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, functools.partial(_stop, bot, sig))
    async with bot:
        await bot.start(settings.discord_token)


def _stop(bot: MemoryBot, sig: signal.Signals) -> None:
    log.info("received %s; closing", sig.name)
    asyncio.get_running_loop().create_task(bot.close())


def run_bot(settings: Settings) -> int:
    """`python -m bot run`: returns the process exit code."""
    missing = settings.missing("discord_token", "model_key")
    if missing:
        hint = TRY_CHAT if not settings.missing("model_key") else ""
        for line in missing:
            print(f"error: {line}; see README.md and .env.example{hint}", file=sys.stderr)
        return 1
    try:
        asyncio.run(serve(settings))
    except discord.PrivilegedIntentsRequired:
        print(
            "error: Discord refused the privileged intents. In the developer portal, open your application, "
            "Bot, and switch on MESSAGE CONTENT INTENT and SERVER MEMBERS INTENT.",
            file=sys.stderr,
        )
        return 1
    except discord.LoginFailure:
        print(f"error: {TOKEN_REJECTED}", file=sys.stderr)
        return 1
    except failures(settings) as exc:
        print(f"error: {failure_line(settings, exc)}", file=sys.stderr)
        return 1
    except (aiohttp.ClientError, OSError, discord.GatewayNotFound) as exc:
        where = settings.discord_api_base_url or "discord.com"
        print(f"error: cannot reach Discord ({where}): {first_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0
