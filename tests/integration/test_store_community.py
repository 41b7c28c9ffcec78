"""Community memory in the store, on both backends: episodes and community facts are stored by a flush
only while every message they were made from stands, read back per scope, and follow their sources out:
a deleted message, a forgotten or corrected fact, a person's forget-all or a server's erase leaves no word
of them in any table (nor, on SQLite, in the file and its WAL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.memory.maintenance import Maintenance
from bot.memory.models import (
    COMMUNITY_ID,
    COMMUNITY_NAME,
    BufferedMessage,
    Decision,
    NewEpisode,
    NewFact,
    NewPoint,
    Operation,
    Origin,
)
from bot.storage import AsyncStore, Store
from bot.storage.sqlite.schema import MIGRATIONS
from tests.fakes import DIMS, FakeEmbedder, unit
from tests.integration.test_store import file_bytes, old_database, schema_of, traces

SCOPE = "guild:1"


def at(clock: str) -> str:
    """A time on the day the tests' messages are said, as `iso()` writes it."""
    return f"2026-11-20T{clock}:00.000000Z"


def said(
    mid: str,
    author: str,
    text: str,
    channel: str = "c1",
    when: str = "10:00",
    **where: object,
) -> BufferedMessage:
    return BufferedMessage(mid, SCOPE, channel, author, author.title(), text, at(when), **where)  # type: ignore[arg-type]


def episode(
    summary: str,
    sources: dict[str, str],
    vector: list[float],
    *,
    channel: str = "c1",
    span: tuple[str, str] = (at("10:00"), at("11:00")),
    scope: str = SCOPE,
    origin: Origin | None = None,
) -> NewEpisode:
    return NewEpisode(scope, origin or Origin(channel), summary, *span, sources=sources, embedding=vector)


def community(text: str, sources: list[str], vector: list[float]) -> NewFact:
    return NewFact(SCOPE, COMMUNITY_ID, COMMUNITY_NAME, text, sources, embedding=vector)


def person(user: str, text: str, sources: list[str], vector: list[float]) -> NewFact:
    return NewFact(SCOPE, user, user.title(), text, sources, embedding=vector)


def flush(
    store: Store, messages: list[BufferedMessage], facts: list[NewFact], episodes: list[NewEpisode]
) -> list[int]:
    """Buffer `messages` and apply a flush that read them: `facts` added, `episodes` recorded; the ids of
    the facts stored."""
    store.buffer_messages([(m, 1.0) for m in messages])
    changes = store.apply_flush(
        [Operation(Decision.ADD, f) for f in facts],
        episodes=episodes,
        consumed_message_ids=[m.message_id for m in messages],
        read_texts={m.message_id: m.content for m in messages},
    )
    return [c.fact_id for c in changes if c.fact_id is not None]


