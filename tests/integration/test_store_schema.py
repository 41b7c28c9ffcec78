"""The two backends' migrations: the same change under the same number, and the same tables and columns
after each of them (names: the types are each backend's), but for the differences listed here."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.storage.postgres.connection import PostgresDatabase
from bot.storage.postgres.connection import connect as connect_postgres
from bot.storage.postgres.schema import MIGRATIONS as POSTGRES_MIGRATIONS
from bot.storage.postgres.schema import PostgresSchema
from bot.storage.sql import migrations
from bot.storage.sqlite.connection import connect as connect_sqlite
from bot.storage.sqlite.schema import MIGRATIONS as SQLITE_MIGRATIONS
from bot.storage.sqlite.schema import SqliteSchema

Tables = dict[str, set[str]]

# What one backend has and the other has not, by design. A table or column missing here fails the test.
ONLY_SQLITE: Tables = {
    # The keyword index (from 0008): a contentless FTS5 table keyed by fact id, with the shadow tables
    # FTS5 keeps and an fts5vocab table listing its terms.
    "owner_words": {"words"},
    "owner_words_config": {"k", "v"},
    "owner_words_data": {"id", "block"},
    "owner_words_idx": {"segid", "term", "pgno"},
    "owner_words_terms": {"term", "doc", "cnt"},
    # AUTOINCREMENT's counters (from 0006; an identity column's sequence on PostgreSQL).
    "sqlite_sequence": {"name", "seq"},
}
# Until 0008, the keyword index was an FTS5 table holding each fact's text and its person's token.
FORMER_SQLITE: Tables = {
    "facts_fts": {"text", "owner"},
    "facts_fts_config": {"k", "v"},
    "facts_fts_content": {"id", "c0", "c1"},
    "facts_fts_data": {"id", "block"},
    "facts_fts_docsize": {"id", "sz"},
    "facts_fts_idx": {"segid", "term", "pgno"},
}
# Columns only PostgreSQL has from a migration on: from 0011 its vector rows name their owner (SQLite's no
# longer do), and from 0018 a fact's row holds a copy of its sources that its search reads.
ONLY_POSTGRES_SINCE: dict[int, Tables] = {
    11: {"fact_vectors": {"scope", "user_id"}},
    18: {"facts": {"sources"}},
}
ONLY_POSTGRES: Tables = {
    # The keyword index: a tsvector per active fact.
    "fact_words": {"fact_id", "scope", "user_id", "words"},
    # The migrations applied (PRAGMA user_version on SQLite).
    "schema_version": {"version", "file"},
}


def sqlite_tables(conn: sqlite3.Connection) -> Tables:
    rows = conn.execute(
        "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p WHERE m.type = 'table'"
    ).fetchall()
    return tables_of(rows)


def postgres_tables(db: PostgresDatabase) -> Tables:
    rows = db.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()"
    ).fetchall()
    return tables_of(rows)


def tables_of(rows: list[tuple[str, str]]) -> Tables:
    tables: Tables = {}
    for table, column in rows:
        tables.setdefault(table, set()).add(column)
    return tables


def without(tables: Tables, known: Tables) -> Tables:
    return {table: columns for table, columns in tables.items() if table not in known}


def test_each_change_has_the_same_number_and_name_on_both_backends() -> None:
    assert [m.name for m in SQLITE_MIGRATIONS] == [m.name for m in POSTGRES_MIGRATIONS]


def test_both_backends_hold_the_same_tables_and_columns_after_each_migration(
    tmp_path: Path, postgres_url: str
) -> None:
    sqlite = connect_sqlite(tmp_path / "parity.sqlite3")
    postgres = PostgresDatabase(connect_postgres(postgres_url), postgres_url)
    try:
        for number in range(1, len(SQLITE_MIGRATIONS) + 1):
            migrations.migrate(SqliteSchema(sqlite), SQLITE_MIGRATIONS[:number])
            migrations.migrate(PostgresSchema(postgres), POSTGRES_MIGRATIONS[:number])
            on_sqlite, on_postgres = sqlite_tables(sqlite), postgres_tables(postgres)
            for since, columns in ONLY_POSTGRES_SINCE.items():
                if number >= since:
                    on_postgres = {t: c - columns.get(t, set()) for t, c in on_postgres.items()}
            assert without(on_sqlite, ONLY_SQLITE | FORMER_SQLITE) == without(on_postgres, ONLY_POSTGRES), (
                number
            )
        assert {t: c for t, c in on_sqlite.items() if t in ONLY_SQLITE} == ONLY_SQLITE
        assert {t: c for t, c in on_postgres.items() if t in ONLY_POSTGRES} == ONLY_POSTGRES
    finally:
        sqlite.close()
        postgres.close()
