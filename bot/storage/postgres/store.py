"""The PostgreSQL store: the shared store (bot/storage/sql/store.py) on a PostgreSQL database with pgvector.

What is PostgreSQL's own is here: connecting, its migrations, its health, the search hooks
(`PostgresSearch`), and what follows a delete. A DELETE is final for every query at once, but the
rows' bytes stay in the table files as dead tuples until VACUUM reclaims them (and in the WAL until
it is recycled): after a forget-all this store runs VACUUM on the tables that held the person's text at
once, and after any other delete at the service's next pass, within minutes (`vacuum_deleted`;
docs/postgresql.md).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import psycopg

from bot.storage.postgres import schema
from bot.storage.postgres.connection import PostgresDatabase, connect
from bot.storage.postgres.search import PostgresSearch
from bot.storage.sql.rows import select
from bot.storage.sql.store import SqlStore

log = logging.getLogger(__name__)

# Every table that holds people's words: what a forget-all vacuums.
TEXT_TABLES = (
    "facts",
    "fact_vectors",
    "fact_words",
    "fact_sources",
    "fact_events",
    "pending_messages",
    "episodes",
    "episode_sources",
    "episode_points",
    "point_sources",
)

# What `check` says of the vectors' type.
PRECISION = {"vector": "float32", "halfvec": "half-precision"}


class Store(PostgresSearch, SqlStore):
    """Synchronous PostgreSQL + pgvector store. Use `AsyncStore` from async code."""

    conn: PostgresDatabase
    _deleted_since_vacuum = False  # a delete left dead tuples that the next `vacuum_deleted` reclaims

    @classmethod
    def connect(cls, location: Path | str) -> PostgresDatabase:
        """Connect to the URL; the first migration enables pgvector (CREATE EXTENSION) if it is not yet."""
        return PostgresDatabase(connect(str(location)), str(location))

    def migrate(self) -> int:
        """Apply the numbered migrations past `schema_version`, then read the type the vectors are stored
        in (`halfvec` where pgvector has it) for the parameters that carry them; returns the version."""
        version = schema.migrate(self.conn)
        self.vector_type = schema.vector_type(self.conn)
        return version

    def _scrub(self, *, everything: bool = False) -> None:
        """After a forget-all, VACUUM the tables that held the person's text (see the module's docstring).

        Other deletes (one fact, a message, an opt-out's buffered messages) are noted, and the next
        `vacuum_deleted` (the service calls it every few minutes) vacuums them together: a VACUUM reads
        every index of the tables, too slow to follow each delete on a large database.
        """
        if not everything:
            self._deleted_since_vacuum = True
            return
        self._vacuum()

    def vacuum_deleted(self) -> bool:
        """VACUUM the tables that held people's text when something was deleted since the last one, so its
        bytes leave the table files within minutes rather than at autovacuum's pleasure; whether it ran."""
        if not self._deleted_since_vacuum:
            return False
        self._vacuum()
        return True

    def _vacuum(self) -> None:
        self._deleted_since_vacuum = False
        try:
            self.conn.raw.execute(f"VACUUM (INDEX_CLEANUP ON) {', '.join(TEXT_TABLES)}")
        except psycopg.Error as exc:  # the data is deleted all the same: say why the space was not reclaimed
            self._deleted_since_vacuum = True
            log.warning("VACUUM after a forget failed (autovacuum will reclaim the space later): %s", exc)

    def word_index_pieces(self) -> int:
        """One: `fact_words` is read through the (scope, user_id) index, one person's rows."""
        return 1

    def tidy_word_index(self, pages: int) -> bool:
        """Nothing to fold (`word_index_pieces`)."""
        return False

    def health(self) -> dict[str, Any]:
        """What `check` reports: server and pgvector versions, the vectors' type, schema, the text index and
        the embedding."""
        [versions] = select(
            self.conn,
            "SELECT current_setting('server_version') AS server, "
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector') AS vector",
        )
        self.conn.execute(
            "SELECT count(*) FROM fact_words WHERE words @@ to_tsquery('simple', 'probe:*')"
        ).fetchone()
        model, dims = self.embedding_meta()
        server = str(versions["server"]).split()[0]
        return {
            "backend": "PostgreSQL",
            "description": (
                f"PostgreSQL {server}, pgvector {versions['vector']}, {PRECISION[self.vector_type]} vectors, "
                "full-text search"
            ),
            "postgresql_version": server,
            "pgvector_version": versions["vector"],
            "vector_type": self.vector_type,
            "schema_version": schema.schema_version(self.conn),
            "full_text_search": True,
            "embedding_model": model,
            "embedding_dimensions": dims,
        }
