"""`python -m bot migrate --to postgresql://...`: everything an SQLite database holds arrives, counted,
resumable, and never poured into a database that already holds other memory."""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

import pytest

from bot.memory.models import BufferedMessage, Decision, FactStatus, NewEpisode, NewFact, Operation, Origin
from bot.memory.ports import Storage
from bot.storage import copy_to_postgres
from bot.storage.locations import open_storage
from bot.storage.sql.rows import sources_in, sources_of
from bot.storage.sqlite.store import Store as SqliteStore
from tests.fakes import DIMS, unit
from tests.integration.test_cli import clean_env, run_cli

MODEL = "fake-embedding"


def filled(path: Path) -> SqliteStore:
    """An SQLite store with something in every table the bot writes."""
    store = SqliteStore.open(path, embedding_model=MODEL, dimensions=DIMS)
    said = Origin(channel_id="c1", parent_channel_id=None, private_thread=False)
    [cat] = store.add_facts(
        [
            NewFact(
                "guild:1",
                "alice",
                "Alice",
                "Alice has a cat",
                ["m1"],
                embedding=unit(1.0),
                origins={"m1": said},
            )
        ]
    )
    # A fact replaced by a newer one: history, an archived vector, events.
    store.apply_flush(
        [
            Operation(
                Decision.INVALIDATE,
                NewFact("guild:1", "alice", "Alice", "Alice has a dog now", ["m2"], embedding=unit(1.0, 0.3)),
                cat,
            )
        ]
    )
    store.add_facts([NewFact("dm", "bob", "Bob", "Bob likes tea", ["m3"], embedding=unit(0.0, 1.0))])
    store.buffer_messages(
        [(BufferedMessage("m9", "guild:1", "c1", "bob", "Bob", "I play chess", "2026-11-20T10:00:00Z"), 1.0)]
    )
    store.set_opt_out("guild:1", "carol", True)
    store.update_guild_settings("1", log_channel_id="55", persona="You are Sage.")
    store.set_channel_ignored("1", "c7", True)
    store.set_channel_persona("1", "c2", "You are a pirate.")
    store.set_state("gemini_usage", "{}")
    store.add_use_per_day([("guild:1", "2026-11-20", "messages", 3)])
    # An episode, made of a buffered message (its own, not the one left buffered above).
    store.buffer_messages(
        [(BufferedMessage("m8", "guild:1", "c1", "bob", "Bob", "game night on friday", "t"), 1.0)]
    )
    night = NewEpisode(
        "guild:1", said, "- game night on Friday", "t", "t", {"m8": "bob"}, unit(0.0, 0.0, 1.0)
    )
    store.apply_flush([], episodes=[night], consumed_message_ids=["m8"])
    return store


async def migrate_cli(tmp_path: Path, url: str, *extra: str) -> tuple[int, dict[str, object], str]:
    env = clean_env(DATABASE_PATH=str(tmp_path / "memory.sqlite3"), EMBEDDING_MODEL=MODEL)
    code, out, err = await run_cli("migrate", "--to", url, "--json", *extra, env=env, cwd=tmp_path)
    return code, (json.loads(out) if out.strip() else {}), err