def test_a_flush_stores_its_episodes_and_each_scope_reads_its_own(store: Store) -> None:
    messages = [
        said("m1", "alice", "game night moves to friday", when="10:00"),
        said("m2", "bob", "friday works, I bring snacks", when="10:05"),
        said(
            "m3",
            "carol",
            "raid on tuesday",
            channel="t1",
            when="18:00",
            parent_channel_id="c2",
        ),
        said(
            "m4",
            "dave",
            "secret plans",
            channel="t2",
            when="19:00",
            parent_channel_id="c2",
            private_thread=True,
        ),
    ]
    flush(
        store,
        messages,
        [],
        [
            episode(
                "- game night moves to Friday",
                {"m1": "alice", "m2": "bob"},
                unit(1.0),
                span=(at("10:00"), at("10:05")),
            ),
            episode(
                "- raid on Tuesday",
                {"m3": "carol"},
                unit(0.0, 1.0),
                origin=Origin("t1", "c2"),
                span=(at("18:00"), at("18:00")),
            ),
            episode(
                "- secret plans",
                {"m4": "dave"},
                unit(0.0, 0.0, 1.0),
                origin=Origin("t2", "c2", True),
                span=(at("19:00"), at("19:00")),
            ),
        ],
    )
    flush(
        store,
        [BufferedMessage("m9", "guild:2", "c9", "erin", "Erin", "chess club", at("12:00"))],
        [],
        [episode("- chess club", {"m9": "erin"}, unit(1.0), scope="guild:2", channel="c9")],
    )
    assert store.pending_channels() == []  # the flush consumed its messages

    newest_first = store.episodes_between(SCOPE, None, None)
    assert [e.summary for e in newest_first] == [
        "- secret plans",
        "- raid on Tuesday",
        "- game night moves to Friday",
    ]
    night, raid, secret = reversed(newest_first)
    assert (night.scope, night.origin, night.participants, night.source_message_ids) == (
        SCOPE,
        Origin("c1"),
        ("alice", "bob"),
        ("m1", "m2"),
    )
    assert (night.started_at, night.ended_at) == (at("10:00"), at("10:05"))
    assert night.audience_keys == {"c1"} and raid.audience_keys == {"c2"} and secret.audience_keys == {"t2"}
    assert store.get_episode(raid.id) == raid and store.get_episode(raid.id + 100) is None

    near = store.episodes_near(SCOPE, unit(1.0, 0.1), 5)
    assert [e.id for e, _ in near] == [night.id, raid.id, secret.id]  # never guild:2's, nearer or not
    assert near[0][1] == pytest.approx(1 - 1 / (1.01**0.5), abs=1e-4)
    assert [e.id for e, _ in store.episodes_near(SCOPE, unit(1.0), 5, max_distance=0.5)] == [night.id]
    # A span keeps the episodes overlapping it: ended at or after `since`, started before `until`.
    evening = store.episodes_near(SCOPE, unit(1.0), 5, since=at("10:05"), until=at("19:00"))
    assert [e.id for e, _ in evening] == [night.id, raid.id]
    assert [e.id for e in store.episodes_between(SCOPE, at("10:06"), None)] == [
        secret.id,
        raid.id,
    ]
    assert [e.id for e in store.episodes_between(SCOPE, None, at("18:00"))] == [night.id]
    assert [e.id for e in store.episodes_between(SCOPE, None, None, limit=1)] == [secret.id]

    # A recap of c2 shows its public thread's episode; a private thread's needs its own id.
    assert [e.id for e in store.list_episodes(SCOPE, channel_ids=["c2"])] == [raid.id]
    assert [e.id for e in store.list_episodes(SCOPE, channel_ids=["c1", "t2"])] == [secret.id, night.id]
    assert store.list_episodes(SCOPE, channel_ids=[]) == []
    assert [e.id for e in store.list_episodes(SCOPE, since=at("18:00"))] == [secret.id, raid.id]
    assert [e.id for e in store.list_episodes(SCOPE, limit=1, offset=1)] == [raid.id]
    assert [e.summary for e in store.list_episodes("guild:2")] == ["- chess club"]
    assert store.stats(SCOPE)["episodes"] == 3 and store.stats()["episodes"] == 4


def test_community_facts_record_each_sources_author_and_are_no_person(store: Store) -> None:
    [rule, pilot] = flush(
        store,
        [
            said("m1", "alice", "no spoilers in #general"),
            said("m2", "bob", "agreed, spoilers go in #spoilers"),
        ],
        [
            community("Spoilers go in #spoilers, not #general", ["m1", "m2"], unit(1.0)),
            person("alice", "Alice is a pilot", ["m1"], unit(0.0, 1.0)),
        ],
        [],
    )
    [imported] = store.add_facts([person("carol", "Carol keeps bees", ["m7"], unit(1.0))])  # not buffered
    authors = dict(
        store.conn.execute("SELECT fact_id || ':' || message_id, author_id FROM fact_sources").fetchall()
    )
    assert authors == {
        f"{rule}:m1": "alice",
        f"{rule}:m2": "bob",
        f"{pilot}:m1": "alice",
        f"{imported}:m7": "carol",
    }
    assert [f.text for f, _ in store.knn(SCOPE, COMMUNITY_ID, unit(1.0), 5)] == [
        "Spoilers go in #spoilers, not #general"
    ]
    assert store.stats(SCOPE)["people"] == 2  # Alice and Carol; the community is nobody


