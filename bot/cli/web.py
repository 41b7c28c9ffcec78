"""`web`: the dashboard signed in with Discord (bot/web/), its own process on the same database. The one
module of the CLI that starts the web front-end."""

from __future__ import annotations

import argparse

from bot.app import provider_name
from bot.cli import arguments
from bot.cli.common import CliError, Commands, require_database
from bot.config import Settings
from bot.memory.model_ports import Purpose

DEFAULT_PORT = 8790  # not 8765 and 8767 (the local model servers), nor 8780 (MCP over HTTP)


def register(commands: Commands) -> None:
    web = commands.add_parser(
        "web",
        help="serve the dashboard where members sign in with Discord and see, correct, export and erase "
        "their facts",
        description=(
            "Serves the dashboard over HTTP: a member signs in with Discord (OAuth2, scopes identify and "
            "guilds) and sees their own facts in each server they share with the bot and in their DMs, "
            "searches, corrects, forgets and exports them. Needs DISCORD_CLIENT_ID, DISCORD_CLIENT_SECRET, "
            "WEB_REDIRECT_URL and WEB_SESSION_SECRET. Listens on 127.0.0.1 unless told otherwise: put it "
            "behind a reverse proxy with TLS to reach it from elsewhere."
        ),
    )
    arguments.http_address(
        web,
        DEFAULT_PORT,
        served="the address to listen on",
        port_note="; MCP's is 8780, the model servers' 8765, 8767",
    )
    web.set_defaults(func=serve_web)


def serve_web(settings: Settings, args: argparse.Namespace) -> int:
    """The web front-end (bot/web/): its settings checked, the database required, then served."""
    from bot.http_serving import CannotListen
    from bot.web.server import CannotServe, run, web_config

    try:
        web_config(settings)
    except CannotServe as exc:
        raise CliError(str(exc)) from None
    missing = settings.missing("model_key")
    if missing:
        raise CliError(*missing, f"corrections are embedded with {provider_name(settings, Purpose.EMBED)}")
    require_database(settings)
    try:
        return run(settings, args.host, args.port, listening)
    except (CannotServe, CannotListen) as exc:
        raise CliError(str(exc)) from None


def listening(url: str) -> None:
    """Where the dashboard is served, on stdout once it answers (the log is on stderr)."""
    print(f"serving the dashboard at {url} (Ctrl+C stops)", flush=True)
