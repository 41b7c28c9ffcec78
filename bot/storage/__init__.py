"""Storage on SQLite with sqlite-vec: the only package that speaks SQL.

connection (driver, connect, errors, transactions) <- schema (migrations, meta) <- rows (rows to
models) <- search, buffer, people <- facts <- store (`Store`: the parts over one connection, and the
writes that span their tables) <- worker (`AsyncStore`: the store's own thread, for async code).
"""

from bot.storage.connection import DatabaseError, EmbeddingMismatchError
from bot.storage.store import Store
from bot.storage.worker import AsyncStore

__all__ = ["AsyncStore", "DatabaseError", "EmbeddingMismatchError", "Store"]
