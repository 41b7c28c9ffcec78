"""Copying an SQLite database into PostgreSQL: `python -m bot migrate --to postgresql://...`.

Table by table, in batches ordered by each table's key, every row as it is (ids included, so facts keep
their ids, history, sources and events): facts with their history, vectors (archived ones too),
sources, events, episodes with their sources and vectors, the message buffer, people and opt-outs,
server settings, ignored channels, personas and the bot's state. The text index is not copied but
rebuilt from the active facts by the target's own hook, as its writes would. Leases (`claims`) belong to
running processes and stay behind.

Every insert skips a row that is already there, and each batch is one transaction, so an interrupted
copy is resumed by running the same command again. The target must be empty unless it holds an earlier
run of this very copy (its `meta` says which file it came from) or the operator asks for a merge. At the
end the rows of every table are counted on both sides.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.storage.errors import DatabaseError
from bot.storage.sql.meta import read_meta, set_meta
from bot.storage.sql.rows import scalar, select
from bot.storage.sql.store import SqlStore

BATCH = 1000
SOURCE_KEY = "migrated_from"  # in the target's meta: the file an (interrupted) copy came from
EMBEDDING_META = ("embedding_model", "embedding_dimensions")  # the target records them when it opens

# (table, key columns): in an order that inserts every row after the rows it refers to.
TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("meta", ("key",)),
    ("users", ("scope", "user_id")),
    ("guild_settings", ("guild_id",)),
    ("ignored_channels", ("guild_id", "channel_id")),
    ("channel_personas", ("guild_id", "channel_id")),
    ("app_state", ("key",)),
    ("facts", ("id",)),
    ("fact_sources", ("fact_id", "message_id")),
    ("fact_vectors", ("fact_id",)),
    ("stale_vectors", ("fact_id",)),
    ("fact_events", ("id",)),
    ("pending_messages", ("seq",)),
    ("episodes", ("id",)),
    ("episode_sources", ("episode_id", "message_id")),
)
VECTOR_COLUMNS = {("facts", "archived_embedding"), ("fact_vectors", "embedding"), ("episodes", "embedding")}


@dataclass
class MigrationReport:
    """Rows per table on both sides after the copy; `resumed` when an earlier run had begun it."""

    source_rows: dict[str, int] = field(default_factory=dict)
    target_rows: dict[str, int] = field(default_factory=dict)
    resumed: bool = False

    @property
    def verified(self) -> bool:
        return self.source_rows == self.target_rows


def migrate(
    source: SqlStore,
    target: SqlStore,
    *,
    source_name: str,
    into_non_empty: bool = False,
    batch: int = BATCH,
    progress: Callable[[str, int], None] | None = None,
) -> MigrationReport:
    """Copy `source` (an SQLite store) into `target`, resumably, and count both sides.

    `progress(table, rows copied so far)` is called after each batch.
    """
    meta = read_meta(source.conn)
    if "reembed_target" in meta:
        raise DatabaseError(
            "a re-embedding of the source was interrupted; finish it (python -m bot reembed) first"
        )
    if target.embedding_meta() != source.embedding_meta():
        raise DatabaseError(
            f"the target holds vectors of {target.embedding_meta()[0]}, the source of "
            f"{source.embedding_meta()[0]}: copy into an empty database"
        )
    report = MigrationReport(resumed=read_meta(target.conn).get(SOURCE_KEY) == source_name)
    if not report.resumed and not into_non_empty and _holds_anything(target):
        raise DatabaseError(
            "the target database already holds memory; copy into an empty database, or pass "
            "--into-non-empty to add this one to it (rows with the same keys are kept as they are)"
        )
    with target.conn.transaction():
        set_meta(target.conn, SOURCE_KEY, source_name)
    for table, key in TABLES:
        copied = 0
        for rows in _batches(source, table, key, batch):
            _insert(target, table, [_converted(table, row) for row in rows])
            copied += len(rows)
            if progress:
                progress(table, copied)
    _link_history(source, target, batch)
    _index_active_words(target, batch)
    _reset_identities(source, target)
    for table, _ in TABLES:
        report.source_rows[table] = _count(source, table)
        report.target_rows[table] = _count(target, table)
    # The meta rows differ by design: the target keeps where it came from.
    report.target_rows["meta"] -= 1
    return report


def _holds_anything(store: SqlStore) -> bool:
    return any(_count(store, table) for table in ("facts", "users", "pending_messages", "guild_settings"))


def _count(store: SqlStore, table: str) -> int:
    return int(scalar(store.conn, f"SELECT count(*) FROM {table}"))


def _batches(store: SqlStore, table: str, key: tuple[str, ...], size: int) -> Iterator[list[Any]]:
    """The table's rows in key order, `size` at a time (keyset paging: no OFFSET rescans)."""
    columns = ", ".join(key)
    after: tuple[Any, ...] | None = None
    while True:
        where = f"WHERE ({columns}) > ({', '.join('?' * len(key))}) " if after is not None else ""
        rows = select(
            store.conn, f"SELECT * FROM {table} {where}ORDER BY {columns} LIMIT ?", (*(after or ()), size)
        )
        if not rows:
            return
        yield rows
        after = tuple(rows[-1][k] for k in key)


