"""Storage on SQLite with sqlite-vec, the embedded default.

connection (driver, connect, errors, transactions) <- schema (migrations, meta) <- rows (rows to
models) <- search, buffer, people <- facts <- store (`Store`: the parts over one connection, and the
writes that span their tables).
"""

from bot.storage.sqlite.store import Store

__all__ = ["Store"]