@pytest.mark.parametrize(
    "meanwhile", ["deleted", "edited", "opted out", "forgotten", "opted out, still buffered"]
)
def test_what_is_made_of_a_message_withdrawn_while_the_flush_ran_is_not_stored(
    store: Store, backend: str, meanwhile: str
) -> None:
    """One message of Bob's went while the model read the chunk: the community fact and the episode made
    of it are not stored (they are made of all their messages); Alice's own fact and another channel's
    episode are."""
    messages = [
        said("m1", "alice", "I am a pilot; game night is on Fridays"),
        said("m2", "bob", "Fridays at Xerbonix hall"),
        said("m3", "carol", "raid on tuesday", channel="c2"),
    ]
    store.buffer_messages([(m, 1.0) for m in messages])
    {
        "deleted": lambda: store.forget_message("m2"),
        "edited": lambda: store.update_pending_message("m2", "never mind"),
        "opted out": lambda: store.set_opt_out(SCOPE, "bob", True),
        "forgotten": lambda: store.forget(SCOPE, "bob"),
        # Recorded by a write that kept his buffered message: the opt-out alone keeps it out.
        "opted out, still buffered": lambda: store.conn.execute(
            "INSERT INTO users (scope, user_id, opted_out, updated_at) VALUES (?, 'bob', 1, 'x')", (SCOPE,)
        ),
    }[meanwhile]()
    changes = store.apply_flush(
        [
            Operation(Decision.ADD, person("alice", "Alice is a pilot", ["m1"], unit(0.0, 1.0))),
            Operation(
                Decision.ADD, community("Game night is on Fridays at Xerbonix hall", ["m1", "m2"], unit(1.0))
            ),
        ],
        episodes=[
            episode("- game night on Fridays at Xerbonix hall", {"m1": "alice", "m2": "bob"}, unit(1.0)),
            episode("- raid on Tuesday", {"m3": "carol"}, unit(0.0, 1.0), channel="c2"),
        ],
        consumed_message_ids=["m1", "m2", "m3"],
        read_texts={m.message_id: m.content for m in messages},
    )
    assert [c.user_id for c in changes] == ["alice"]
    assert store.list_facts(SCOPE, COMMUNITY_ID) == []
    assert [e.summary for e in store.list_episodes(SCOPE)] == ["- raid on Tuesday"]
    assert traces(store, backend, ["Xerbonix"]) == []


def test_an_incomplete_episode_is_refused_before_anything_is_written(store: Store) -> None:
    store.buffer_messages([(said("m1", "alice", "hello"), 1.0)])
    fact = person("alice", "Alice says hello", ["m1"], unit(1.0))
    for broken in (episode("- hello", {}, unit(1.0)), episode("- hello", {"m1": "alice"}, unit(1.0))):
        if broken.sources:
            broken.embedding = None
        with pytest.raises(ValueError, match="episode"):
            store.apply_flush([Operation(Decision.ADD, fact)], episodes=[broken], consumed_message_ids=["m1"])
    assert store.list_facts(SCOPE, "alice") == [] and store.list_episodes(SCOPE) == []


# Alice's and Bob's messages in #c1 made a community fact and an episode; Carol's in #c2 made others.
# Each word below is said in the messages named and kept in what was made of them.
HOME, HALL, TOURNEY = "Quillotrin", "Xerbonix", "Vortigaunt"  # m1 (Alice), m2 (Bob), m3 (Carol)


def community_memory(store: Store) -> dict[str, int]:
    """Alice's, Bob's and Carol's flushed memory in guild 1 (and Erin's in guild 2); the facts' ids."""
    ids = flush(
        store,
        [
            said("m1", "alice", f"I moved to {HOME}, game night there?"),
            said("m2", "bob", f"game night moves to {HALL} hall"),
            said("m3", "carol", f"the {TOURNEY} tournament is on saturday", channel="c2"),
        ],
        [
            person("alice", f"Alice lives in {HOME}", ["m1"], unit(1.0)),
            person("bob", "Bob hosts game night", ["m2"], unit(0.0, 1.0)),
            community(f"Game night is at {HALL} hall in {HOME}", ["m1", "m2"], unit(1.0, 1.0)),
            community(f"The {TOURNEY} tournament is on Saturday", ["m3"], unit(0.0, 0.0, 1.0)),
        ],
        [
            episode(
                f"- Alice moved to {HOME}\n- game night moves to {HALL} hall",
                {"m1": "alice", "m2": "bob"},
                unit(1.0, 1.0),
            ),
            episode(
                f"- the {TOURNEY} tournament is on Saturday",
                {"m3": "carol"},
                unit(0.0, 0.0, 1.0),
                channel="c2",
            ),
        ],
    )
    other = BufferedMessage("m9", "guild:2", "c9", "alice", "Alice", "chess on monday", at("12:00"))
    store.buffer_messages([(other, 1.0)])
    store.apply_flush(
        [],
        episodes=[episode("- chess on Monday", {"m9": "alice"}, unit(1.0), scope="guild:2")],
        consumed_message_ids=["m9"],
    )
    return dict(zip(["alice", "bob", "night", "tourney"], ids, strict=True))


