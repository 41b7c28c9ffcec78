"""`check`: the settings in effect (a setting left empty shows what it means, the provider's record's
defaults among them; the settings of providers not in use are left out), the database opened as the bot
opens it, and with `--online` the Discord token and the models tried on their services, each problem a
line of its own; a warning for an embedding model whose distance cuts were never measured.

It logs in to Discord as the bot's start does (the API address a stand-in or proxy sets, the words for a
rejected token), so of the Discord front-end it borrows those two; it starts nothing."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any

from bot.app import database_backend, failure_line, failures, open_store, probe_models, uncalibrated_line
from bot.cli.common import EXIT_PROBLEM, Commands, emit
from bot.config import Settings
from bot.memory.maintenance import Maintenance


def register(commands: Commands) -> None:
    check = commands.add_parser("check", help="show effective settings and check the database")
    check.add_argument("--json", action="store_true")
    check.add_argument(
        "--online",
        action="store_true",
        help="also try DISCORD_TOKEN and the model providers' keys and models on their services",
    )
    check.set_defaults(func=check_settings)


async def database_health(settings: Settings) -> dict[str, Any]:
    """The database's health, opened as the bot opens it (so `check` creates it on a first run)."""
    store = await open_store(settings)
    try:
        return await Maintenance(store).health()
    finally:
        await store.close()


# Libraries that log every request at INFO (httpx: "HTTP Request: POST ..."): `check` prints its verdicts
# itself, so only their warnings show (LOG_LEVEL=DEBUG: everything).
CHATTY_LIBRARIES = ("httpx", "httpx2", "httpcore", "google_genai", "openai")


def check_settings(settings: Settings, args: argparse.Namespace) -> int:
    if settings.log_level != "DEBUG":
        for name in CHATTY_LIBRARIES:
            logging.getLogger(name).setLevel(logging.WARNING)
    problems = settings.missing("discord_token", "model_key")
    warnings = [] if settings.calibrated else [uncalibrated_line(settings.embedding_model)]
    database: dict[str, Any] = {"location": settings.database_shown}
    try:
        database["backend"] = database_backend(settings)
        database.update(asyncio.run(database_health(settings)), ok=True)
    except failures(settings) as exc:
        problem = failure_line(settings, exc)
        database.update(ok=False, error=problem)
        problems.append(problem)
    online = asyncio.run(check_online(settings)) if args.online else {}
    problems += [verdict["error"] for verdict in online.values() if not verdict["ok"]]
    report: dict[str, Any] = {
        "ok": not problems,
        "settings": settings.in_effect(),
        "database": database,
        "problems": problems,
        "warnings": warnings,
    }
    if args.online:
        report["online"] = online
    human = [f"{k} = {_shown(v)}" for k, v in report["settings"].items()]
    if database.get("ok"):
        human.append(
            f"database OK: {database['location']} ({database['description']}, {database['embedding_model']} at "
            f"{database['embedding_dimensions']} dimensions)"
        )
    human += [f"{service}: OK ({verdict['detail']})" for service, verdict in online.items() if verdict["ok"]]
    human += [f"warning: {line}" for line in warnings]
    emit(args, report, human)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_PROBLEM if problems else 0


def _shown(value: Any) -> str:
    """A value as a person reads it in `.env`: true/false for a switch."""
    return str(value).lower() if isinstance(value, bool) else str(value)


async def check_online(settings: Settings) -> dict[str, dict[str, Any]]:
    """DISCORD_TOKEN and the models tried on their services (a Discord token that is not set is skipped;
    a model provider is tried when its key is set or it needs none)."""
    verdicts: dict[str, dict[str, Any]] = {}
    if settings.discord_token:
        verdicts["Discord"] = await _check_discord(settings)
    if not settings.missing("model_key"):
        verdicts.update(await probe_models(settings))
    return verdicts


# The application flags saying a privileged intent is on: the full flag (a verified bot) or the
# "limited" one (an unverified bot in fewer than 100 servers), as Discord documents them.
PRIVILEGED_INTENTS = {
    "MESSAGE CONTENT INTENT": 1 << 18 | 1 << 19,
    "SERVER MEMBERS INTENT": 1 << 14 | 1 << 15,
}


async def _check_discord(settings: Settings) -> dict[str, Any]:
    """Log in over REST only (GET /users/@me), as the bot's start does before it connects."""
    import aiohttp
    import discord

    from bot.discord_bot.client import point_discord_at
    from bot.discord_bot.runner import TOKEN_REJECTED
    from bot.gist import first_line

    point_discord_at(settings.discord_api_base_url, settings.discord_gateway_url)
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    try:
        me = await http.static_login(settings.discord_token)
        application = await http.application_info()
    except discord.LoginFailure:
        return {"ok": False, "error": TOKEN_REJECTED}
    except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
        where = settings.discord_api_base_url or "discord.com"
        return {"ok": False, "error": f"cannot reach Discord ({where}): {first_line(exc)}"}
    finally:
        await http.close()
    flags = int(application.get("flags") or 0)
    missing = [name for name, bits in PRIVILEGED_INTENTS.items() if not flags & bits]
    if missing:
        return {
            "ok": False,
            "error": (
                f"Discord: the bot cannot run without {' and '.join(missing)}: switch "
                f"{'them' if len(missing) > 1 else 'it'} on in the Developer Portal (your application, "
                "Bot, Privileged Gateway Intents)"
            ),
        }
    return {"ok": True, "detail": f"logged in as {me.get('username', '?')}; intents on"}
