"""The connection: SQLite with sqlite-vec loaded, its errors, and transactions.

Many Python builds (this project's CI among them) lack `sqlite3.Connection.enable_load_extension`.
`sqlean.py` is a drop-in sqlite3 with extension loading and a recent SQLite (FTS5 secure-delete needs
3.42+), so it is preferred; the standard module is the fallback.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from bot.storage.errors import DatabaseError
from bot.storage.sql.database import Row

log = logging.getLogger(__name__)


def _driver() -> ModuleType:
    try:
        import sqlean

        module: ModuleType = sqlean
        return module
    except ImportError:
        if hasattr(sqlite3.Connection, "enable_load_extension"):
            return sqlite3
        raise DatabaseError(
            "cannot load sqlite-vec: this Python's sqlite3 has no enable_load_extension and sqlean.py "
            "is not installed (pip install sqlean.py)"
        ) from None


def _drivers() -> list[ModuleType]:
    """The SQLite modules whose errors may reach callers: the standard one, and sqlean when installed."""
    drivers: list[ModuleType] = [sqlite3]
    with contextlib.suppress(ImportError):
        import sqlean

        drivers.append(sqlean)
    return drivers


def row_type(conn: sqlite3.Connection) -> type[sqlite3.Row]:
    """The `Row` class of the driver `conn` belongs to (each driver's cursor takes only its own)."""
    row: type[sqlite3.Row] = sys.modules[type(conn).__module__].Row
    return row


def sqlite_errors() -> tuple[type[Exception], ...]:
    """The error base classes of the SQLite drivers in use, for callers that report any database failure."""
    return tuple(driver.Error for driver in _drivers())


def row_errors() -> tuple[type[Exception], ...]:
    """Errors a statement raises because of the values it was given, not because of the database.

    Text with a lone surrogate (UnicodeEncodeError), an integer too large, a value of a type SQLite cannot
    bind, a constraint the row breaks: writing the same row again fails the same way.
    """
    errors: list[type[Exception]] = [ValueError, TypeError, OverflowError]
    for driver in _drivers():
        errors += [driver.IntegrityError, driver.DataError, driver.InterfaceError]
    return tuple(errors)


def describe_error(path: Path | str, exc: BaseException) -> str:
    """One line saying what is wrong with the database file and what to do, instead of SQLite's terse text."""
    message = str(exc)
    lowered = message.lower()
    if "not a database" in lowered:
        return f"{path} is not an SQLite database (check DATABASE_PATH)"
    if "readonly" in lowered or "read-only" in lowered:
        return f"database {path} is read-only: the bot needs write access to the file and its folder"
    if "unable to open" in lowered:
        return f"cannot open database {path}: check that it is a file the bot may create, read and write"
    if "locked" in lowered:
        return f"database {path} is locked by another process; try again when it has finished"
    if "malformed" in lowered:
        return f"database {path} is damaged ({message}); restore it from a backup"
    if "disk is full" in lowered or "no space" in lowered:
        return (
            f"the disk holding database {path} is full: free some space on it (or move DATABASE_PATH to a "
            "larger disk) and run the same command again; nothing was changed"
        )
    return f"database {path}: {message}"


def _make_folder(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseError(
            f"cannot create the folder {path.parent} for database {path}: {exc.strerror or exc}"
        ) from exc


def connect(path: Path | str, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), with sqlite-vec loaded.

    Every failure (no folder, not an SQLite file, read-only, locked) is a DatabaseError with a clear message.
    """
    driver = _driver()
    if str(path) != ":memory:":
        _make_folder(Path(path))
    target = f"file:{path}?mode=ro" if readonly else str(path)
    try:
        conn = driver.connect(
            target, uri=readonly, isolation_level=None, check_same_thread=False, timeout=30.0
        )
    except driver.Error as exc:
        raise DatabaseError(describe_error(path, exc)) from exc
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except (ImportError, AttributeError, driver.Error) as exc:
        conn.close()
        raise DatabaseError(f"cannot load the sqlite-vec extension: {exc}") from exc
    try:
        _configure(conn, readonly=readonly)
    except driver.Error as exc:
        # The first statements are where SQLite notices a file that is not a database, or read-only.
        conn.close()
        raise DatabaseError(describe_error(path, exc)) from exc
    return conn  # type: ignore[no-any-return]  # the driver module is chosen at run time


PAGE_SIZE = 65536
MMAP_BYTES = 1 << 40  # the whole file, as far as the SQLite build allows (sqlean: 1 TiB, standard: 2 GB)


def _configure(conn: sqlite3.Connection, *, readonly: bool) -> None:
    """Pragmas of every connection. A new file gets 64 KiB pages (set before WAL fixes the size): a fact's
    vector row (3 KiB at 768 dimensions) takes a 4 KiB page of its own, five share 16 KiB and 21 share
    64 KiB, so a million facts need 0.97 GB less than with 4 KiB pages and 0.16 GB less than with 16 KiB.
    An existing file keeps its page size.

    Reads go through a memory map: a vector search reads one 3 KiB row from each of 100 pages, and
    copying whole 16 KiB pages into SQLite's cache instead cost 0.4 ms of a 1 ms search at 1M facts.
    """
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("PRAGMA busy_timeout = 30000")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")


class Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (a crash mid-write leaves nothing half done)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:  # SQLite ends some failed transactions itself (a full disk)
            with contextlib.suppress(*sqlite_errors()):  # the first error is the one to tell
                self.conn.execute("ROLLBACK")


class SqliteDatabase:
    """The connection as the shared SQL uses it (bot/storage/sql/database.py): SQLite already speaks `?`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.raw.execute(sql, params)

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        return self.raw.executemany(sql, params)

    def select(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cursor = self.raw.cursor()
        cursor.row_factory = row_type(self.raw)
        rows: list[Row] = cursor.execute(sql, params).fetchall()
        return rows

    def transaction(self) -> Transaction:
        return Transaction(self.raw)

    def pipeline(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()  # in-process: no round trips to save

    def close(self) -> None:
        self.raw.close()