ERASURES = {
    # action: (what it does, the words that must be gone, what is left of the community's memory in guild 1)
    "Alice deletes her message": (lambda s, ids: s.forget_message("m1"), [HOME, HALL], [TOURNEY]),
    "Bob deletes his message": (lambda s, ids: s.forget_message("m2"), [HALL], [TOURNEY]),
    "Alice forgets her fact": (
        lambda s, ids: s.forget(SCOPE, "alice", [ids["alice"]]),
        [HOME, HALL],
        [TOURNEY],
    ),
    "Alice corrects her fact": (
        lambda s, ids: s.correct_fact(
            SCOPE, "alice", ids["alice"], "Alice lives in Bergen", unit(1.0), False
        ),
        [HOME, HALL],
        [TOURNEY],
    ),
    "Alice forgets everything": (lambda s, ids: s.forget(SCOPE, "alice"), [HOME, HALL], [TOURNEY]),
    "Alice opts out and forgets everything": (
        lambda s, ids: (s.set_opt_out(SCOPE, "alice", True), s.forget(SCOPE, "alice")),
        [HOME, HALL],
        [TOURNEY],
    ),
    "Bob forgets everything": (lambda s, ids: s.forget(SCOPE, "bob"), [HALL], [TOURNEY]),
    "an admin forgets the community fact": (
        lambda s, ids: s.forget(SCOPE, COMMUNITY_ID, [ids["night"]]),
        [HALL],
        [TOURNEY],
    ),
    "the server erases its memory": (
        lambda s, ids: s.forget_scope(SCOPE, actor="admin"),
        [HOME, HALL, TOURNEY],
        [],
    ),
}


@pytest.mark.parametrize("erasure", list(ERASURES))
def test_every_erasure_takes_what_was_made_from_its_messages_and_leaves_no_word_of_it(
    store: Store, backend: str, database: Path | str, erasure: str
) -> None:
    act, gone, left = ERASURES[erasure]
    ids = community_memory(store)
    assert len(traces(store, backend, gone)) >= 3  # the words are there to be found: fact, episode, events

    # A reply of the bot, still buffered, repeats what the community fact says.
    reply = BufferedMessage(
        "b1", SCOPE, "c1", "bot", "Bot", f"Game night is at {HALL} hall!", "t", is_bot=True
    )
    store.buffer_messages([(reply, 1.0)])

    act(store, ids)
    assert traces(store, backend, gone) == []
    raw = file_bytes(database)  # while the store is open, as a running bot leaves it
    assert not [w for w in gone if w.encode() in raw or w.lower().encode() in raw]
    # What was made of other messages stays.
    assert [TOURNEY in f.text for f in store.list_facts(SCOPE, COMMUNITY_ID)] == [True] * len(left)
    assert [TOURNEY in e.summary for e in store.list_episodes(SCOPE)] == [True] * len(left)
    assert [e.summary for e in store.list_episodes("guild:2")] == ["- chess on Monday"]
    if HOME not in gone:
        assert [f.text for f in store.list_facts(SCOPE, "alice")] == [f"Alice lives in {HOME}"]


def test_a_deleted_message_takes_a_community_facts_whole_history_and_says_so(store: Store) -> None:
    """A person's fact loses a deleted message and falls back to the version before; a community fact is
    made of all its messages and goes whole, with every version of it."""
    ids = community_memory(store)
    newer = community(f"Game night is at {HALL} hall in {HOME}, at 8pm", ["m4"], unit(1.0, 1.0, 0.1))
    store.buffer_messages([(said("m4", "dave", "game night starts at 8pm"), 1.0)])
    [merged] = store.apply_flush(
        [Operation(Decision.MERGE, newer, ids["night"], merged_text=newer.text)], consumed_message_ids=["m4"]
    )
    assert {f.id for f in store.list_facts(SCOPE, COMMUNITY_ID, all_statuses=True)} >= {
        ids["night"],
        merged.fact_id,
    }

    removed = store.forget_message("m4")  # the newest version's own message: the older one does not come back
    assert sorted(removed) == sorted(
        [(SCOPE, COMMUNITY_ID, merged.fact_id), (SCOPE, COMMUNITY_ID, ids["night"])]
    )
    assert [f.text for f in store.list_facts(SCOPE, COMMUNITY_ID, all_statuses=True)] == [
        f"The {TOURNEY} tournament is on Saturday"
    ]
    assert len(store.list_episodes(SCOPE)) == 2  # Dave's message made no episode; the others stay
    [event] = [e for e in store.events(SCOPE, COMMUNITY_ID) if e["kind"] == "forgotten"]
    assert event["detail"] == {"count": 2, "episodes": 0, "points": 0, "made_from": "source deleted"}


