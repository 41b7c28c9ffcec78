"""Storage on PostgreSQL with pgvector, chosen by DATABASE_URL=postgresql://...; needs psycopg
(`pip install -e '.[postgres]'`), imported only when such a URL is configured.

connection (psycopg, errors, transactions) <- schema (migrations) <- search (pgvector, tsvector) <-
store (`Store`: the shared store of bot/storage/sql with these) <- backend.
"""

from bot.storage.postgres.store import Store

__all__ = ["Store"]
