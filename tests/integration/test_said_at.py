"""When a fact was said, on both backends: the time of the message it comes from, not when it was learned
(a flush may come days later, an import years later), kept through a merge as the newest words' time,
filled for facts stored before it was recorded, and shown in the block the chat model reads."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from bot.memory.model_ports import Purpose
from bot.memory.models import BufferedMessage, NewFact, iso, utcnow
from bot.memory.portable import read_import_lines
from bot.memory.recall import Audience, Participant
from bot.memory.service import MemoryService
from bot.storage import Store
from bot.storage.postgres.connection import PostgresDatabase
from bot.storage.postgres.connection import connect as connect_postgres
from bot.storage.postgres.schema import MIGRATIONS as POSTGRES_MIGRATIONS
from bot.storage.postgres.schema import PostgresSchema
from bot.storage.sql import migrations
from bot.storage.sqlite.connection import connect as connect_sqlite
from bot.storage.sqlite.schema import MIGRATIONS as SQLITE_MIGRATIONS
from bot.storage.sqlite.schema import SqliteSchema
from tests.fakes import FakeEmbedder, FakeLLM, angled, unit
from tests.integration.test_pipeline import SCOPE, facts_from, msg

# A Discord id made at 2026-11-20T09:30:00.000Z: ((ms since 2015) << 22).
SNOWFLAKE_TIME = "2026-11-20T09:30:00.000000Z"
SNOWFLAKE = str((1_795_167_000_000 - 1_420_070_400_000) << 22)


def said(message: BufferedMessage, when: str) -> BufferedMessage:
    return replace(message, created_at=when)


async def test_a_fact_is_said_when_its_message_was_and_the_block_shows_that_day(
    service: MemoryService, llm: FakeLLM, embedder: FakeEmbedder
) -> None:
    three_days_ago = iso(utcnow() - timedelta(days=3))
    embedder.vectors["Alice keeps two cats"] = unit(1.0)
    llm.handlers[Purpose.EXTRACT] = facts_from(("alice", "Alice keeps two cats", ["m1"]))
    assert service.capture(said(msg("m1", "alice", "I keep two cats"), three_days_ago), guild_id="100")
    await service.flush_now()

    [cats] = service.store.sync.list_facts(SCOPE, "alice")
    assert cats.said_at == three_days_ago  # the message's time ...
    assert cats.recorded_at[:10] == iso(utcnow())[:10]  # ... not the flush's
    result = await service.recall(
        SCOPE, [Participant("alice", "Alice")], "cats", audience=Audience("alice", lambda key: True)
    )
    assert f'said="{three_days_ago[:10]}"' in result.block
    assert f'said="{cats.recorded_at[:10]}"' not in result.block


async def test_a_merge_is_said_when_its_newest_words_were(
    service: MemoryService, llm: FakeLLM, embedder: FakeEmbedder
) -> None:
    embedder.vectors["Alice keeps two cats"] = unit(1.0)
    embedder.vectors["Alice's cats are called Tom and Kit"] = angled(15)
    embedder.vectors["Alice keeps two cats called Tom and Kit"] = angled(5)
    llm.handlers[Purpose.EXTRACT] = facts_from(("alice", "Alice keeps two cats", ["m1"]))
    assert service.capture(
        said(msg("m1", "alice", "I keep two cats"), "2026-11-01T08:00:00.000000Z"), guild_id="100"
    )
    await service.flush_now()
    [old] = service.store.sync.list_facts(SCOPE, "alice")

    llm.handlers[Purpose.EXTRACT] = facts_from(("alice", "Alice's cats are called Tom and Kit", ["m2"]))
    llm.handlers[Purpose.CONSOLIDATE] = lambda payload: {
        "decisions": [
            {
                "new_fact": payload["new_facts"][0]["new_fact"],
                "decision": "MERGE",
                "target_fact_id": old.id,
                "merged_text": "Alice keeps two cats called Tom and Kit",
            }
        ]
    }
    newer = "2026-11-24T19:00:00.000000Z"
    assert service.capture(said(msg("m2", "alice", "My cats are called Tom and Kit"), newer), guild_id="100")
    await service.flush_now()
    [merged] = service.store.sync.list_facts(SCOPE, "alice")
    assert merged.id != old.id and merged.said_at == newer


def test_an_import_keeps_its_said_time_else_reads_it_from_its_discord_message(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "facts.jsonl"
    lines = [
        {"scope": SCOPE, "user_id": "1", "text": "One has a boat", "said_at": "2025-06-01"},
        {
            "scope": SCOPE,
            "user_id": "1",
            "text": "One sails on Sundays",
            "sources": [{"message_id": SNOWFLAKE}],
        },
        {"scope": SCOPE, "user_id": "1", "text": "One sails alone", "recorded_at": "2024-02-03T04:05:06Z"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines))
    read, problems = read_import_lines(path)
    assert problems == []
    facts = [fact for _, fact in read]
    for number, fact in enumerate(facts):
        fact.embedding = angled(10 * number)
    store.add_facts(facts)
    found = {f.text: f.said_at for f in store.list_facts(SCOPE, "1")}
    assert found == {
        "One has a boat": "2025-06-01T00:00:00.000000Z",
        "One sails on Sundays": SNOWFLAKE_TIME,
        "One sails alone": "2024-02-03T04:05:06.000000Z",  # learned then: said no later
    }


def test_a_told_fact_is_said_when_it_was_told(store: Store) -> None:
    before = iso(utcnow())
    [fid] = store.add_facts([NewFact("dm", "1", "One", "One is vegetarian", ["mcp-x"], embedding=unit(1.0))])
    fact = store.get_fact(fid)
    assert fact is not None and fact.said_at is not None and before <= fact.said_at <= iso(utcnow())


# Facts stored before 0013: one whose message is still buffered, one with a Discord message id, one whose
# message is neither (a terminal's), one said in a message whose id carries a time after it was learned.
OLD_FACTS = [
    (1, "buffered-1", "2026-11-25T10:00:00.000000Z"),
    (2, SNOWFLAKE, "2026-11-26T10:00:00.000000Z"),
    (3, "terminal-abc", "2026-11-27T10:00:00.000000Z"),
    (4, SNOWFLAKE, "2026-11-19T10:00:00.000000Z"),
]
EXPECTED = {
    1: "2026-11-22T08:00:00.000000Z",
    2: SNOWFLAKE_TIME,
    3: "2026-11-27T10:00:00.000000Z",
    4: "2026-11-19T10:00:00.000000Z",
}


def fill_before_0013(run: Callable[..., Any]) -> None:
    """The facts above as 0012 held them (`run`: a connection's or a database's execute, "?" on both)."""
    for fid, message, recorded in OLD_FACTS:
        run("INSERT INTO facts (id, scope, user_id, text, recorded_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
            (fid, SCOPE, "1", f"fact {fid}", recorded, recorded))  # fmt: skip
        run("INSERT INTO fact_sources (fact_id, message_id) VALUES (?, ?)", (fid, message))
    run("INSERT INTO pending_messages (message_id, scope, channel_id, author_id, author_name, content, "
        "created_at, captured_at) VALUES ('buffered-1', ?, 'c1', '1', 'One', 'hi', '2026-11-22T08:00:00.000000Z', 0)",
        (SCOPE,))  # fmt: skip


def test_facts_from_before_are_said_when_their_messages_tell_else_when_learned(
    tmp_path: Path, postgres_url: str
) -> None:
    sqlite = connect_sqlite(tmp_path / "before.sqlite3")
    postgres = PostgresDatabase(connect_postgres(postgres_url), postgres_url)
    try:
        migrations.migrate(SqliteSchema(sqlite), SQLITE_MIGRATIONS[:12])
        migrations.migrate(PostgresSchema(postgres), POSTGRES_MIGRATIONS[:12])
        with sqlite:
            fill_before_0013(sqlite.execute)
        with postgres.transaction():
            fill_before_0013(postgres.execute)
        migrations.migrate(SqliteSchema(sqlite), SQLITE_MIGRATIONS[:13])
        migrations.migrate(PostgresSchema(postgres), POSTGRES_MIGRATIONS[:13])
        query = "SELECT id, said_at FROM facts ORDER BY id"
        assert dict(sqlite.execute(query).fetchall()) == EXPECTED
        assert dict(postgres.execute(query).fetchall()) == EXPECTED
    finally:
        sqlite.close()
        postgres.close()