def test_an_admin_forgets_or_corrects_one_episode_leaving_no_trace_of_its_words(
    store: Store, backend: str, database: Path | str
) -> None:
    community_memory(store)
    night, tourney = sorted(store.list_episodes(SCOPE), key=lambda e: HALL not in e.summary)
    assert store.forget_episode("guild:2", night.id) is False  # another server's admin cannot
    assert store.correct_episode("guild:2", tourney.id, "- nothing", unit(1.0)) is None

    assert store.forget_episode(SCOPE, night.id, actor="admin") is True
    assert store.get_episode(night.id) is None
    fixed = store.correct_episode(
        SCOPE, tourney.id, "- a tournament on Saturday", unit(0.0, 1.0), actor="admin"
    )
    assert fixed is not None and (fixed.summary, fixed.source_message_ids) == (
        "- a tournament on Saturday",
        ("m3",),
    )
    assert [e.id for e, _ in store.episodes_near(SCOPE, unit(0.0, 1.0), 1)] == [tourney.id]
    # The episodes' words are gone; the community facts made of the same messages (and their keyword
    # index, owner_words) are not episodes.
    facts_tables = ("facts", "fact_", "owner_words")
    leftovers = [t for t in traces(store, backend, [HALL, TOURNEY]) if not t.startswith(facts_tables)]
    assert leftovers == []
    raw = file_bytes(database)
    assert b"game night moves to" not in raw and b"- the Vortigaunt" not in raw
    kinds = [(e["kind"], e["detail"], e["actor"]) for e in store.events(SCOPE, COMMUNITY_ID)[:2]]
    assert kinds == [("corrected", {"episode": tourney.id}, "admin"), ("forgotten", {"episodes": 1}, "admin")]


def test_an_episode_id_is_never_handed_out_twice(store: Store) -> None:
    """Ids are shown to admins (/memory-admin): a deleted episode's must never name another one."""
    community_memory(store)
    [chess] = store.list_episodes("guild:2")
    assert chess.id == max(e.id for e in [*store.list_episodes(SCOPE), chess])
    store.forget_message("m9")  # the newest episode goes
    store.buffer_messages([(said("m5", "erin", "hello"), 1.0)])
    store.apply_flush(
        [], episodes=[episode("- hello", {"m5": "erin"}, unit(1.0))], consumed_message_ids=["m5"]
    )
    [hello] = [e for e in store.list_episodes(SCOPE) if e.summary == "- hello"]
    assert hello.id > chess.id


def test_a_version_6_database_gains_community_memory_with_its_data_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "v6.sqlite3"
    conn = old_database(path, 6)
    conn.execute(
        "INSERT INTO facts (id, scope, user_id, text, recorded_at, updated_at) "
        "VALUES (1, 'guild:1', 'alice', 'Alice keeps bees', 'a', 'a')"
    )
    conn.execute("INSERT INTO fact_sources (fact_id, message_id, channel_id) VALUES (1, 'm1', 'c1')")
    conn.execute(
        "INSERT INTO pending_messages (message_id, scope, channel_id, author_id, author_name, content, "
        "created_at, captured_at) VALUES ('m2', 'guild:1', 'c1', 'bob', 'Bob', 'game night on friday', 't', 1.0)"
    )
    conn.close()

    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    fresh = Store.open(tmp_path / "fresh.sqlite3", embedding_model="fake-embedding", dimensions=DIMS)
    try:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == MIGRATIONS[-1].number
        assert schema_of(store) == schema_of(fresh)
        [bees] = store.list_facts("guild:1", "alice")
        assert (bees.id, bees.source_message_ids) == (1, ("m1",))
        assert store.conn.execute("SELECT author_id FROM fact_sources").fetchall() == [(None,)]  # unknown
        store.apply_flush(
            [],
            episodes=[episode("- game night on Friday", {"m2": "bob"}, unit(1.0))],
            consumed_message_ids=["m2"],
        )
        [night] = store.list_episodes("guild:1")
        assert night.participants == ("bob",)
        assert store.forget("guild:1", "bob") == 0 and store.list_episodes("guild:1") == []
    finally:
        store.close()
        fresh.close()