async def test_everything_arrives_and_every_table_adds_up(tmp_path: Path, postgres_url: str) -> None:
    source = filled(tmp_path / "memory.sqlite3")
    before = {
        "facts": source.export_facts("guild:1"),
        "dm": source.export_facts("dm"),
        "settings": source.guild_settings(),
        "opted_out": source.opted_out(),
        "events": source.events("guild:1", "alice"),
        "episodes": source.list_episodes("guild:1"),
    }
    source.close()

    code, report, err = await migrate_cli(tmp_path, postgres_url)
    assert code == 0, err
    assert report["verified"] is True and report["resumed"] is False
    rows = sum(source for source, _ in report["tables"].values())  # type: ignore[union-attr]
    assert f"copying: {rows:,} of {rows:,} rows (100%)" in err, err
    assert report["tables"]["facts"] == [3, 3] and report["tables"]["pending_messages"] == [1, 1]

    target = open_storage(postgres_url, embedding_model=MODEL, dimensions=DIMS)
    try:
        assert target.export_facts("guild:1") == before["facts"]  # ids, history, sources with channels
        assert target.export_facts("dm") == before["dm"]
        assert target.guild_settings() == before["settings"]  # persona, channel persona, ignored channel
        assert target.opted_out() == before["opted_out"]
        assert target.events("guild:1", "alice") == before["events"]
        assert [m.content for m in target.pending_messages("c1", 10)] == ["I play chess"]
        assert target.use_per_day("guild:1", "2026-11-01") == {"2026-11-20": {"messages": 3}}
        [(dog, distance)] = target.knn("guild:1", "alice", unit(1.0, 0.3), 5)
        assert dog.text == "Alice has a dog now" and distance < 1e-6  # vectors came as they were
        assert [f.text for f in target.keyword_search("dm", "bob", "tea", 5)] == ["Bob likes tea"]
        [(night, distance)] = target.episodes_near("guild:1", unit(0.0, 0.0, 1.0), 5)
        assert [night] == before["episodes"] and distance < 1e-6  # its id, sources and vector
        [old] = [f for f in before["facts"] if f.status is FactStatus.INVALIDATED]
        # A new fact takes the next id, not one of the copied ones.
        [new] = target.add_facts(
            [NewFact("dm", "bob", "Bob", "Bob swims", [], embedding=unit(0.0, 0.5, 1.0))]
        )
        assert new > max(f.id for f in before["facts"] + before["dm"]) and new != old.id
        later = BufferedMessage("m10", "guild:1", "c1", "bob", "Bob", "chess on monday", "t")
        target.buffer_messages([(later, 1.0)])
        chess = NewEpisode("guild:1", night.origin, "- chess on Monday", "t", "t", {"m10": "bob"}, unit(1.0))
        target.apply_flush([], episodes=[chess], consumed_message_ids=["m10"])
        assert max(e.id for e in target.list_episodes("guild:1")) > night.id  # so does a new episode
    finally:
        target.close()


def test_postgresql_never_hands_out_an_id_the_source_once_used(tmp_path: Path, postgres_url: str) -> None:
    source = filled(tmp_path / "memory.sqlite3")
    newest = source.add_facts(
        [NewFact("dm", "bob", "Bob", f"Bob fact {i}", [], embedding=unit(0.5)) for i in (1, 2)]
    )
    # The highest ids are gone from the file, not from its counter.
    assert source.forget("dm", "bob", newest) == 2
    source.close()

    copy_to_postgres.copy_database(tmp_path / "memory.sqlite3", postgres_url)
    target = open_storage(postgres_url, embedding_model=MODEL, dimensions=DIMS)
    try:
        [new] = target.add_facts([NewFact("dm", "bob", "Bob", "Bob swims", [], embedding=unit(0.0, 1.0))])
        assert new > max(newest)
    finally:
        target.close()


