"""Copying an SQLite database into PostgreSQL: `python -m bot migrate --to postgresql://...`.

Table by table, in batches ordered by each table's key, every row as it is (ids included, so facts keep
their ids, history, sources and events): facts with their history, vectors (archived ones too),
sources, events, episodes with their sources and vectors, the message buffer, people and opt-outs,
server settings, ignored channels, personas, the bot's state and the use per day. The text index is not
copied but rebuilt from the active facts by the target's own hook, as its writes would. Leases (`claims`) belong to
running processes and stay behind.

Each batch is one transaction, so an interrupted copy is resumed by running the same command again (the
target's `meta` names the file and the state of the copy). The source may have changed in between: a
copy, first or resumed, ends with the target equal to the source. Rows the source no longer holds are
deleted from the target first (facts as a forget deletes them, with their words, and the text tables
vacuumed), and rows changed since are rewritten (a changed fact leaves the text index and comes back with
its new words if active). At the end the rows of every table are counted on both sides; a copy that adds
up is finished, and a finished copy is never copied over again: the bot may have written to it since.
The target must be empty unless it holds an unfinished run of this very copy or the operator asks for a
merge, which adds the rows the target lacks and changes or removes none of its own.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.storage.errors import MigrationRefused
from bot.storage.sql.meta import read_meta, set_meta
from bot.storage.sql.rows import scalar, select
from bot.storage.sql.store import SqlStore

BATCH = 1000
MAX_PARAMETERS = 30_000  # per statement (PostgreSQL takes at most 65,535)
SOURCE_KEY = "migrated_from"  # in the target's meta: the file an (interrupted) copy came from
STATE_KEY = "migration_state"  # in the target's meta: COPYING, MERGING or FINISHED
COPYING, MERGING, FINISHED = "copying", "merging", "finished"
EMBEDDING_META = ("embedding_model", "embedding_dimensions")  # the target records them when it opens
OWN_META = (SOURCE_KEY, STATE_KEY, *EMBEDDING_META)  # the target's own, never the source's

# (table, key columns): in an order that inserts every row after the rows it refers to.
TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("meta", ("key",)),
    ("users", ("scope", "user_id")),
    ("guild_settings", ("guild_id",)),
    ("ignored_channels", ("guild_id", "channel_id")),
    ("channel_personas", ("guild_id", "channel_id")),
    ("auto_reply_channels", ("guild_id", "channel_id")),
    ("app_state", ("key",)),
    ("facts", ("id",)),
    ("fact_sources", ("fact_id", "message_id")),
    ("fact_vectors", ("fact_id",)),
    ("stale_vectors", ("fact_id",)),
    ("fact_events", ("id",)),
    ("pending_messages", ("seq",)),
    ("episodes", ("id",)),
    ("episode_sources", ("episode_id", "message_id")),
    ("episode_points", ("id",)),
    ("point_sources", ("point_id", "message_id")),
    ("stale_episodes", ("episode_id",)),
    ("use_per_day", ("scope", "day", "what")),
    ("forget_marks", ("scope", "user_id")),
)
VECTOR_COLUMNS = {("facts", "archived_embedding"), ("fact_vectors", "embedding"), ("episodes", "embedding")}
# Tables holding people's words (a rewrite of one asks for a VACUUM, like a removal).
WORDS_TABLES = (
    "facts",
    "fact_vectors",
    "fact_sources",
    "fact_events",
    "pending_messages",
    "episodes",
    "episode_points",
)
LINKED_LATER = {("facts", "superseded_by")}  # the fact it points to may be newer: `_link_history` sets it
# SQLite's vector rows with their fact's owner, as PostgreSQL's rows hold them.
VECTORS_WITH_OWNER = (
    "SELECT v.fact_id AS fact_id, f.scope AS scope, f.user_id AS user_id, v.embedding AS embedding "
    "FROM fact_vectors AS v JOIN facts AS f ON f.id = v.fact_id"
)


@dataclass
class MigrationReport:
    """Rows per table on both sides after the copy, and what the copy reconciled: rows removed from the
    target because the source no longer holds them, rows updated because they changed in the source.
    `resumed` when an earlier run had begun it, `merged` when it added to a database's own memory."""

    source_rows: dict[str, int] = field(default_factory=dict)
    target_rows: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    resumed: bool = False
    merged: bool = False

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
    progress: Callable[[int, int], None] | None = None,
) -> MigrationReport:
    """Copy `source` (an SQLite store) into `target`, resumably, reconcile what changed, and count both sides.

    `progress(rows copied so far, rows of every table)` is called after each batch.
    """
    _check_embeddings(source, target)
    state, resumed = _state(read_meta(target.conn), source_name, into_non_empty, _holds_anything(target))
    report = MigrationReport(resumed=resumed, merged=state == MERGING)
    with target.conn.transaction():
        set_meta(target.conn, SOURCE_KEY, source_name)
        set_meta(target.conn, STATE_KEY, state)
    if not report.merged:
        for table, key in reversed(TABLES):  # rows referring to others first
            report.removed[table] = _remove_missing(source, target, table, key, batch)
    total = sum(_count(source, table) for table, _ in TABLES)
    copied = 0
    for table, key in TABLES:
        report.updated[table] = 0
        for rows in _batches(source, _as_read(table, source, target), key, batch):
            report.updated[table] += _write(
                target, table, key, [_converted(table, row) for row in rows], update=not report.merged
            )
            copied += len(rows)
            if progress:
                progress(copied, total)
    _link_history(source, target, batch, merge=report.merged)
    _index_active_words(target, batch)
    _reset_identities(source, target)
    if any(report.removed.values()) or any(report.updated.get(table) for table in WORDS_TABLES):
        target._scrub(everything=True)  # removed and replaced words leave the files, as after a forget
    for table, _ in TABLES:
        report.source_rows[table] = _count(source, table)
        report.target_rows[table] = _count(target, table)
    # The meta rows differ by design: the target keeps where it came from.
    report.target_rows["meta"] -= 2
    if report.verified:
        with target.conn.transaction():
            set_meta(target.conn, STATE_KEY, FINISHED)
    return report