async def test_reembedding_gives_episodes_the_new_models_vectors_too(database: Path | str) -> None:
    messages = [said("m1", "u1", "We play on Fridays")]
    before = await AsyncStore.open(database, embedding_model="fake-embedding", dimensions=DIMS)
    await before.call(flush, messages, [], [episode("- We play on Fridays", {"m1": "u1"}, unit(1.0))])
    await before.close()
    after = await AsyncStore.open(database, embedding_model="wider", dimensions=8, allow_model_change=True)
    try:
        done = await Maintenance(after, FakeEmbedder(dims=8)).reembed("wider", 8, batch=1)
        assert done.error is None and done.done == 1
        [(found, _)] = await after.call(Store.episodes_near, SCOPE, unit(1.0, dims=8), 5)
        assert found.summary == "- We play on Fridays"  # searchable with the new model's vectors
    finally:
        await after.close()


# ---- point by point --------------------------------------------------------------------------------------

WHARF, LANTERN = "Quembridge", "Zolanter"  # said by Alice (m1) and Bob (m2), each in a point of their own


def pointed_memory(store: Store) -> tuple[int, int]:
    """An episode of two points, Alice's and Bob's, each made from their own line, and a community fact
    made from Bob's; (the episode's id, the fact's id)."""
    [rule] = flush(
        store,
        [
            said("m1", "alice", f"the swap meet is at {WHARF} pier"),
            said("m2", "bob", f"rule: bring a {LANTERN} lamp to night rides"),
        ],
        [community(f"Bring a {LANTERN} lamp to night rides", ["m2"], unit(0.0, 1.0))],
        [
            NewEpisode.of_points(
                SCOPE,
                Origin("c1"),
                [
                    NewPoint(f"the swap meet is at {WHARF} pier", {"m1": "alice"}),
                    NewPoint(f"night rides need a {LANTERN} lamp", {"m2": "bob"}),
                ],
                at("10:00"),
                at("10:05"),
                embedding=unit(1.0),
            )
        ],
    )
    [night] = store.list_episodes(SCOPE)
    return night.id, rule


def test_each_point_keeps_its_own_messages(store: Store) -> None:
    episode_id, _ = pointed_memory(store)
    night = store.get_episode(episode_id)
    assert night is not None
    assert [(p.text, p.source_message_ids, p.authors) for p in night.points] == [
        (f"the swap meet is at {WHARF} pier", ("m1",), ("alice",)),
        (f"night rides need a {LANTERN} lamp", ("m2",), ("bob",)),
    ]
    assert night.summary == f"- the swap meet is at {WHARF} pier\n- night rides need a {LANTERN} lamp"
    assert night.participants == ("alice", "bob")


@pytest.mark.parametrize("how", ["deletes her message", "forgets everything"])
def test_an_authors_erasure_takes_only_her_point_and_the_episode_keeps_the_others(
    store: Store, backend: str, database: Path | str, how: str
) -> None:
    episode_id, rule = pointed_memory(store)
    if how == "deletes her message":
        store.forget_message("m1")
    else:
        store.forget(SCOPE, "alice")
    [night] = store.list_episodes(SCOPE)
    assert night.id == episode_id
    assert (night.summary, night.source_message_ids, night.participants) == (
        f"- night rides need a {LANTERN} lamp",
        ("m2",),
        ("bob",),
    )
    assert traces(store, backend, [WHARF]) == []
    assert WHARF.encode() not in file_bytes(database)
    # Its vector waits for the next flush, which embeds the rebuilt summary along with its own texts.
    assert store.stale_episodes() == [(episode_id, night.summary)]
    store.buffer_messages([(said("m5", "carol", "hello"), 1.0)])
    # A vector of a summary the episode no longer has (points taken out while it was embedded) is not kept.
    store.apply_flush(
        [], consumed_message_ids=[], refreshed_episodes=[(episode_id, "- old words", unit(1.0))]
    )
    assert store.stale_episodes() == [(episode_id, night.summary)]
    store.apply_flush(
        [], consumed_message_ids=["m5"], refreshed_episodes=[(episode_id, night.summary, unit(0.0, 0.0, 1.0))]
    )
    assert store.stale_episodes() == []
    [(found, distance)] = store.episodes_near(SCOPE, unit(0.0, 0.0, 1.0), 1)
    assert found.id == episode_id and distance < 1e-6
    assert [f.id for f in store.list_facts(SCOPE, COMMUNITY_ID)] == [rule]  # Bob's rule is his, it stays