async def test_an_interrupted_copy_carries_on_and_a_database_with_other_memory_is_refused(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    filled(tmp_path / "memory.sqlite3").close()
    real_write = copy_to_postgres._write

    def failing_write(target: object, table: str, *args: object, **kwargs: object) -> int:
        if table == "fact_vectors":
            raise OSError("connection lost")
        return real_write(target, table, *args, **kwargs)  # type: ignore[arg-type]

    source_path = tmp_path / "memory.sqlite3"
    monkeypatch.setattr(copy_to_postgres, "_write", failing_write)
    with pytest.raises(OSError):
        copy_to_postgres.copy_database(source_path, postgres_url)
    monkeypatch.setattr(copy_to_postgres, "_write", real_write)

    code, report, err = await migrate_cli(tmp_path, postgres_url)
    assert code == 0, err
    assert report["verified"] is True and report["resumed"] is True
    # Finished: the bot may write to it from now on, so the same copy again is refused, not resumed.
    code, report, err = await migrate_cli(tmp_path, postgres_url)
    assert code == 1 and "already holds a finished copy" in err and "carry on" not in err

    # Another SQLite file into the same, now full, database: refused unless asked.
    other = tmp_path / "other"
    other.mkdir()
    filled(other / "memory.sqlite3").close()
    code, report, err = await migrate_cli(other, postgres_url)
    assert code == 1 and "already holds memory" in err and "--into-non-empty" in err
    code, report, err = await migrate_cli(other, postgres_url, "--into-non-empty")
    assert code == 0, err  # the same keys: kept as they are, and every table still adds up
    assert report["removed"] == {} and report["updated"] == {}  # a merge changes none of the target's rows


SECRET = "Zanzibarquux"


# What PostgreSQL's triggers write and SQLite has not: each fact's copy of its sources (migration 0018),
# left out of `contents` and checked against `fact_sources` by `copies_in_step`.
COPIES = {("facts", "sources")}


def copies_in_step(store: Storage) -> bool:
    """Whether every fact's copy of its sources in its row says what `fact_sources` holds."""
    rows = store.conn.select("SELECT id, sources FROM facts")  # type: ignore[attr-defined]
    recorded = sources_of(store.conn, [r["id"] for r in rows])  # type: ignore[attr-defined]
    return bool(rows) and all(sources_in(r["sources"]) == recorded.get(r["id"], ()) for r in rows)


def contents(store: SqliteStore | Storage, table: str) -> list[tuple[Any, ...]]:
    """A table's rows as values both backends compare equal (vectors as float32 lists), sorted; a vector
    with its owner, which PostgreSQL's row names and SQLite's fact does; without PostgreSQL's `COPIES`."""
    query = f"SELECT * FROM {table}"
    if table == "fact_vectors":
        rows_of = "fact_vectors" if store.VECTOR_OWNER else f"({copy_to_postgres.VECTORS_WITH_OWNER}) AS o"  # type: ignore[union-attr]
        query = f"SELECT fact_id, scope, user_id, embedding FROM {rows_of}"
    rows = []
    for r in store.conn.select(query):  # type: ignore[attr-defined]
        if table == "meta" and r["key"] in copy_to_postgres.OWN_META:
            continue
        names = r.keys()  # a driver's Row iterates over its values
        rows.append(
            tuple(
                array("f", r[k] if isinstance(r[k], bytes) else json.loads(r[k])).tolist()
                if (table, k) in copy_to_postgres.VECTOR_COLUMNS and r[k] is not None
                else r[k]
                for k in names
                if (table, k) not in COPIES
            )
        )
    return sorted(rows, key=repr)


def text_anywhere(store: Storage) -> str:
    """Every row of every table of a PostgreSQL database as text, the keyword index's words included."""
    tables = store.conn.execute(  # type: ignore[attr-defined]
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    ).fetchall()
    return " ".join(
        str(row)
        for (table,) in tables
        for row in store.conn.execute(f"SELECT t::text FROM {table} AS t")  # type: ignore[attr-defined]
    ).casefold()


async def test_a_resumed_copy_ends_equal_to_a_source_that_forgot_and_changed_meanwhile(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.sqlite3"
    source = filled(path)
    said = Origin(channel_id="c1", parent_channel_id=None, private_thread=False)
    hidden = NewFact(
        "guild:1",
        "999",
        "Mallory",
        f"Mallory hides a key in {SECRET}",
        ["m5"],
        embedding=unit(0.2, 1.0),
        origins={"m5": said},
    )
    source.add_facts([hidden])
    source.buffer_messages(
        [
            (
                BufferedMessage(
                    "m6", "guild:1", "c1", "999", "Mallory", f"it is in {SECRET}", "2026-11-20T10:01:00Z"
                ),
                2.0,
            )
        ]
    )
    source.close()

    def connection_lost(*_: object) -> None:
        raise OSError("connection lost")

    # The connection is lost after every row is copied and indexed.
    monkeypatch.setattr(copy_to_postgres, "_reset_identities", connection_lost)
    with pytest.raises(OSError):
        copy_to_postgres.copy_database(path, postgres_url)
    monkeypatch.undo()
    target = open_storage(postgres_url, embedding_model=MODEL, dimensions=DIMS)
    assert SECRET.casefold() in text_anywhere(target)  # copied, its words indexed
    target.close()

    # Meanwhile on the SQLite file: Mallory is forgotten (`facts forget --all`), a fact corrected, one
    # replaced, settings and a choice changed.
    source = SqliteStore.open(path, embedding_model=MODEL, dimensions=DIMS)
    assert source.forget("guild:1", "999") == 1
    [tea] = [f for f in source.export_facts("dm") if f.text == "Bob likes tea"]
    source.correct_fact("dm", "bob", tea.id, "Bob likes coffee", unit(0.0, 0.0, 1.0), False)
    [dog] = [f for f in source.export_facts("guild:1") if f.text == "Alice has a dog now"]
    hamster = NewFact("guild:1", "alice", "Alice", "Alice has a hamster", ["m7"], embedding=unit(0.5, 0.5))
    source.apply_flush([Operation(Decision.INVALIDATE, hamster, dog.id)])
    source.set_channel_persona("1", "c2", None)
    source.set_channel_ignored("1", "c7", False)
    source.update_guild_settings("1", persona="You are Ivy.")
    source.set_opt_out("guild:1", "carol", False)
    source.close()

    code, report, err = await migrate_cli(tmp_path, postgres_url)
    assert code == 0, err
    assert report["verified"] is True and report["resumed"] is True
    assert report["removed"] == {
        "pending_messages": 1,
        # The corrected fact's old event, which quoted it; Mallory's went with her fact (SQLite gave its id
        # to the 'forgotten' event, so the copy wrote that one in its place).
        "fact_events": 1,
        "fact_vectors": 2,  # Mallory's, and the replaced fact's (archived with it)
        "fact_sources": 1,
        "facts": 1,
        "ignored_channels": 1,
        "channel_personas": 1,
    }
    assert report["updated"] == {
        "users": 1,  # Carol opted in again
        "guild_settings": 1,
        "app_state": 1,  # the settings version
        "facts": 2,  # corrected, and replaced
        "fact_vectors": 1,  # the corrected fact's
    }

    source = SqliteStore.open(path, embedding_model=MODEL, dimensions=DIMS)
    target = open_storage(postgres_url, embedding_model=MODEL, dimensions=DIMS)
    try:
        for table, _ in copy_to_postgres.TABLES:
            assert contents(target, table) == contents(source, table), table
        assert copies_in_step(target)  # the rows written, the sources taken away, the facts deleted
        assert SECRET.casefold() not in text_anywhere(target)  # no table, no index word, no event
        vacuumed = target.conn.execute(  # type: ignore[attr-defined]
            "SELECT relname FROM pg_stat_user_tables WHERE vacuum_count > 0"
        ).fetchall()
        assert {"facts", "fact_words", "fact_events", "pending_messages"} <= {name for (name,) in vacuumed}
        assert [f.text for f in target.keyword_search("dm", "bob", "coffee", 5)] == ["Bob likes coffee"]
        assert target.keyword_search("dm", "bob", "tea", 5) == []  # the old words left the index
        assert target.keyword_search("guild:1", "alice", "dog", 5) == []  # replaced: out of search
        assert target.get_fact(dog.id).superseded_by > dog.id  # type: ignore[union-attr]
        [(coffee, distance)] = target.knn("dm", "bob", unit(0.0, 0.0, 1.0), 1)
        assert coffee.id == tea.id and distance < 1e-6
    finally:
        source.close()
        target.close()


async def test_a_copy_cut_short_in_the_facts_then_a_forget_converges(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's case: cut off after the first facts, a person forgotten on the file, run again."""
    path = tmp_path / "memory.sqlite3"
    source = filled(path)
    source.add_facts(
        [
            NewFact("guild:1", "999", "Mallory", f"Mallory fact {i}", [], embedding=unit(0.3))
            for i in range(30)
        ]
    )
    source.close()
    real_write = copy_to_postgres._write
    facts_batches = 0

    def cut_after_one_batch_of_facts(target: object, table: str, *args: object, **kwargs: object) -> int:
        nonlocal facts_batches
        facts_batches += table == "facts"
        if facts_batches == 2:
            raise OSError("connection lost")
        return real_write(target, table, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(copy_to_postgres, "_write", cut_after_one_batch_of_facts)
    with pytest.raises(OSError):
        copy_to_postgres.copy_database(path, postgres_url, batch=10)
    monkeypatch.undo()

    env = clean_env(DATABASE_PATH=str(path), EMBEDDING_MODEL=MODEL)
    code, out, err = await run_cli(
        "facts", "forget", "--scope", "guild:1", "--user", "999", "--all", env=env, cwd=tmp_path
    )
    assert code == 0, err
    code, out, err = await run_cli("migrate", "--to", postgres_url, env=env, cwd=tmp_path)
    assert code == 0, err
    # The first batch of 10 facts held 7 of Mallory's (after filled()'s 3).
    assert "facts: removed 7 no longer in the source" in out and "every table adds up" in out
    target = open_storage(postgres_url, embedding_model=MODEL, dimensions=DIMS)
    try:
        assert target.export_facts("guild:1", "999") == []
        assert "mallory fact" not in text_anywhere(target)
    finally:
        target.close()


async def test_no_source_or_a_url_that_is_not_postgresql_is_one_line(tmp_path: Path) -> None:
    code, _, err = await migrate_cli(tmp_path, "postgresql://nobody@127.0.0.1:9/x")
    assert code == 1 and "no database at" in err
    filled(tmp_path / "memory.sqlite3").close()
    code, _, err = await migrate_cli(tmp_path, "mysql://bot:s3cret@db/memory")
    assert code == 1 and "DATABASE_URL" in err and "s3cret" not in err
