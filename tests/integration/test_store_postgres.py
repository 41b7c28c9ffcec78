"""What only PostgreSQL has: its migrations, its errors, and what a forget leaves behind (the counterparts
of the SQLite-only tests in test_store.py). Real PostgreSQL + pgvector, started by the suite."""

from __future__ import annotations

import psycopg
import pytest

from bot.memory.models import BufferedMessage, Decision, NewEpisode, NewFact, Operation, Origin
from bot.storage.errors import DatabaseError
from bot.storage.locations import backend_for
from bot.storage.postgres import Store, schema
from bot.storage.postgres.schema import MIGRATIONS, split_sql
from tests.conftest import PostgresDatabases
from tests.fakes import DIMS, unit


def open_store(url: str) -> Store:
    return Store.open(url, embedding_model="fake-embedding", dimensions=DIMS)


def tables(store: Store) -> list[tuple[str, str]]:
    return store.conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' "
        "ORDER BY table_name, column_name"
    ).fetchall()


def test_migrations_from_empty_and_reopening_are_idempotent(postgres_url: str) -> None:
    first = open_store(postgres_url)
    assert first.migrate() == len(MIGRATIONS)
    first.add_facts([NewFact("dm", "alice", "Alice", "Alice keeps bees", [], embedding=unit(1.0))])
    schema = tables(first)
    assert ("fact_words", "words") in schema and ("fact_vectors", "embedding") in schema
    first.close()
    for _ in range(2):
        again = open_store(postgres_url)
        assert tables(again) == schema
        assert [f.text for f in again.list_facts("dm", "alice")] == ["Alice keeps bees"]
        again.close()