def _check_embeddings(source: SqlStore, target: SqlStore) -> None:
    """Vectors of one model only: the source's re-embedding finished, and the target's model the same."""
    if "reembed_target" in read_meta(source.conn):
        raise MigrationRefused(
            "a re-embedding of the source was interrupted; finish it (python -m bot reembed) first"
        )
    if target.embedding_meta() != source.embedding_meta():
        raise MigrationRefused(
            f"the target holds vectors of {target.embedding_meta()[0]}, the source of "
            f"{source.embedding_meta()[0]}: copy into an empty database"
        )


def _state(meta: dict[str, str], source_name: str, into_non_empty: bool, holds: bool) -> tuple[str, bool]:
    """What this run does (COPYING or MERGING) and whether it resumes an earlier run; refused when the
    target holds other memory, or a finished copy the bot may have changed since."""
    earlier = meta.get(STATE_KEY, COPYING) if meta.get(SOURCE_KEY) == source_name else None
    if earlier in (COPYING, MERGING):
        return earlier, True
    if earlier == FINISHED and not into_non_empty:
        raise MigrationRefused(
            f"the target database already holds a finished copy of {source_name}; the bot may have "
            "changed it since, and copying again would undo that (bringing back what was forgotten "
            "there): copy into an empty database"
        )
    if not holds:
        return COPYING, False
    if into_non_empty:
        return MERGING, False
    raise MigrationRefused(
        "the target database already holds memory; copy into an empty database, or pass "
        "--into-non-empty to add this one to it (rows with the same keys are kept as they are)"
    )


def _holds_anything(store: SqlStore) -> bool:
    return any(_count(store, table) for table in ("facts", "users", "pending_messages", "guild_settings"))


def _count(store: SqlStore, table: str) -> int:
    return int(scalar(store.conn, f"SELECT count(*) FROM {table}"))


def _batches(
    store: SqlStore, table: str, key: tuple[str, ...], size: int, columns: Sequence[str] = ("*",)
) -> Iterator[list[Any]]:
    """The table's rows in key order, `size` at a time (keyset paging: no OFFSET rescans)."""
    ordered = ", ".join(key)
    after: tuple[Any, ...] | None = None
    while True:
        where = f"WHERE ({ordered}) > ({', '.join('?' * len(key))}) " if after is not None else ""
        rows = select(
            store.conn,
            f"SELECT {', '.join(columns)} FROM {table} {where}ORDER BY {ordered} LIMIT ?",
            (*(after or ()), size),
        )
        if not rows:
            return
        yield rows
        after = tuple(rows[-1][k] for k in key)


def _as_read(table: str, source: SqlStore, target: SqlStore) -> str:
    """What the copy reads `table` from: the table, or for vector rows a target names by their owner
    (PostgreSQL's, SQLite's do not), the rows with their fact's owner."""
    if table == "fact_vectors" and target.VECTOR_OWNER and not source.VECTOR_OWNER:
        return f"({VECTORS_WITH_OWNER}) AS fact_vectors"
    return table


