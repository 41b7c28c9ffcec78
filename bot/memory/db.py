"""Opening an SQLite connection with sqlite-vec loaded, on Pythons that cannot load extensions.

Many Python builds (this project's CI among them) lack `sqlite3.Connection.enable_load_extension`.
`sqlean.py` is a drop-in sqlite3 with extension loading and a recent SQLite (FTS5 secure-delete needs
3.42+), so it is preferred; the standard module is the fallback.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)


class DatabaseError(Exception):
    """The database cannot be used; the message says what to do about it."""


def _driver() -> ModuleType:
    try:
        import sqlean

        return sqlean
    except ImportError:
        if hasattr(sqlite3.Connection, "enable_load_extension"):
            return sqlite3
        raise DatabaseError(
            "cannot load sqlite-vec: this Python's sqlite3 has no enable_load_extension and sqlean.py "
            "is not installed (pip install sqlean.py)"
        ) from None


def connect(path: Path | str, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), with sqlite-vec loaded."""
    driver = _driver()
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    target = f"file:{path}?mode=ro" if readonly else str(path)
    try:
        conn = driver.connect(
            target, uri=readonly, isolation_level=None, check_same_thread=False, timeout=30.0
        )
    except driver.Error as exc:
        raise DatabaseError(f"cannot open database {path}: {exc}") from exc
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except (ImportError, AttributeError, driver.Error) as exc:
        conn.close()
        raise DatabaseError(f"cannot load the sqlite-vec extension: {exc}") from exc
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("PRAGMA busy_timeout = 30000")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn
