"""The connection: psycopg 3 (synchronous) to a PostgreSQL server with pgvector, its errors, transactions.

The store runs on the worker's one thread (bot/storage/worker.py), so one synchronous connection in
autocommit mode serves it; a write opens an explicit transaction. Every write transaction first takes
one advisory lock, so writes from several processes (the bot and a CLI command beside it) follow each
other as they do on SQLite, and every `Storage` method keeps its atomicity against them.
"""

from __future__ import annotations

import contextlib
import functools
import struct
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg import errors as pgerrors
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.rows import dict_row

from bot.storage.errors import DatabaseError
from bot.storage.sql.database import Row

# pg_advisory_xact_lock key of every write (the bytes of "membot" as a number): one writer at a time.
WRITE_LOCK = 0x6D656D626F74


def postgres_errors() -> tuple[type[Exception], ...]:
    """The driver's error base class, for callers that report any database failure."""
    return (psycopg.Error,)


def row_errors() -> tuple[type[Exception], ...]:
    """Errors a statement raises because of the values it was given, not because of the database.

    Text with a NUL character or a lone surrogate, a number out of range, a value psycopg cannot pass,
    a constraint the row breaks: writing the same row again fails the same way.
    """
    return (ValueError, TypeError, OverflowError, psycopg.DataError, psycopg.IntegrityError)


_CONNECTION_HINTS = (
    ("password authentication failed", "the server refused the user or password: check them in DATABASE_URL"),
    ("no password supplied", "the server wants a password: put it in DATABASE_URL"),
    ("does not exist", "the database or role does not exist on the server: create it or fix DATABASE_URL"),
    ("no pg_hba.conf entry", "the server does not accept this user from this host (pg_hba.conf)"),
    ("ssl", "the connection's TLS settings do not match the server's (sslmode in DATABASE_URL)"),
    ("timeout", "the server did not answer in time: check the host, port and firewall"),
)


def describe_error(url: str, exc: BaseException) -> str:
    """One line saying what is wrong with the PostgreSQL database and what to do.

    It names no URL (the caller shows the location with its password masked), and a password the
    driver's text repeats is masked too.
    """
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    with contextlib.suppress(ValueError):
        if password := urlsplit(url).password:
            first = first.replace(password, "****")
    lowered = first.lower()
    if isinstance(exc, pgerrors.InsufficientPrivilege) and "vector" in lowered:
        return (
            "the pgvector extension is not enabled and this user may not enable it: have the database "
            "owner or an administrator run CREATE EXTENSION vector in this database"
        )
    if "vector" in lowered and ("extension" in lowered or "type" in lowered):
        return (
            f"the pgvector extension is missing ({first}): install pgvector on the server (managed "
            "services offer it) and run CREATE EXTENSION vector in this database"
        )
    if isinstance(exc, pgerrors.ReadOnlySqlTransaction):
        return "PostgreSQL is read-only here (a standby?): point DATABASE_URL at the primary"
    if isinstance(exc, pgerrors.InsufficientPrivilege):
        return f"PostgreSQL denied an operation ({first}): the bot's user must own its tables"
    if isinstance(exc, psycopg.OperationalError):
        hint = next((h for key, h in _CONNECTION_HINTS if key in lowered), "is the server running there?")
        return f"cannot connect to PostgreSQL: {first} ({hint})"
    return f"PostgreSQL: {first}"


class Vector:
    """A vector as a statement's parameter, sent in pgvector's binary format (see `VectorDumper`)."""

    __slots__ = ("values",)

    def __init__(self, values: Sequence[float]) -> None:
        self.values = values


class HalfVector(Vector):
    """A vector for a `halfvec` column, sent in its binary format (see `HalfVectorDumper`)."""

    __slots__ = ()


class VectorDumper(Dumper):
    """pgvector's binary input: the width and a reserved 0 (16 bits each), then big-endian float32s.

    Nothing is formatted as text for the server to parse again (768 numbers cost more to print than a
    search takes to run). The parameter's type is left to the statement (oid 0): the column it is
    written to, or the stored vector it is compared with (`embedding <=> ?`), whose binary input
    (vector_recv) checks the values as the text input does.
    """

    format = Format.BINARY

    def dump(self, obj: Vector) -> bytes:
        floats = array("f", obj.values)
        if sys.byteorder == "little":
            floats.byteswap()
        return struct.pack(">HH", len(floats), 0) + floats.tobytes()


class HalfVectorDumper(Dumper):
    """`halfvec`'s binary input (halfvec_recv): the same header, then big-endian IEEE half floats, each
    rounded to the nearest (a value beyond half precision's 65,504 raises OverflowError)."""

    format = Format.BINARY

    def dump(self, obj: Vector) -> bytes:
        return struct.pack(f">HH{len(obj.values)}e", len(obj.values), 0, *obj.values)


def connect(url: str) -> psycopg.Connection[tuple[Any, ...]]:
    """An autocommit connection (transactions are explicit) that sends `Vector`s and `HalfVector`s in
    binary; any failure is a DatabaseError saying what to do."""
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10, application_name="memory-bot")
    except psycopg.Error as exc:
        raise DatabaseError(describe_error(url, exc)) from exc
    conn.adapters.register_dumper(Vector, VectorDumper)
    conn.adapters.register_dumper(HalfVector, HalfVectorDumper)
    return conn


@functools.lru_cache(maxsize=1024)
def driver_sql(sql: str) -> str:
    """The shared SQL's `?` parameters as psycopg's `%s` (a literal `%` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresDatabase:
    """The connection as the shared SQL uses it (bot/storage/sql/database.py).

    A connection the server dropped (a restart, a failover, a network cut) fails the call that finds
    out, as any database error does (callers retry or report it), and the next call connects again.
    """

    def __init__(self, conn: psycopg.Connection[tuple[Any, ...]], url: str) -> None:
        self.raw = conn
        self.url = url
        self._closed = False
        self._in_transaction = False

    def live(self) -> psycopg.Connection[tuple[Any, ...]]:
        """The connection, opened again if the last one broke: never after `close()`, and never inside a
        transaction, whose remaining statements must fail with it rather than run on their own."""
        if not (self._closed or self._in_transaction) and (self.raw.closed or self.raw.broken):
            self.raw = connect(self.url)
        return self.raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[tuple[Any, ...]]:
        return self.live().execute(driver_sql(sql), params)

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> psycopg.Cursor[tuple[Any, ...]]:
        cursor = self.live().cursor()
        cursor.executemany(driver_sql(sql), list(params))
        return cursor

    def select(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self.live().cursor(row_factory=dict_row) as cursor:  # fetchall reads the rows in C
            rows: list[Row] = [*cursor.execute(driver_sql(sql), params).fetchall()]
        return rows

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN ... COMMIT (ROLLBACK on any exception), after the write lock: one writer at a time."""
        with self.live().transaction():
            self._in_transaction = True
            try:
                self.raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield
            finally:
                self._in_transaction = False

    def pipeline(self) -> contextlib.AbstractContextManager[psycopg.Pipeline]:
        return self.live().pipeline()

    def close(self) -> None:
        self._closed = True
        self.raw.close()
