"""The migration runner applies files by number: a number another branch took may be missing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from bot.storage.errors import DatabaseError
from bot.storage.sql.migrations import Migration, migrate


class Schema:
    """A database that only records its version and the statements run."""

    def __init__(self, version: int = 0) -> None:
        self.current = version
        self.ran: list[str] = []

    def version(self) -> int:
        return self.current

    @contextlib.contextmanager
    def transaction(self, migration: Migration) -> Iterator[None]:
        yield

    def execute(self, statement: str) -> None:
        self.ran.append(statement)

    def record(self, migration: Migration) -> None:
        self.current = migration.number


FILES = tuple(Migration(n, f"{n:04d}_change.sql", (f"step {n}",)) for n in (1, 2, 4))


def test_files_past_the_version_run_by_number_across_a_missing_one() -> None:
    schema = Schema(version=1)
    assert migrate(schema, FILES) == 4
    assert schema.ran == ["step 2", "step 4"]


def test_a_database_past_the_last_file_is_refused() -> None:
    with pytest.raises(DatabaseError, match="version 5, newer than this bot knows \\(4\\)"):
        migrate(Schema(version=5), FILES)
