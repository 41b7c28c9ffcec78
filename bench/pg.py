"""A PostgreSQL server with pgvector for the benchmarks, from `pgserver` (a PyPI package bundling both).

A benchmark keeps its server's data folder in bench/.cache/ so a built database survives between runs.
Durability stays as the server ships it (fsync on, synchronous_commit on): the capture benchmark's
"durable" must mean what it means on a real server.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import psycopg


def available() -> bool:
    """Whether pgserver (the dev extra) is installed, so `--backend both` can be the default."""
    return importlib.util.find_spec("pgserver") is not None


# The memory settings of the plain-SQL reference (../shared/reference/pg_anchor.py), "sized for a 24 GiB
# machine": recall is held against that reference, so it runs on a server configured alike.
REFERENCE_SETTINGS = {
    "shared_buffers": "4GB",
    "work_mem": "64MB",
    "maintenance_work_mem": "2GB",
    "jit": "off",
}


class PgServer:
    """A server on one data folder, created on first use; stopped by `close()` unless another process uses it.

    `settings`: server settings to hold (ALTER SYSTEM, then a restart when one differed).
    """

    def __init__(self, folder: Path, settings: dict[str, str] | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self._start()
        changed = False
        for name, value in (settings or {}).items():
            if self.admin.execute("SELECT current_setting(%s)", (name,)).fetchone() != (value,):
                self.admin.execute(f"ALTER SYSTEM SET {name} = '{value}'")
                changed = True
        if changed:
            self.close()
            self._start()

    def _start(self) -> None:
        """The server on `folder` (started unless running) and an admin connection to it."""
        import pgserver

        self.server = pgserver.get_server(self.folder, cleanup_mode="stop")
        self.admin = psycopg.connect(self.server.get_uri(), autocommit=True)

    def url(self, database: str) -> str:
        return str(self.server.get_uri(database))

    def exists(self, database: str) -> bool:
        return bool(
            self.admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        )

    def create(self, database: str, *, replace: bool = False) -> str:
        """An empty database (dropped first when `replace`); returns its URL."""
        if replace:
            self.admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        if not self.exists(database):
            self.admin.execute(f"CREATE DATABASE {database}")
        return self.url(database)

    def settings(self) -> dict[str, Any]:
        """What the figures depend on: version, durability and memory settings."""
        names = (
            "server_version",
            "fsync",
            "synchronous_commit",
            "shared_buffers",
            "work_mem",
            "maintenance_work_mem",
            "jit",
        )
        return {
            name: self.admin.execute("SELECT current_setting(%s)", (name,)).fetchone()[0]  # type: ignore[index]
            for name in names
        }

    def warm(self, database: str) -> None:
        """Read the database's files once, so PostgreSQL is measured with a warm OS page cache as SQLite is."""
        row = self.admin.execute("SELECT oid FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if row is None:
            return
        for path in sorted((self.folder / "base" / str(row[0])).iterdir()):
            if path.is_file():
                with path.open("rb") as f:
                    while f.read(1 << 24):
                        pass

    def database_bytes(self, database: str) -> int:
        size: int = self.admin.execute("SELECT pg_database_size(%s)", (database,)).fetchone()[0]  # type: ignore[index]
        return size

    def close(self) -> None:
        self.admin.close()
        self.server.cleanup()
