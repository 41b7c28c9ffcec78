"""Migrations as files: each backend's numbered SQL files, and the one runner that applies them.

A backend keeps its schema's history in its package's `migrations/` folder, one file per change, named
`NNNN_what_changed.sql`. The same change has the same number and name on every backend; a change that
does not apply to one (SQLite's rebuild of `facts` for ids that are never reused) is a file there that
only says why, in comments. A new migration is a file of the next number in every folder. Numbers rise
and are used once each; one may be missing (a change being written on another branch took it), and the
runner applies the files by number. A database migrated past such a gap never runs the missing file, so
numbers are taken in the order changes reach the main branch, and a gap is filled before a release.

The runner applies the files past the database's version in order, each in its own transaction that
also records its number, and refuses a database newer than the files it knows. How a version is read
and recorded, and what surrounds a migration's transaction, is the backend's (`Schema`).

A file is statements separated by semicolons, with `--` comments on lines of their own: a semicolon
may not appear inside a string literal or after `--` on a statement's line. A dollar-quoted body
(`DO $$ ... $$`, a step that depends on the server) is one statement, its semicolons included.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Protocol

from bot.storage.errors import DatabaseError

FILE_NAME = re.compile(r"(\d{4})_[a-z0-9_]+\.sql")
# A statement's end, or a dollar-quoted body ($$ ... $$, $tag$ ... $tag$) whose semicolons end nothing.
STATEMENT_END = re.compile(r"(\$[A-Za-z_]*\$).*?\1|;", re.DOTALL)


@dataclass(frozen=True)
class Migration:
    """One file: its number, its name (what the database records beside the number), its statements."""

    number: int
    name: str
    statements: tuple[str, ...]


def statements(script: str) -> tuple[str, ...]:
    """The statements of a migration file, its comment lines left out."""
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("--"))
    pieces, start = [], 0
    for end in (m for m in STATEMENT_END.finditer(code) if m[0] == ";"):
        pieces.append(code[start : end.start()])
        start = end.end()
    pieces.append(code[start:])
    return tuple(s.strip() for s in pieces if s.strip())


@cache
def migrations_of(package: str) -> tuple[Migration, ...]:
    """The migrations in `package`'s `migrations/` folder, in order, numbered from 1, each number once."""
    found = []
    for entry in (resources.files(package) / "migrations").iterdir():
        if not entry.name.endswith(".sql"):
            continue
        if not (match := FILE_NAME.fullmatch(entry.name)):
            raise RuntimeError(f"{package}: the migration {entry.name} is not named NNNN_what_changed.sql")
        found.append(Migration(int(match[1]), entry.name, statements(entry.read_text(encoding="utf-8"))))
    found.sort(key=lambda m: m.number)
    numbers = [m.number for m in found]
    if numbers[:1] not in ([], [1]) or len(set(numbers)) != len(numbers):
        raise RuntimeError(f"{package}: migrations must be numbered from 1, once each: {numbers}")
    return tuple(found)


class Schema(Protocol):
    """What the runner needs from a backend's database."""

    def version(self) -> int:
        """The number of the last migration applied (0: a new database)."""
        ...

    def transaction(self, migration: Migration) -> AbstractContextManager[Any]:
        """The transaction `migration` runs in (with whatever the backend needs around it)."""
        ...

    def execute(self, statement: str) -> None:
        """Run one statement of a migration, as written."""
        ...

    def record(self, migration: Migration) -> None:
        """Record inside the migration's transaction that it was applied."""
        ...


def migrate(schema: Schema, migrations: Sequence[Migration]) -> int:
    """Apply `migrations` past the database's version; returns the resulting version.

    Each migration checks the version again inside its transaction: another process that migrated the
    database while this one waited for the lock leaves nothing to do.
    """
    known = migrations[-1].number if migrations else 0
    _refuse_newer(start := schema.version(), known)
    for migration in (m for m in migrations if m.number > start):
        with schema.transaction(migration):
            if schema.version() >= migration.number:
                continue
            for statement in migration.statements:
                schema.execute(statement)
            schema.record(migration)
    version = schema.version()
    _refuse_newer(version, known)
    return version


def _refuse_newer(version: int, known: int) -> None:
    if version > known:
        raise DatabaseError(
            f"the database schema is version {version}, newer than this bot knows ({known}); upgrade the bot"
        )
