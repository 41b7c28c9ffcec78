"""The PostgreSQL backend as `locations.backend_for` hands it out for a postgresql:// URL."""

from bot.storage.backend import Backend
from bot.storage.postgres.connection import describe_error, postgres_errors, row_errors
from bot.storage.postgres.store import Store

BACKEND = Backend(
    name="PostgreSQL",
    open=Store.open,
    errors=postgres_errors(),
    row_errors=row_errors(),
    describe=describe_error,
)
