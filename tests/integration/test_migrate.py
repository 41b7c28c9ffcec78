"""`python -m bot migrate --to postgresql://...`: everything an SQLite database holds arrives, counted,
resumable, and never poured into a database that already holds other memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.memory.models import BufferedMessage, Decision, FactStatus, NewEpisode, NewFact, Operation, Origin
from bot.storage import migration
from bot.storage.locations import open_storage
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
    assert report["tables"]["facts"] == [3, 3] and report["tables"]["pending_messages"] == [1, 1]

    target = open_storage(postgres_url, embedding_model=MODEL, dimensions=DIMS)
    try:
        assert target.export_facts("guild:1") == before["facts"]  # ids, history, sources with channels
        assert target.export_facts("dm") == before["dm"]
        assert target.guild_settings() == before["settings"]  # persona, channel persona, ignored channel
        assert target.opted_out() == before["opted_out"]
        assert target.events("guild:1", "alice") == before["events"]
        assert [m.content for m in target.pending_messages("c1", 10)] == ["I play chess"]
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
    assert (
        source.forget("dm", "bob", newest) == 2
    )  # the highest ids are gone from the file, not from its counter
    source.close()

    migration.copy_database(tmp_path / "memory.sqlite3", postgres_url)
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
    real_insert = migration._insert

    def failing_insert(target: object, table: str, rows: list[dict[str, object]]) -> None:
        if table == "fact_vectors":
            raise OSError("connection lost")
        real_insert(target, table, rows)  # type: ignore[arg-type]

    source_path = tmp_path / "memory.sqlite3"
    monkeypatch.setattr(migration, "_insert", failing_insert)
    with pytest.raises(OSError):
        migration.copy_database(source_path, postgres_url)
    monkeypatch.setattr(migration, "_insert", real_insert)

    code, report, err = await migrate_cli(tmp_path, postgres_url)
    assert code == 0, err
    assert report["verified"] is True and report["resumed"] is True

    # Another SQLite file into the same, now full, database: refused unless asked.
    other = tmp_path / "other"
    other.mkdir()
    filled(other / "memory.sqlite3").close()
    code, report, err = await migrate_cli(other, postgres_url)
    assert code == 1 and "already holds memory" in err and "--into-non-empty" in err
    code, report, err = await migrate_cli(other, postgres_url, "--into-non-empty")
    assert code == 0, err  # the same keys: kept as they are, and every table still adds up


async def test_no_source_or_a_url_that_is_not_postgresql_is_one_line(tmp_path: Path) -> None:
    code, _, err = await migrate_cli(tmp_path, "postgresql://nobody@127.0.0.1:9/x")
    assert code == 1 and "no database at" in err
    filled(tmp_path / "memory.sqlite3").close()
    code, _, err = await migrate_cli(tmp_path, "mysql://bot:s3cret@db/memory")
    assert code == 1 and "DATABASE_URL" in err and "s3cret" not in err
