"""`run` and `chat`: the bot itself, on Discord (the default command) or in this terminal. The one module
of the CLI that starts the Discord front-end or the terminal's."""

from __future__ import annotations

import argparse
import sys

from bot.app import provider_name
from bot.cli.common import CliError, Commands
from bot.config import Settings


def register(commands: Commands) -> None:
    commands.add_parser("run", help="connect to Discord and run the bot (the default)").set_defaults(
        func=run_on_discord
    )
    chat = commands.add_parser(
        "chat",
        help="chat with the bot in this terminal, through the same memory (needs only GEMINI_API_KEY)",
        description=(
            "Talk with the bot here: what you say is remembered in a scope of its own (`terminal`, apart "
            "from every Discord server and DMs), learned when you go quiet and when you leave, and recalled "
            "in its replies. /facts, /forget ID, /remember TEXT, /flush, /quit. Reads a pipe too."
        ),
    )
    chat.add_argument(
        "--name", type=person, help="who you are; the same name is the same person (default: your login name)"
    )
    chat.set_defaults(func=chat_in_terminal)


def person(text: str) -> str:
    """A terminal person's name, as the chat reads it (`mcp --name` names the same person)."""
    from bot.terminal import session_name

    name = session_name(text)
    if name is None:
        raise argparse.ArgumentTypeError(f"invalid name {text!r}: expected a name with letters or digits")
    return name


def run_on_discord(settings: Settings, args: argparse.Namespace) -> int:
    """The Discord bot (bot/discord_bot/), until it is stopped."""
    from bot.discord_bot.runner import run_bot

    return run_bot(settings)


def chat_in_terminal(settings: Settings, args: argparse.Namespace) -> int:
    """The terminal chat (bot/terminal.py); a model's key (or a local endpoint) is all it needs."""
    missing = settings.missing("model_key")
    if missing:
        raise CliError(
            *missing, f"python -m bot chat talks with {provider_name(settings)}; put the key in .env"
        )
    from bot.terminal import default_name, run_chat

    return run_chat(
        settings, name=args.name or default_name(), stdin=sys.stdin, out=sys.stdout, err=sys.stderr
    )
