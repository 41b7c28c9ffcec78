"""What the shared SQL needs from a backend: a connection that runs it, and the few statements that differ.

A backend hands the shared parts a `Database` (its connection behind `?` parameters, rows read by
column name, transactions) and fills the hooks of `Connected`: how a vector is passed and compared,
how a fact's words enter and leave the text index, and what deleted text needs to leave the files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

# A fact source as `fact_sources` holds it, in SOURCE_COLUMNS' order: the message id, whether it only
# repeated the fact (0/1), the channel, the thread's parent channel, whether the thread is private (0/1),
# and who said it.
SourceValues = tuple[str, int, str | None, str | None, int, str | None]


class Row(Protocol):
    """A row read by column name: the driver's Row, or a dict."""

    def __getitem__(self, key: str, /) -> Any: ...

    def keys(self) -> Iterable[str]: ...


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Database(Protocol):
    """A backend's connection as the shared SQL uses it; `?` marks a parameter whatever the driver's style."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement; its rows (if any) are plain tuples."""
        ...

    def executemany(self, sql: str, params: Iterable[Sequence[Any]]) -> Cursor:
        """Run one statement for each set of parameters; `rowcount` is the total."""
        ...

    def select(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row of a query, read by column name."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction: committed at the end of the block, rolled back on any exception."""
        ...

    def pipeline(self) -> AbstractContextManager[Any]:
        """Statements sent without waiting for each one's answer where the driver can (reading a result
        still waits for it): many small writes in one block cost one round trip each, not several."""
        ...

    def close(self) -> None: ...


class Connected:
    """What every part of a store shares: one `Database`, the width of every vector, and the backend's hooks.

    The hooks are the statements the backends cannot share; each backend's store fills them.
    """

    # The cosine distance between a stored vector (`embedding`) and a `?` parameter, as SQL.
    DISTANCE: ClassVar[str]
    # The case-insensitive LIKE of the backend (autocomplete finds "tea" in "Tea").
    LIKE: ClassVar[str] = "LIKE"
    # Whether a vector's row names its owner (scope, user_id) beside the fact's id: PostgreSQL reads a
    # person's vectors by that row's own index; SQLite finds them through the person's facts.
    VECTOR_OWNER: ClassVar[bool]
    # One person's vector rows (`fact_id`, `embedding`) with `?` for the scope and the user, as SQL.
    PERSON_VECTORS: ClassVar[str]

    def __init__(self, conn: Database, *, dimensions: int) -> None:
        self.conn = conn
        self.dimensions = dimensions

    def _tx(self) -> AbstractContextManager[Any]:
        return self.conn.transaction()

    def _check_width(self, vector: Sequence[float]) -> None:
        """Refuse a vector of another width than the stored ones: it would break every search it met."""
        if len(vector) != self.dimensions:
            raise ValueError(f"embedding has {len(vector)} dimensions, expected {self.dimensions}")

    def _vector(self, vector: Sequence[float]) -> object:
        """A vector as the parameter the backend stores and compares."""
        raise NotImplementedError

    def _index_words(self, fact_id: int, scope: str, user_id: str, text: str) -> None:
        """Put an active fact's words in the text index, confined to its person."""
        raise NotImplementedError

    def _source_copies(self, sources: Sequence[SourceValues]) -> dict[str, Any]:
        """The columns, beside its own, a new fact's row gets from its `sources` (by column name): none
        here; PostgreSQL's row keeps a copy of them for its search, which its triggers would otherwise
        write with a second version of the row."""
        return {}

    def _unindex_words(self, fact_id: int) -> None:
        """Take a fact's words out of the text index (superseded, corrected, deleted).

        Called before the fact's row changes (its text, its status): SQLite rebuilds the words from it.
        """
        raise NotImplementedError

    def _word_matches(self, scope: str, user_id: str, terms: Sequence[str]) -> tuple[str, Sequence[Any]]:
        """A query for the ids of one person's indexed facts holding a word starting with one of `terms`."""
        raise NotImplementedError

    def _scrub(self, *, everything: bool = False) -> None:
        """After deleting people's text: make it leave the files as far as the backend can.

        `everything`: a person's whole memory went (a forget-all), worth a heavier clean-up.
        """
        raise NotImplementedError
