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

    def word_index_pieces(self) -> int:
        """FTS5's segments of `owner_words`: each has its own rows in the `_idx` table."""
        return int(scalar(self.conn, "SELECT count(DISTINCT segid) FROM owner_words_idx"))

    def tidy_word_index(self, pages: int) -> bool:
        """One step of FTS5's incremental merge of `owner_words` towards a single segment.

        FTS5 adds a segment per write transaction and merges them a level at a time, so a grown index
        keeps several (8 at a million facts), and a prefix match reads each one: 0.36 ms p50 for the
        benchmark's queries at 1M facts, 0.09 ms once merged into one (bench/recall_scale.py's store).
        A negative 'merge' merges whatever is left, `pages` at a time, so a step is a short write
        (~25 ms for 200 pages) that searches wait behind, not a whole 'optimize'. FTS5 says whether a
        step did anything by a change count of 2 or more. A merge moves a fact's words to new pages and
        can leave old copies in the free space of others: `_scrub` rewrites the index after a forget.
        """
        before = self.conn.raw.total_changes
        with self.conn.transaction():
            self.conn.execute("INSERT INTO owner_words (owner_words, rank) VALUES ('merge', ?)", (-pages,))
        return self.conn.raw.total_changes - before >= 2

    def _scrub(self, *, everything: bool = False) -> None:
        if self._words_removed:
            self._rewrite_word_index()
        self.checkpoint()

    def _rewrite_word_index(self) -> None:
        """Write the keyword index's pages afresh, so that no page keeps a removed fact's words.

        SQLite clears what it deletes (`secure_delete`), but when it rebuilds a page it moves the cells
        without clearing the space they leave, and FTS5 rewrites its pages as it merges: a merged index
        kept copies of a forgotten fact's words in such space (7 of 40 runs of 3,000 facts). Emptying
        the table frees every page, cleared; the same rows, written back in order from a copy that is
        dropped in turn, fill fresh pages. 0.2-0.9 s at a million facts (25 MB of index), in one
        transaction, so a crash leaves the index as it was.
        """
        with self.conn.transaction():
            self.conn.execute(
                "CREATE TABLE owner_words_copy AS SELECT id, block FROM owner_words_data ORDER BY id"
            )
            self.conn.execute("DELETE FROM owner_words_data")
            self.conn.execute(
                "INSERT INTO owner_words_data (id, block) SELECT id, block FROM owner_words_copy ORDER BY id"
            )
            self.conn.execute("DROP TABLE owner_words_copy")
        self._words_removed = False

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
