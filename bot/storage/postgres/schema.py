"""The schema: the numbered files in migrations/, applied by the shared runner (bot/storage/sql/migrations.py).

`schema_version` holds a row per file applied (its number and name). Each migration runs in a
transaction under the write lock, so two processes starting at once migrate once. The first enables
pgvector (`CREATE EXTENSION IF NOT EXISTS vector`).

Databases made before the migrations became files numbered them apart from SQLite: their version 1 held
what files 1-3 hold, 2 what 4-5 add, 3 what 7 adds (6 does nothing here). Their `schema_version` has no
`file` column; `renumber_legacy` translates it once, in one transaction, before anything is applied, so
no migration runs again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from bot.storage.errors import DatabaseError
from bot.storage.postgres.connection import PostgresDatabase
from bot.storage.sql import migrations
from bot.storage.sql.migrations import Migration
from bot.storage.sql.rows import scalar

MIGRATIONS = migrations.migrations_of("bot.storage.postgres")

# A version recorded in the old numbering -> the number of the file that brings the schema to the same state.
LEGACY_VERSIONS = {0: 0, 1: 3, 2: 5, 3: 7}

VERSION_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY, file text NOT NULL)"


def schema_version(db: PostgresDatabase) -> int:
    """The number of the last migration applied (0: a new database)."""
    if scalar(db, "SELECT to_regclass('schema_version')") is None:
        return 0
    version: int = scalar(db, "SELECT coalesce(max(version), 0) FROM schema_version")
    return version


class PostgresSchema:
    """The runner's `Schema` on a PostgreSQL database."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    def version(self) -> int:
        return schema_version(self.db)

    @contextlib.contextmanager
    def transaction(self, migration: Migration) -> Iterator[None]:
        """A transaction holding the write lock: another process migrating waits, then finds it done."""
        with self.db.transaction():
            self.db.execute(VERSION_TABLE)
            yield

    def execute(self, statement: str) -> None:
        self.db.raw.execute(statement)  # DDL as written: no parameters

    def record(self, migration: Migration) -> None:
        self.db.execute(
            "INSERT INTO schema_version (version, file) VALUES (?, ?)", (migration.number, migration.name)
        )


def _legacy(db: PostgresDatabase) -> bool:
    """Whether `schema_version` is in the old numbering (a table without the `file` column)."""
    return bool(
        scalar(
            db,
            "SELECT to_regclass('schema_version') IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_attribute "
            "WHERE attrelid = to_regclass('schema_version') AND attname = 'file' AND NOT attisdropped)",
        )
    )


def renumber_legacy(db: PostgresDatabase) -> None:
    """Translate a version recorded in the old numbering into the files' numbers, once (see above)."""
    if not _legacy(db):
        return
    with db.transaction():
        if not _legacy(db):
            return  # another process renumbered it while this one waited for the lock
        old: int = scalar(db, "SELECT coalesce(max(version), 0) FROM schema_version")
        if (version := LEGACY_VERSIONS.get(old)) is None:
            raise DatabaseError(f"the database schema is version {old} of an older numbering no bot wrote")
        db.execute("DROP TABLE schema_version")
        db.execute(VERSION_TABLE)
        db.executemany(
            "INSERT INTO schema_version (version, file) VALUES (?, ?)",
            [(m.number, m.name) for m in MIGRATIONS[:version]],
        )


def vector_type(db: PostgresDatabase) -> str:
    """The type of the stored vectors (`fact_vectors.embedding`, as every vector column): pgvector's
    float32 `vector`, or `halfvec` once migration 10 found pgvector 0.7 or later."""
    name: str = scalar(
        db,
        "SELECT t.typname FROM pg_attribute AS a JOIN pg_type AS t ON t.oid = a.atttypid "
        "WHERE a.attrelid = 'fact_vectors'::regclass AND a.attname = 'embedding'",
    )
    return name


def migrate(db: PostgresDatabase) -> int:
    """Apply the migrations past `schema_version` (renumbered first if it is old); returns the resulting version."""
    renumber_legacy(db)
    return migrations.migrate(PostgresSchema(db), MIGRATIONS)
