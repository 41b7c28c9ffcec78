"""The database's own facts in its `meta` table: the embedding model its vectors were made with, and the
progress of a re-embedding. Mixing vectors of two models silently ruins every search, so opening a
database made with another model is refused (`check_embedding`)."""

from __future__ import annotations

from bot.storage.errors import EmbeddingMismatchError
from bot.storage.sql.database import Database


def read_meta(conn: Database) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def set_meta(conn: Database, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def check_embedding(conn: Database, model: str, dimensions: int, allow_change: bool) -> None:
    """Record the embedding model in a new database; in a used one, refuse another model or dimension.

    A mismatch raises EmbeddingMismatchError naming `python -m bot reembed`.
    """
    meta = read_meta(conn)
    if "embedding_model" not in meta:
        with conn.transaction():
            set_meta(conn, "embedding_model", model)
            set_meta(conn, "embedding_dimensions", str(dimensions))
        return
    if allow_change:
        return
    if "reembed_target" in meta:
        raise EmbeddingMismatchError(
            f"a re-embedding to {meta['reembed_target']} was interrupted; finish it with `python -m bot reembed`"
        )
    stored = (meta["embedding_model"], int(meta["embedding_dimensions"]))
    if stored != (model, dimensions):
        raise EmbeddingMismatchError(
            f"the database holds vectors of {stored[0]} at {stored[1]} dimensions but EMBEDDING_MODEL/"
            f"EMBEDDING_DIMENSIONS say {model} at {dimensions}; run `python -m bot reembed` to re-embed "
            "every fact with the new model, or set the old values back"
        )
