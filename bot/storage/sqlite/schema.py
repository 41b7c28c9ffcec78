"""The schema: the numbered files in migrations/, applied by the shared runner (bot/storage/sql/migrations.py).

`PRAGMA user_version` is the number of the last file applied. Every migration runs with foreign keys off,
as SQLite's procedure for changing a table asks (dropping a table that is being rebuilt would otherwise
cascade its deletes, as 0006 would), and `PRAGMA foreign_key_check` must find nothing broken before it
commits.

A migration that needs Python calls it as an SQL function the runner registers on the connection
(`indexed_words`, for 0008's keyword index).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from bot.storage.errors import DatabaseError
from bot.storage.sql import migrations
from bot.storage.sql.migrations import Migration
from bot.storage.sqlite.connection import Transaction
from bot.storage.sqlite.search import indexed_words

MIGRATIONS = migrations.migrations_of("bot.storage.sqlite")


class SqliteSchema:
    """The runner's `Schema` on one SQLite connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        conn.create_function("indexed_words", 3, indexed_words, deterministic=True)

    def version(self) -> int:
        version: int = self.conn.execute("PRAGMA user_version").fetchone()[0]
        return version

    @contextlib.contextmanager
    def transaction(self, migration: Migration) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT with foreign keys off (a pragma that must be set outside it), checked."""
        self.conn.execute("PRAGMA foreign_keys = OFF")
        try:
            with Transaction(self.conn):
                yield
                if broken := self.conn.execute("PRAGMA foreign_key_check").fetchone():
                    raise DatabaseError(
                        f"migration {migration.name} would break a reference from {broken[0]}"
                    )
        finally:
            self.conn.execute("PRAGMA foreign_keys = ON")

    def execute(self, statement: str) -> None:
        self.conn.execute(statement)

    def record(self, migration: Migration) -> None:
        self.conn.execute(f"PRAGMA user_version = {migration.number}")


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the migrations past PRAGMA user_version; returns the resulting version."""
    return migrations.migrate(SqliteSchema(conn), MIGRATIONS)