def _remove_missing(source: SqlStore, target: SqlStore, table: str, key: tuple[str, ...], size: int) -> int:
    """Delete the target's rows whose keys the source no longer holds (forgotten, deleted, dropped since an
    earlier run copied them); facts go as a forget deletes them. Returns how many went."""
    removed = 0
    for rows in _batches(target, table, key, size, key):
        keys = [tuple(r[k] for k in key) for r in rows if table != "meta" or r["key"] not in OWN_META]
        held = _held(source, table, key, keys)
        if gone := [k for k in keys if k not in held]:
            with target.conn.transaction():
                if table == "facts":
                    target._delete_facts([fact_id for (fact_id,) in gone])
                else:
                    match = " AND ".join(f"{k} = ?" for k in key)
                    target.conn.executemany(f"DELETE FROM {table} WHERE {match}", gone)
            removed += len(gone)
    return removed


def _held(
    store: SqlStore, table: str, key: tuple[str, ...], keys: Sequence[tuple[Any, ...]]
) -> set[tuple[Any, ...]]:
    """Which of `keys` the table holds."""
    if not keys:
        return set()
    columns = ", ".join(key)
    rows = ", ".join(f"({', '.join('?' * len(key))})" for _ in keys)
    found = store.conn.execute(
        f"SELECT {columns} FROM {table} WHERE ({columns}) IN (VALUES {rows})", [v for k in keys for v in k]
    ).fetchall()
    return {tuple(row) for row in found}


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
    if table == "meta" and values["key"] in OWN_META:
        return {}
    return values


def _write(
    target: SqlStore, table: str, key: tuple[str, ...], rows: Sequence[dict[str, Any]], *, update: bool
) -> int:
    """Insert rows the target lacks and, when `update`, rewrite those that differ from the source's; a
    rewritten fact leaves the text index (`_index_active_words` puts it back, with its words, if active).
    Returns how many rows were rewritten."""
    rows = [r for r in rows if r]
    if not rows:
        return 0
    columns = list(rows[0])
    changing = [c for c in columns if c not in key and (table, c) not in LINKED_LATER] if update else []
    conflict = "DO NOTHING"
    if changing:
        conflict = (
            f"DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in changing)} "
            f"WHERE ({', '.join(f'{table}.{c}' for c in changing)}) "
            f"IS DISTINCT FROM ({', '.join(f'excluded.{c}' for c in changing)})"
        )
    vectors = [c for c in columns if (table, c) in VECTOR_COLUMNS]
    values = [
        tuple(target._vector(r[c]) if c in vectors and r[c] is not None else r[c] for c in columns)
        for r in rows
    ]
    per_statement = max(1, MAX_PARAMETERS // len(columns))
    rewritten: list[Any] = []
    with target.conn.transaction():
        for start in range(0, len(values), per_statement):
            part = values[start : start + per_statement]
            marks = ", ".join(f"({', '.join('?' * len(columns))})" for _ in part)
            rewritten += [
                r
                for r in select(
                    target.conn,
                    f"INSERT INTO {table} ({', '.join(columns)}) VALUES {marks} ON CONFLICT ({', '.join(key)}) "
                    f"{conflict} RETURNING {', '.join(key)}, xmax = 0 AS inserted",
                    [v for row in part for v in row],
                )
                if not r["inserted"]  # xmax is 0 on a row this statement inserted
            ]
        if table == "facts":
            for r in rewritten:
                target._unindex_words(r["id"])
    return len(rewritten)


def _link_history(source: SqlStore, target: SqlStore, size: int, *, merge: bool) -> None:
    """Point superseded facts at their successors (and no longer superseded ones at none), now that every
    fact is there; a merge only adds links."""
    for rows in _batches(source, "facts", ("id",), size, ("id", "superseded_by")):
        links = [(r["id"], r["superseded_by"]) for r in rows if r["superseded_by"] is not None or not merge]
        if not links:
            continue
        with target.conn.transaction():
            target.conn.execute(
                "UPDATE facts AS f SET superseded_by = v.successor "
                "FROM unnest(?::bigint[], ?::bigint[]) AS v(id, successor) "
                "WHERE f.id = v.id AND f.superseded_by IS DISTINCT FROM v.successor",
                ([fact_id for fact_id, _ in links], [successor for _, successor in links]),
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
            ("episode_points", "id"),
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
    progress: Callable[[int, int], None] | None = None,
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