def test_a_version_2_database_gains_community_memory_with_its_data_as_it_was(
    postgres: PostgresDatabases, postgres_url: str
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as old:
        old.execute("CREATE TABLE schema_version (version integer PRIMARY KEY)")
        for number, script in enumerate(MIGRATIONS[:2], start=1):
            for statement in split_sql(script):
                old.execute(statement)  # type: ignore[call-overload]
            old.execute("INSERT INTO schema_version (version) VALUES (%s)", (number,))
        old.execute(
            "INSERT INTO facts (id, scope, user_id, text, recorded_at, updated_at) "
            "VALUES (1, 'guild:1', 'alice', 'Alice keeps bees', 'a', 'a')"
        )
        old.execute("INSERT INTO fact_sources (fact_id, message_id, channel_id) VALUES (1, 'm1', 'c1')")
        old.execute(
            "INSERT INTO pending_messages (message_id, scope, channel_id, author_id, author_name, content, "
            "created_at, captured_at) VALUES ('m2', 'guild:1', 'c1', 'bob', 'Bob', 'game night', 't', 1.0)"
        )
    store = open_store(postgres_url)
    fresh_url = postgres.create()
    fresh = open_store(fresh_url)
    try:
        assert schema.schema_version(store.conn) == len(MIGRATIONS) == 3
        assert tables(store) == tables(fresh)
        [bees] = store.list_facts("guild:1", "alice")
        assert (bees.id, bees.source_message_ids) == (1, ("m1",))
        assert store.conn.execute("SELECT author_id FROM fact_sources").fetchall() == [(None,)]  # unknown
        night = NewEpisode("guild:1", Origin("c1"), "- game night", "t", "t", {"m2": "bob"}, unit(1.0))
        store.apply_flush([], episodes=[night], consumed_message_ids=["m2"])
        assert [e.participants for e in store.list_episodes("guild:1")] == [("bob",)]
    finally:
        store.close()
        fresh.close()
        postgres.drop(fresh_url)


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    store = open_store(postgres_url)
    store.conn.execute("INSERT INTO schema_version (version) VALUES (?)", (len(MIGRATIONS) + 1,))
    store.close()
    with pytest.raises(DatabaseError, match="newer than this bot"):
        open_store(postgres_url)


def test_forget_everything_deletes_every_row_holding_the_text_and_vacuums(postgres_url: str) -> None:
    store = open_store(postgres_url)
    secret = "Zanzibarquux"
    [old] = store.add_facts(
        [
            NewFact(
                "guild:1", "alice", "Alice", f"Alice owns a boat named {secret}", ["m1"], embedding=unit(1.0)
            )
        ]
    )
    merged = NewFact("guild:1", "alice", "Alice", f"Alice sails {secret}", ["m2"], embedding=unit(1, 0.1))
    store.apply_flush(
        [Operation(Decision.MERGE, merged, old, merged_text=f"Alice owns {secret} and sails it")]
    )
    store.buffer_messages(
        [(BufferedMessage("m3", "guild:1", "c1", "alice", "Alice", f"{secret}!", "t"), 1.0)]
    )
    store.add_facts([NewFact("guild:1", "bob", "Bob", "Bob likes tea", [], embedding=unit(0, 1.0))])

    assert store.forget("guild:1", "alice") == 2
    for table in ("facts", "fact_vectors", "fact_words", "fact_sources", "fact_events", "pending_messages"):
        rows = store.conn.execute(f"SELECT * FROM {table}").fetchall()
        assert secret not in str(rows) and secret.lower() not in str(rows), table
    assert store.conn.execute("SELECT count(*) FROM fact_vectors WHERE user_id = 'alice'").fetchone()[0] == 0
    assert store.conn.execute("SELECT count(*) FROM fact_sources").fetchone()[0] == 0
    forgotten = store.conn.execute("SELECT detail FROM fact_events WHERE kind = 'forgotten'").fetchall()
    assert forgotten == [('{"count": 2, "all": true}',)]
    # The dead tuples were vacuumed at once rather than left to autovacuum.
    vacuumed = store.conn.execute(
        "SELECT relname FROM pg_stat_user_tables WHERE vacuum_count > 0 ORDER BY relname"
    ).fetchall()
    assert [r[0] for r in vacuumed] == sorted(
        [
            "facts",
            "fact_vectors",
            "fact_words",
            "fact_sources",
            "fact_events",
            "pending_messages",
            "episodes",
            "episode_sources",
        ]
    )
    assert [f.text for f in store.list_facts("guild:1", "bob")] == ["Bob likes tea"]
    store.close()


def test_a_servers_erase_vacuums_the_tables_that_held_its_words(postgres_url: str) -> None:
    store = open_store(postgres_url)
    store.buffer_messages([(BufferedMessage("m1", "guild:1", "c1", "bob", "Bob", "game night", "t"), 1.0)])
    night = NewEpisode("guild:1", Origin("c1"), "- game night", "t", "t", {"m1": "bob"}, unit(1.0))
    store.apply_flush([], episodes=[night], consumed_message_ids=["m1"])
    assert store.forget_scope("guild:1") == (0, 1)
    vacuumed = store.conn.execute("SELECT relname FROM pg_stat_user_tables WHERE vacuum_count > 0").fetchall()
    assert {"episodes", "episode_sources", "pending_messages"} <= {r[0] for r in vacuumed}
    store.close()


def test_forgetting_one_fact_leaves_vacuuming_to_autovacuum(postgres_url: str) -> None:
    store = open_store(postgres_url)
    [fid] = store.add_facts([NewFact("dm", "alice", "Alice", "Alice hums", [], embedding=unit(1.0))])
    assert store.forget("dm", "alice", [fid]) == 1
    assert store.conn.execute(
        "SELECT count(*) FROM pg_stat_user_tables WHERE vacuum_count > 0"
    ).fetchone() == (0,)
    store.close()


def test_keyword_search_is_served_by_the_owner_index_and_needs_no_gin_index(postgres_url: str) -> None:
    store = open_store(postgres_url)
    indexes = store.conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'fact_words'").fetchall()
    assert not any("gin" in d.lower() for (d,) in indexes)
    assert any("(scope, user_id)" in d for (d,) in indexes)
    store.close()


def test_a_missing_database_is_one_line_without_the_password(postgres_url: str) -> None:
    url = postgres_url.replace("postgres:@", "postgres:hunter2@").replace("/test_", "/missing_")
    with pytest.raises(DatabaseError) as caught:
        open_store(url)
    message = str(caught.value)
    assert "does not exist" in message and "hunter2" not in message and "\n" not in message


def test_no_server_there_says_so_without_the_password() -> None:
    with pytest.raises(DatabaseError) as caught:
        open_store("postgresql://bot:hunter2@/memory?host=/nonexistent-socket-dir")
    message = str(caught.value)
    assert message.startswith("cannot connect to PostgreSQL") and "hunter2" not in message


def test_a_user_who_may_not_enable_pgvector_is_told_who_must(
    postgres: PostgresDatabases, postgres_url: str
) -> None:
    name = postgres_url.split("?")[0].rsplit("/", 1)[1]
    postgres.admin.execute("DROP ROLE IF EXISTS weak")
    postgres.admin.execute("CREATE ROLE weak LOGIN")
    postgres.admin.execute(f"REVOKE CREATE ON DATABASE {name} FROM PUBLIC")
    with psycopg.connect(postgres_url, autocommit=True) as owner:  # tables yes, extensions no
        owner.execute("GRANT CREATE ON SCHEMA public TO weak")
    url = postgres_url.replace("postgres:@", "weak:@")
    try:
        with pytest.raises(psycopg.Error) as caught:
            open_store(url)
        line = backend_for(url).describe(url, caught.value)
        assert "CREATE EXTENSION vector" in line and "owner or an administrator" in line
    finally:
        postgres.drop(postgres_url)
        postgres.admin.execute("DROP ROLE weak")


def test_a_value_postgresql_cannot_store_raises_a_row_error(postgres_url: str) -> None:
    """Writing the same value again fails the same way: the worker drops that write instead of retrying."""
    store = open_store(postgres_url)
    errors = backend_for(postgres_url).row_errors
    with pytest.raises(errors):
        store.set_state("k", "a NUL \x00 cannot be stored in text")
    with pytest.raises(errors):
        store.set_state("k", "a lone surrogate \ud800 cannot be encoded")
    assert not issubclass(psycopg.OperationalError, errors)
    store.set_state("k", "v")  # the connection is still usable
    assert store.get_state("k") == "v"
    store.close()


def test_a_connection_the_server_dropped_is_opened_again_on_the_next_call(
    postgres_url: str, postgres: PostgresDatabases
) -> None:
    store = open_store(postgres_url)
    try:
        store.set_state("k", "before")
        pid = store.conn.raw.info.backend_pid
        postgres.admin.execute("SELECT pg_terminate_backend(%s)", (pid,))  # a restart or failover
        with pytest.raises(psycopg.OperationalError):
            store.get_state("k")  # the call that finds out fails, as any database error does
        assert store.get_state("k") == "before"  # ... and the next one connects again
        store.set_state("k", "after")
        assert store.get_state("k") == "after" and store.conn.raw.info.backend_pid != pid
    finally:
        store.close()
