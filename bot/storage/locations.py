"""Which storage backend a database location names, and opening it.

A location is a file path (SQLite, the default) or a `postgresql://` URL. Callers outside storage
(the composition root) ask this module, so nothing else chooses or imports a backend.
"""

from __future__ import annotations

from pathlib import Path

from bot.memory.ports import Storage
from bot.storage.backend import Backend
from bot.storage.errors import DatabaseError


def is_url(location: Path | str) -> bool:
    return str(location).startswith(("postgresql://", "postgres://"))


def scheme(location: Path | str) -> str:
    return str(location).split(":", 1)[0]


def backend_for(location: Path | str) -> Backend:
    """The backend of `location`: PostgreSQL for a postgresql:// URL, SQLite for a path."""
    if is_url(location):
        try:  # only now: SQLite users need not install psycopg
            from bot.storage.postgres import backend as postgres
        except ImportError as exc:
            raise DatabaseError(
                f"a {scheme(location)}:// DATABASE_URL needs the PostgreSQL driver ({exc.name} is missing): "
                "pip install -e '.[postgres]'"
            ) from exc
        return postgres.BACKEND
    from bot.storage.sqlite import backend as sqlite

    return sqlite.BACKEND


def open_storage(
    location: Path | str, *, embedding_model: str, dimensions: int, allow_model_change: bool = False
) -> Storage:
    """Open (creating and migrating as needed) the database at `location`, checked against the model."""
    return backend_for(location).open(
        str(location),
        embedding_model=embedding_model,
        dimensions=dimensions,
        allow_model_change=allow_model_change,
    )
