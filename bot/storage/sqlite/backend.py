"""The SQLite backend as `locations.backend_for` hands it out for a file path."""

from bot.storage.backend import Backend
from bot.storage.sqlite.connection import describe_error, row_errors, sqlite_errors
from bot.storage.sqlite.store import Store

BACKEND = Backend(
    name="SQLite",
    open=Store.open,
    errors=sqlite_errors(),
    row_errors=row_errors(),
    describe=describe_error,
)
