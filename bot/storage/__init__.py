"""Storage: the only package that speaks SQL.

`errors` (what every backend raises) and `worker` (`AsyncStore`: a store's own thread, for async
code) serve the backends: `sqlite` (the embedded default, sqlite-vec) and beside it any other
implementation of the engine's `Storage` port (bot/memory/ports.py).
"""

from bot.storage.errors import DatabaseError, EmbeddingMismatchError
from bot.storage.sqlite import Store
from bot.storage.worker import AsyncStore

__all__ = ["AsyncStore", "DatabaseError", "EmbeddingMismatchError", "Store"]
