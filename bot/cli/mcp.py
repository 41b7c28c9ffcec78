"""`mcp`: the memory served as MCP tools to other agents (bot/mcp/), one audience a session. The one
module of the CLI that starts the MCP front-end; a `--terminal` session is the terminal chat's person,
named as the chat names it."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.app import provider_name
from bot.cli import arguments
from bot.cli.common import CliError, Commands, require_database
from bot.cli.run import person
from bot.config import Settings
from bot.memory.model_ports import Purpose

DEFAULT_PORT = 8780  # --http's; not 8765, where the README runs its local model server


def register(commands: Commands) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="serve the memory as MCP tools to other agents, bound to one audience (stdio, or HTTP)",
        description=(
            "Serves recall, get and recap (and remember, forget in a person's own session) over stdio, for "
            "desktop clients, or streamable HTTP with --http (agents on other machines send MCP_TOKEN as a "
            "bearer token). A session sees what one audience may: --channel ID, what a reply there could "
            "use; --user ID --scope S, what that person sees with /facts; --terminal, the terminal chat's "
            "person. Permissions are read from Discord with DISCORD_TOKEN; without them a channel's session "
            "reads only what was said in that channel."
        ),
    )
    audience = mcp.add_mutually_exclusive_group(required=True)
    audience.add_argument("--channel", type=arguments.snowflake, help="a server channel (or thread) id")
    audience.add_argument("--user", type=arguments.user, help="a person's Discord id (with --scope)")
    audience.add_argument("--terminal", action="store_true", help="the terminal chat's person (--name)")
    mcp.add_argument("--scope", type=arguments.scope, help="guild:<id> or dm (a --user session's)")
    mcp.add_argument("--name", type=person, help="the terminal chat's person (default: your login name)")
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    arguments.http_address(mcp, DEFAULT_PORT, served="the HTTP address")
    mcp.set_defaults(func=serve_mcp)


def serve_mcp(settings: Settings, args: argparse.Namespace) -> int:
    """The MCP front-end (bot/mcp/): checked here, then served until the client leaves."""
    if args.user is not None and args.scope != "dm" and not (args.scope or "").startswith("guild:"):
        raise CliError("--user needs --scope guild:<id> (a server) or --scope dm (their DMs)")
    if args.terminal and args.scope is not None:
        raise CliError("--terminal reads the terminal chat's scope; leave out --scope")
    if args.http and not settings.mcp_token:
        raise CliError("MCP_TOKEN is not set: HTTP is served only to agents that send it as a bearer token")
    missing = settings.missing("model_key")
    if missing:
        raise CliError(
            *missing,
            f"recall embeds queries with {provider_name(settings, Purpose.EMBED)}",
            settings_read(args),
        )
    try:
        require_database(settings)
    except CliError as exc:
        raise CliError(*exc.lines, settings_read(args)) from None
    from bot.discord_rest import DiscordUnavailable
    from bot.http_serving import CannotListen
    from bot.mcp.server import run
    from bot.memory.consult import ConsultError
    from bot.terminal import default_name

    if args.terminal and args.name is None:
        args.name = default_name()
    try:
        return run(settings, args, listening)
    except (ConsultError, DiscordUnavailable, CannotListen) as exc:  # a session that cannot start: one line
        raise CliError(str(exc)) from None


def listening(url: str, holds: str) -> None:
    """Where an HTTP session is served, on stdout once it answers (the log is on stderr)."""
    print(f"serving {holds} at {url} (send MCP_TOKEN as a bearer token; Ctrl+C stops)", flush=True)


def settings_read(args: argparse.Namespace) -> str:
    """Which settings file was read, by its full path: MCP clients start the server in a folder of
    their own choosing (many ignore `cwd`), so a setting found missing is explained by where it looked."""
    named = Path(args.env_file or ".env").expanduser().absolute()
    if named.is_file():
        return f"settings were read from {named} and the environment"
    return (
        f"there is no {named} (the folder the client started the server in): pass --env-file /full/path/.env"
    )
