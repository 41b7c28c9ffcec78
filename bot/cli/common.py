"""What every command shares: its one-line errors, its output (plain lines for people, JSON with
`--json`), the database it may open, and the shape of a handler, so a command module holds only its
own arguments and work."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager
from typing import Any, TypeAlias

from bot.app import database_exists, open_maintenance
from bot.config import Settings
from bot.memory.maintenance import Maintenance

EXIT_PROBLEM = 1

# What a command module's `register` adds its commands to: the parser's sub-commands.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
# A command: its settings and parsed arguments in, the exit code out (`set_defaults(func=...)`).
Handler = Callable[[Settings, argparse.Namespace], int]


class CliError(Exception):
    """A problem to report on stderr (one line per entry) before exiting non-zero."""

    def __init__(self, *lines: str) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


def in_event_loop(command: Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, int]]) -> Handler:
    """An async command as a handler: each run of the CLI is one command in an event loop of its own."""

    def handler(settings: Settings, args: argparse.Namespace) -> int:
        return asyncio.run(command(settings, args))

    return handler


def report(lines: Iterable[str]) -> int:
    """Each problem on stderr as `error: ...`; the exit code that says something went wrong."""
    for line in lines:
        print(f"error: {line}", file=sys.stderr)
    return EXIT_PROBLEM


def emit(args: argparse.Namespace, data: Any, human: Iterable[str]) -> None:
    """`data` as one JSON line with `--json`, else the lines for people."""
    if getattr(args, "json", False):
        print(json.dumps(data, ensure_ascii=False, default=str))
    else:
        for line in human:
            print(line)


def require_database(settings: Settings) -> None:
    """Commands that only read (or delete) must not leave an empty database behind a mistyped path."""
    if not database_exists(settings):
        raise CliError(f"no database at {settings.database_shown} (run the bot or facts import first)")


@asynccontextmanager
async def open_database(settings: Settings) -> AsyncIterator[Maintenance]:
    """The database for commands that never search vectors (list, forget, export, stats).

    They work whatever the embedding state, so a deletion request never waits for a re-embedding.
    """
    require_database(settings)
    memory = await open_maintenance(settings)
    try:
        yield memory
    finally:
        await memory.close()
