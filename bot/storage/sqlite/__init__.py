"""Storage on SQLite with sqlite-vec, the embedded default.

connection (driver, connect, errors, transactions) <- schema (migrations) <- search (sqlite-vec,
FTS5) <- store (`Store`: the shared store of bot/storage/sql with these) <- backend.
"""

from bot.storage.sqlite.store import Store

__all__ = ["Store"]
