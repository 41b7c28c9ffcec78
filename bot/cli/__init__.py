"""`python -m bot ...`: run the bot, chat with it in a terminal, serve it over MCP or as a web dashboard,
and the operator commands (check, facts, recall, stats, migrate, reembed).

Every command prints plain lines for people and JSON with `--json`; problems go to stderr, one line each,
with a non-zero exit code. Each module here registers its commands' parsers and handlers
(`register(commands)`, `set_defaults(func=...)`): a new command touches its group's module only.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bot.app import failure_line, failures
from bot.cli import check, facts, maintenance, mcp, recall, run, web
from bot.cli.common import EXIT_PROBLEM, CliError, Handler, report
from bot.config import ConfigError, load_settings

GROUPS = (run, check, facts, recall, mcp, web, maintenance)  # in the order `--help` lists their commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bot", description="A Discord bot with long-term memory.")
    parser.add_argument(
        "--env-file", help="settings file to read; it must exist (default: .env, when there is one)"
    )
    parser.set_defaults(func=run.run_on_discord)  # no command: run the bot
    commands = parser.add_subparsers(dest="command")
    for group in GROUPS:
        group.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; output piped into a reader that stops early (`| head`) ends it quietly."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # inside the try, so a closed pipe is noticed here and not at exit
    except BrokenPipeError:
        # The standard recipe: point stdout at devnull so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PROBLEM
    return code


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    command = args.command or "run"
    try:
        settings = load_settings(
            # A named file by its full path, so an error says which folder it was looked for in.
            dotenv_path=Path(args.env_file).expanduser().absolute() if args.env_file else ".env",
            dotenv_required=args.env_file is not None,
        )
    except ConfigError as exc:
        if command == "check" and getattr(args, "json", False):  # scripts still get their JSON verdict
            print(json.dumps({"ok": False, "settings": None, "database": None, "problems": exc.problems}))
        return report(exc.problems)
    # The bot logs to stdout (what hosts collect); operator commands keep stdout for their output. The chat
    # says what fails in its own lines, so only errors are logged between them (LOG_LEVEL=DEBUG: all).
    level = logging.getLevelName(settings.log_level)
    logging.basicConfig(
        level=logging.ERROR if command == "chat" and level > logging.DEBUG else level,
        stream=sys.stdout if command == "run" else sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        handler: Handler = args.func
        return handler(settings, args)
    except CliError as exc:
        return report(exc.lines)
    except failures(settings) as exc:
        return report([failure_line(settings, exc)])
    except KeyboardInterrupt:
        return 130