def _converted(table: str, row: Any) -> dict[str, Any]:
    """A source row as the target takes it: sqlite-vec's float32 blobs as lists of floats; superseded_by
    left for `_link_history` (the fact it points to is newer, so not copied yet)."""
    names = row.keys()  # a driver's Row iterates over its values, not its names
    values = {k: row[k] for k in names}
    for column in list(values):
        if (table, column) in VECTOR_COLUMNS and values[column] is not None:
            values[column] = array("f", values[column]).tolist()
    if table == "facts":
        values["superseded_by"] = None
    if table == "meta" and values["key"] in EMBEDDING_META:
        return {}
    return values


def _insert(target: SqlStore, table: str, rows: Sequence[dict[str, Any]]) -> None:
    rows = [r for r in rows if r]
    if not rows:
        return
    columns = list(rows[0])
    marks = ", ".join("?" for _ in columns)
    vectors = [c for c in columns if (table, c) in VECTOR_COLUMNS]
    with target.conn.transaction():
        target.conn.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) ON CONFLICT DO NOTHING",
            [
                tuple(target._vector(r[c]) if c in vectors and r[c] is not None else r[c] for c in columns)
                for r in rows
            ],
        )


def _link_history(source: SqlStore, target: SqlStore, size: int) -> None:
    """Point superseded facts at their successors, now that every fact is there."""
    links = [
        (r["superseded_by"], r["id"])
        for r in select(source.conn, "SELECT id, superseded_by FROM facts WHERE superseded_by IS NOT NULL")
    ]
    for start in range(0, len(links), size):
        with target.conn.transaction():
            target.conn.executemany(
                "UPDATE facts SET superseded_by = ? WHERE id = ?", links[start : start + size]
            )


def _index_active_words(target: SqlStore, size: int) -> None:
    """The target's text index for every active fact not in it yet (a resumed copy indexed some)."""
    while True:
        rows = select(
            target.conn,
            "SELECT f.id, f.scope, f.user_id, f.text FROM facts f WHERE f.status = 'active' "
            "AND NOT EXISTS (SELECT 1 FROM fact_words w WHERE w.fact_id = f.id) ORDER BY f.id LIMIT ?",
            (size,),
        )
        if not rows:
            return
        with target.conn.transaction():
            for r in rows:
                target._index_words(r["id"], r["scope"], r["user_id"], r["text"])


def _reset_identities(source: SqlStore, target: SqlStore) -> None:
    """New rows continue past every id either side ever handed out: the copied ids (written into identity
    columns without advancing them), the source's counter (a fact id deleted at the top is never used
    again, as on SQLite) and the target's own sequence (never moved back)."""
    counters = dict(source.conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
    with target.conn.transaction():
        for table, column in (
            ("facts", "id"),
            ("fact_events", "id"),
            ("pending_messages", "seq"),
            ("episodes", "id"),
        ):
            sequence = f"pg_get_serial_sequence('{table}', '{column}')"
            target.conn.execute(
                f"SELECT setval({sequence}, greatest(?, (SELECT max({column}) FROM {table}), "
                f"pg_sequence_last_value({sequence}::regclass)) + 1, false)",
                (int(counters.get(table, 0)),),
            )


def copy_database(
    source_path: Path,
    target_url: str,
    *,
    into_non_empty: bool = False,
    batch: int = BATCH,
    progress: Callable[[str, int], None] | None = None,
) -> MigrationReport:
    """Open the SQLite file and the PostgreSQL database (created and migrated as needed, recording the
    source's embedding model) and copy the one into the other."""
    from bot.storage.postgres.store import Store as PostgresStore
    from bot.storage.sqlite.store import Store as SqliteStore

    source = SqliteStore.open(source_path, embedding_model="", dimensions=0, allow_model_change=True)
    try:
        model, dimensions = source.embedding_meta()
        source.dimensions = dimensions
        target = PostgresStore.open(target_url, embedding_model=model, dimensions=dimensions)
        try:
            return migrate(
                source,
                target,
                source_name=str(source_path.resolve()),
                into_non_empty=into_non_empty,
                batch=batch,
                progress=progress,
            )
        finally:
            target.close()
    finally:
        source.close()