@pytest.mark.parametrize("how", ["forget", "correct"])
def test_an_admins_forget_or_correction_of_a_community_fact_takes_only_the_points_of_its_messages(
    store: Store, backend: str, how: str
) -> None:
    episode_id, rule = pointed_memory(store)
    assert store.points_made_from(SCOPE, rule) == {episode_id: 1}  # what the confirmation says
    assert store.points_made_from("guild:2", rule) == {}
    if how == "forget":
        assert store.forget(SCOPE, COMMUNITY_ID, [rule], actor="admin") == 1
    else:
        fixed = store.correct_fact(
            SCOPE, COMMUNITY_ID, rule, "Night rides need a lamp", unit(0.0, 1.0), False
        )
        assert fixed is not None
    [night] = store.list_episodes(SCOPE)
    assert (night.id, night.summary) == (episode_id, f"- the swap meet is at {WHARF} pier")  # Alice's stays
    assert traces(store, backend, [LANTERN]) == []
    [event] = [e for e in store.events(SCOPE, COMMUNITY_ID) if e["detail"].get("made_from")]
    assert (event["detail"]["episodes"], event["detail"]["points"]) == (0, 1)


def test_deleting_a_repeat_of_a_community_fact_keeps_the_fact_whose_words_are_anothers(
    store: Store, backend: str
) -> None:
    """Carol repeats Bob's rule (a DUPLICATE): her message is a confirmation, not where its words came
    from, so deleting it unlinks it and the rule stays; no event ever held the repeat's text."""
    _, rule = pointed_memory(store)
    store.buffer_messages([(said("m3", "carol", f"yes bring a {LANTERN} lamp, Nightjar style"), 1.0)])
    repeat = community(f"Bring a {LANTERN} lamp to night rides, Nightjar style", ["m3"], unit(0.0, 1.0))
    [confirmed] = store.apply_flush(
        [Operation(Decision.DUPLICATE, repeat, rule)], consumed_message_ids=["m3"]
    )
    assert confirmed.decision is Decision.DUPLICATE and confirmed.fact_id == rule
    assert traces(store, backend, ["Nightjar"]) == []  # the duplicate event records the decision only

    assert store.forget_message("m3") == []
    [kept] = store.list_facts(SCOPE, COMMUNITY_ID)
    assert (kept.id, kept.source_message_ids, kept.authors) == (rule, ("m2",), ("bob",))


def test_an_older_database_turns_each_episode_into_one_point_of_all_its_messages(tmp_path: Path) -> None:
    path = tmp_path / "v7.sqlite3"
    conn = old_database(path, 7)  # 8 to 10 need the store's own SQL functions to migrate
    conn.execute(
        "INSERT INTO episodes (id, scope, channel_id, summary, started_at, ended_at, recorded_at, embedding) "
        "VALUES (4, 'guild:1', 'c1', '- game night on Friday\n- bring snacks', 'a', 'b', 'c', ?)",
        (bytes(4 * DIMS),),
    )
    conn.execute(
        "INSERT INTO episode_sources (episode_id, message_id, author_id) VALUES (4, 'm1', 'alice'), (4, 'm2', 'bob')"
    )
    conn.execute(
        "INSERT INTO fact_events (fact_id, scope, user_id, kind, detail, at) "
        "VALUES (1, 'guild:1', 'alice', 'duplicate', '{\"text\": \"Alice keeps bees\", \"reason\": \"\"}', 'a')"
    )
    conn.close()
    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    try:
        [old] = store.list_episodes("guild:1")
        assert old.summary == "- game night on Friday\n- bring snacks"
        assert [(p.text, p.source_message_ids) for p in old.points] == [
            ("game night on Friday\n- bring snacks", ("m1", "m2"))
        ]
        assert [e["detail"] for e in store.events("guild:1", "alice")] == [{"reason": ""}]
        store.forget_message("m2")  # a point from before is made of all its messages: the episode goes
        assert store.list_episodes("guild:1") == []
    finally:
        store.close()
