"""The SQLite store: the shared store (bot/storage/sql/store.py) on one SQLite file.

What is SQLite's own is here: opening the file (sqlite-vec loaded, WAL), its migrations, its health
(`PRAGMA quick_check`), the search hooks (`SqliteSearch`), and the checkpoint that keeps deleted text
out of the WAL after every forget, opt-out or dropped message (`secure_delete` is on, so deleted rows
are overwritten in the main file).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from bot.storage.errors import DatabaseError
from bot.storage.sql.rows import scalar, select
from bot.storage.sql.store import SqlStore
from bot.storage.sqlite import schema
from bot.storage.sqlite.connection import SqliteDatabase, connect
from bot.storage.sqlite.search import SqliteSearch


class Store(SqliteSearch, SqlStore):
    """Synchronous SQLite + sqlite-vec store. Use `AsyncStore` from async code."""

    conn: SqliteDatabase

    @classmethod
    def connect(cls, location: Path | str) -> SqliteDatabase:
        return SqliteDatabase(connect(location))

    def migrate(self) -> int:
        """Apply numbered migrations past PRAGMA user_version; returns the resulting version."""
        return schema.migrate(self.conn.raw)

    def checkpoint(self) -> None:
        """Fold the WAL into the main file and truncate it, so deleted text does not linger in the log."""
        with contextlib.suppress(sqlite3.OperationalError):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()

    def tidy_word_index(self, pages: int) -> bool:
        """One step of FTS5's incremental merge of `owner_words` towards a single segment.

        FTS5 adds a segment per write transaction and merges them a level at a time, so a grown index
        keeps several (8 at a million facts), and a prefix match reads each one: 0.36 ms p50 for the
        benchmark's queries at 1M facts, 0.09 ms once merged into one (bench/recall_scale.py's store).
        A negative 'merge' merges whatever is left, `pages` at a time, so a step is a short write
        (~15 ms for 100 pages) that searches wait behind, not a whole 'optimize'. FTS5 says whether a
        step did anything by a change count of 2 or more.
        """
        before = self.conn.raw.total_changes
        with self.conn.transaction():
            self.conn.execute("INSERT INTO owner_words (owner_words, rank) VALUES ('merge', ?)", (-pages,))
        return self.conn.raw.total_changes - before >= 2

    def _scrub(self, *, everything: bool = False) -> None:
        self.checkpoint()

    def health(self) -> dict[str, Any]:
        """What `check` reports: versions, schema, FTS5 and the embedding recorded.

        `PRAGMA quick_check` first: a damaged file opens and answers simple queries, then fails later.
        """
        problems = [row["quick_check"] for row in select(self.conn, "PRAGMA quick_check")]
        if problems != ["ok"]:
            raise DatabaseError(f"the database is damaged ({problems[0]}); restore it from a backup")
        [versions] = select(self.conn, "SELECT vec_version() AS vec, sqlite_version() AS sqlite")
        self.conn.execute("SELECT count(*) FROM owner_words WHERE owner_words MATCH 'probe'").fetchone()
        model, dims = self.embedding_meta()
        return {
            "backend": "SQLite",
            "description": f"SQLite {versions['sqlite']}, sqlite-vec {versions['vec']}, FTS5",
            "sqlite_version": versions["sqlite"],
            "sqlite_vec_version": versions["vec"],
            "schema_version": scalar(self.conn, "PRAGMA user_version"),
            "fts5": True,
            "embedding_model": model,
            "embedding_dimensions": dims,
        }
