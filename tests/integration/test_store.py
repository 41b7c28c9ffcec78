"""Integration tests of the store on real SQLite + sqlite-vec and on real PostgreSQL + pgvector.

Tests taking `store` run on both backends; those about one backend's files or schema open it themselves.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from bot.memory.models import COMMUNITY_ID, BufferedMessage, Decision, FactStatus, NewFact, Operation, Origin
from bot.storage import EmbeddingMismatchError, Store
from bot.storage.errors import DatabaseError
from bot.storage.locations import open_storage
from bot.storage.sqlite.connection import connect
from bot.storage.sqlite.schema import MIGRATIONS
from bot.storage.sqlite.search import keyword_query, owner_token, vector_blob
from tests.fakes import DIMS, angled, unit


def fact(scope: str, user: str, text: str, vector: list[float], sources: list[str] | None = None) -> NewFact:
    return NewFact(scope, user, user.title(), text, sources or [], embedding=vector)


def test_knn_finds_a_persons_own_facts_when_10000_other_vectors_are_closer(store: Store) -> None:
    query = unit(1.0)
    rng = random.Random(7)
    crowd = [
        fact("guild:1", f"other{i % 500}", f"crowd fact {i}", angled(rng.uniform(0, 2)))
        for i in range(10_000)
    ]
    store.add_facts(crowd)
    own_angles = [40, 25, 60, 33, 50, 80]
    own_ids = store.add_facts(
        [fact("guild:1", "alice", f"alice fact {a}", angled(a, towards=2)) for a in own_angles]
    )
    hits = store.knn("guild:1", "alice", query, 5)
    expected = [fid for _, fid in sorted(zip(own_angles, own_ids, strict=True))][:5]
    assert [f.id for f, _ in hits] == expected
    assert all(f.user_id == "alice" for f, _ in hits)
    distances = [d for _, d in hits]
    assert distances == sorted(distances)
    assert distances[0] == pytest.approx(1 - 0.9063, abs=1e-3)  # cos(25°)
    # The distance threshold cuts off what is too far.
    assert [f.id for f, _ in store.knn("guild:1", "alice", query, 5, max_distance=0.25)] == expected[:3]


def alice_and_bees(store: Store) -> None:
    """Alice's facts about bees (one with sources said in a channel and a private thread, one without a
    source, one superseded), one about chess, and Bob's about bees."""
    bees = fact("guild:1", "alice", "Alice keeps bees in Lyon", angled(10), ["m1", "m2"])
    bees.origins = said_in("c1", "m1") | said_in("t1", "m2", parent="c1", private=True)
    store.add_facts(
        [
            bees,
            fact("guild:1", "alice", "Alice sells honey from her bees", angled(30), ["m3"]),
            fact("guild:1", "alice", "Alice plays chess with bees watching", angled(80), ["m4"]),
            fact("guild:1", "alice", "Alice dreams of bees", angled(50)),
            fact("guild:1", "bob", "Bob keeps bees too", angled(5), ["m5"]),
        ]
    )
    [paris] = store.add_facts([fact("guild:1", "alice", "Alice kept bees in Paris", angled(20), ["m6"])])
    merge(store, paris, "Alice kept bees in Paris, now hives", "m7")


@pytest.mark.parametrize("pool", [2, 20])
def test_a_persons_hits_are_what_knn_and_keyword_search_find(store: Store, pool: int) -> None:
    """`person_hits` (one statement on PostgreSQL) returns the facts, distances, sources and keyword
    ranking that `knn` and `keyword_search` return apart, with or without a vector, words or a cut."""
    alice_and_bees(store)
    for vector in (unit(1.0), None):
        for text in ("who keeps bees or hives in Lyon?", "", "and the of"):
            for cut in (None, 0.3):
                hits = store.person_hits(
                    "guild:1", "alice", vector, text, pool=pool, max_distance=cut, ignore=["alice"]
                )
                near = store.knn("guild:1", "alice", vector, pool, cut) if vector else []
                matched = store.keyword_search("guild:1", "alice", text, pool, ignore=["alice"])
                assert hits == (near, matched), (vector, text, cut)
    [(bees, _)] = store.person_hits("guild:1", "alice", unit(1.0), "", pool=1, max_distance=None)[0]
    assert [s.origin for s in bees.sources] == [Origin("c1"), Origin("t1", "c1", True)]


def hits_as_recorded(store: Store, scope: str, user_id: str) -> None:
    """Asserts that `person_hits` reads each of the person's facts with the sources `knn` and
    `keyword_search` read from `fact_sources` (PostgreSQL's search reads a copy kept in the fact's row)."""
    question = " ".join(f.text for f in store.list_facts(scope, user_id))
    hits = store.person_hits(scope, user_id, unit(1.0), question, pool=50, max_distance=None)
    assert hits == (
        store.knn(scope, user_id, unit(1.0), 50),
        store.keyword_search(scope, user_id, question, 50),
    )
    assert hits[0], "no facts left to compare"


def test_a_persons_hits_read_the_sources_as_every_write_leaves_them(store: Store) -> None:
    """Sources are added (a new fact, a repeat, a merge inheriting the old fact's), taken away (a deleted
    message, someone forgetting everything, which unlinks their repeats of a community fact) and deleted
    with their fact: a recall's search reads them as they are after each, with where they were said."""
    alice_and_bees(store)
    hits_as_recorded(store, "guild:1", "alice")
    bees = next(f for f in store.list_facts("guild:1", "alice") if f.text == "Alice keeps bees in Lyon")
    repeat = NewFact("guild:1", "alice", "Alice", "Alice keeps bees", ["m8"], origins=said_in("c2", "m8"))
    store.apply_flush([Operation(Decision.DUPLICATE, repeat, bees.id)])
    hits_as_recorded(store, "guild:1", "alice")
    [(found, _)] = store.person_hits("guild:1", "alice", unit(1.0), "", pool=1, max_distance=0.2)[0]
    assert [(s.message_id, s.confirms) for s in found.sources] == [("m1", False), ("m2", False), ("m8", True)]

    assert store.forget_message("m2") == []  # one of its sources: the fact stays, with the others
    hits_as_recorded(store, "guild:1", "alice")
    [(found, _)] = store.person_hits("guild:1", "alice", unit(1.0), "", pool=1, max_distance=0.2)[0]
    assert found.source_message_ids == ("m1", "m8")

    [rule] = store.add_facts([fact("guild:1", COMMUNITY_ID, "Spoilers go in #spoilers", unit(1.0), ["m20"])])
    carols = BufferedMessage("m21", "guild:1", "c1", "carol", "Carol", "spoilers in #spoilers!", "2026-01-01")
    store.buffer_messages([(carols, 1.0)])  # who said it: the buffered message's author
    store.apply_flush(
        [Operation(Decision.DUPLICATE, NewFact("guild:1", COMMUNITY_ID, "", "Spoilers", ["m21"]), rule)]
    )
    hits_as_recorded(store, "guild:1", COMMUNITY_ID)
    assert store.forget("guild:1", "carol") == 0  # Carol forgets everything: her repeat is unlinked
    hits_as_recorded(store, "guild:1", COMMUNITY_ID)
    [(kept, _)] = store.person_hits("guild:1", COMMUNITY_ID, unit(1.0), "", pool=1, max_distance=None)[0]
    assert kept.source_message_ids == ("m20",)

    store.forget("guild:1", "alice", [bees.id])
    hits_as_recorded(store, "guild:1", "alice")


def test_tidying_the_word_index_folds_its_pieces_and_keeps_every_match(store: Store, backend: str) -> None:
    """Every write adds a piece to SQLite's keyword index (FTS5 merges them all once 16 pile up); the
    upkeep folds them into one, in steps, and a search finds the same facts in the same order before
    and after. PostgreSQL has nothing to fold."""
    for i in range(20):  # one transaction each: a piece each
        store.add_facts([fact("guild:1", "alice", f"Alice plays tune{i} on the oboe", angled(i))])
    store.add_facts([fact("guild:1", "bob", "Bob plays the oboe", unit(1.0))])
    question = "who plays tunes on an oboe?"
    before = [f.id for f in store.keyword_search("guild:1", "alice", question, 50, ignore=["alice"])]
    assert len(before) == 20
    pieces = index_blocks(store) if backend == "sqlite" else 0
    steps = 0
    while store.tidy_word_index(1):
        steps += 1
        assert steps < 500
    assert [f.id for f in store.keyword_search("guild:1", "alice", question, 50, ignore=["alice"])] == before
    assert [f.text for f in store.keyword_search("guild:1", "bob", "oboe", 5)] == ["Bob plays the oboe"]
    assert store.tidy_word_index(1) is False
    if backend == "sqlite":
        assert steps >= 1 and index_blocks(store) < pieces
    else:
        assert steps == 0


@pytest.mark.parametrize("seed", range(4))
def test_a_forgotten_fact_leaves_no_word_in_the_file_after_the_index_was_folded(
    tmp_path: Path, seed: int
) -> None:
    """Folding the index moves every fact's words to new pages, and SQLite can leave old copies in the
    free space of the pages it rebuilds; after a forget, no copy of the words may be anywhere in the
    file or its log (with SQLite 3.50.4, seed 0 kept one before the index was rewritten on forgetting)."""
    rng = random.Random(seed)
    path = tmp_path / "memory.sqlite3"
    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    secret = "zqsecretxyzw"
    for batch in range(30):  # a piece of the index each
        words = [
            " ".join("".join(rng.choices("abcdefghijklmnop", k=8)) for _ in range(8)) for _ in range(100)
        ]
        batch_facts = [fact("guild:1", f"u{i % 7}", w, angled(i)) for i, w in enumerate(words)]
        if batch == 15:
            batch_facts[0] = fact("guild:1", "alice", f"Alice keeps {secret} hidden", angled(1))
        store.add_facts(batch_facts)
    while store.tidy_word_index(200):
        pass
    assert store.word_index_pieces() == 1
    [kept] = store.list_facts("guild:1", "alice")
    assert store.forget("guild:1", "alice", [kept.id]) == 1
    assert [f.text for f in store.keyword_search("guild:1", "u3", words[3], 1)] == [words[3]]  # still read
    store.close()
    wal = path.with_name(path.name + "-wal")
    raw = path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert secret.encode() not in raw


def index_blocks(store: Store) -> int:
    """The rows of SQLite's FTS5 index: its pages, and a few of its own."""
    return int(store.conn.execute("SELECT count(*) FROM owner_words_data").fetchone()[0])


def test_scopes_never_leak(store: Store) -> None:
    v = unit(1.0)
    store.add_facts(
        [
            fact("guild:1", "alice", "Alice plays the cello in guild one", v),
            fact("guild:2", "alice", "Alice plays the drums in guild two", v),
            fact("dm", "alice", "Alice plays the flute in private", v),
        ]
    )
    for scope, word in [("guild:1", "cello"), ("guild:2", "drums"), ("dm", "flute")]:
        texts = [f.text for f, _ in store.knn(scope, "alice", v, 10)]
        assert len(texts) == 1 and word in texts[0]
        assert [f.text for f in store.keyword_search(scope, "alice", "cello drums flute plays", 10)] == texts
        assert [f.text for f in store.list_facts(scope, "alice")] == texts
    assert store.knn("guild:3", "alice", v, 10) == []


def test_keyword_search_is_confined_to_one_person(store: Store) -> None:
    store.add_facts(
        [
            fact("guild:1", "alice", "Alice lives in Reykjavik", unit(1.0)),
            fact("guild:1", "bob", "Bob lives in Reykjavik too", unit(1.0)),
        ]
    )
    hits = store.keyword_search("guild:1", "bob", "who is in reykjavik?", 10)
    assert [f.user_id for f in hits] == ["bob"]
    assert keyword_query("guild:1", "bob", "the and of") is None
    assert keyword_query("guild:1", "bob", 'say "quoted" OR NEAR(x)') is not None
    # Query syntax in the text is quoted, never interpreted.
    assert store.keyword_search("guild:1", "bob", 'NEAR("x" "y") AND OR *', 10) == []


def test_keyword_search_matches_other_forms_of_a_word(store: Store) -> None:
    """People ask "where does she live?" about a fact that says "lives"; stems match as prefixes."""
    v = unit(1.0)
    store.add_facts(
        [
            fact("guild:1", "alice", "Alice lives in Oslo", v),
            fact("guild:1", "alice", "Alice has a peanut allergy", v),
            fact("guild:1", "alice", "Alice owns a bakery", v),
        ]
    )
    assert [f.text for f in store.keyword_search("guild:1", "alice", "where does she live?", 5)] == [
        "Alice lives in Oslo"
    ]
    assert [f.text for f in store.keyword_search("guild:1", "alice", "is she allergic?", 5)] == [
        "Alice has a peanut allergy"
    ]
    assert [f.text for f in store.keyword_search("guild:1", "alice", "any bakers here?", 5)] == [
        "Alice owns a bakery"
    ]
    assert store.keyword_search("guild:1", "alice", "any dentists here?", 5) == []


def test_keyword_search_ranks_a_persons_matches_by_bm25(store: Store) -> None:
    v = unit(1.0)
    ids = store.add_facts(
        [
            fact("guild:1", "alice", "Alice lives in Zürich", v),
            fact("guild:1", "alice", "Alice likes tea", v),
            fact("guild:1", "alice", "Alice likes tea from Zurich and the tea shops of Zurich", v),
            fact("guild:1", "alice", "Alice likes hiking", v),
            fact("guild:1", "alice", "Alice drinks green tea every morning", v),
            # Somebody else's facts, many matching, must change nothing about Alice's ranking.
            *[fact("guild:1", f"other{i}", "Other likes tea in Zurich", v) for i in range(30)],
        ]
    )
    hits = store.keyword_search("guild:1", "alice", "zurich tea", 10)
    # Both words, twice each, beat one word; the rare word (Zurich, also matching Zürich) beats "tea".
    # Among one-word matches, the shorter fact wins.
    assert [f.id for f in hits] == [ids[2], ids[0], ids[1], ids[4]]
    assert [f.id for f in store.keyword_search("guild:1", "alice", "zurich tea", 2)] == [ids[2], ids[0]]


# Facts of Alice, of Bob and of Alice in another server, and what each question finds among them: what
# keyword search found before it read only the person's own words (stems as prefixes, accents folded).
SAME_HITS_FACTS = [
    ("guild:1", "alice", "Alice is running a marathon in São Paulo"),
    ("guild:1", "alice", "Alice's café sells crème brûlée"),
    ("guild:1", "alice", "Alice teaches chemistry to teenagers"),
    ("guild:1", "alice", "Alice's brother Bob is a lively pianist"),
    ("guild:1", "bob", "Bob runs a café in Lisbon and teaches piano"),
    ("guild:2", "alice", "Alice runs the café of the server's meetups"),
]
SAME_HITS = [
    ("who runs marathons?", [0]),  # "run" is a prefix of "running"
    ("sao paulo", [0]),
    ("any cafes with creme brulee near here?", [1]),  # accents folded on both sides
    ("does anyone teach?", [2]),
    ("her teacher", [2]),  # "teach" of "teacher" is a prefix of "teaches"
    ("where does she live?", [3]),  # "liv" is a prefix of "lively" too
    ("chemistry and pianists", [2, 3]),
    ("lisbon", []),  # Bob's word only
    ("meetups", []),  # Alice's, in the other server
]


@pytest.mark.parametrize(("question", "found"), SAME_HITS)
def test_keyword_search_finds_stems_as_prefixes_and_folded_accents_among_the_persons_own_facts(
    store: Store, question: str, found: list[int]
) -> None:
    ids = store.add_facts([fact(scope, user, text, unit(1.0)) for scope, user, text in SAME_HITS_FACTS])
    hits = store.keyword_search("guild:1", "alice", question, 10)
    assert sorted(f.id for f in hits) == [ids[i] for i in found]


def test_keyword_search_leaves_out_replaced_and_forgotten_facts(store: Store) -> None:
    [lyon, bees] = store.add_facts(
        [
            fact("guild:1", "alice", "Alice lives in Lyon", unit(1.0)),
            fact("guild:1", "alice", "Alice keeps bees", unit(1.0)),
        ]
    )
    paris = merge(store, lyon, "Alice lives in Paris, formerly Lyon", "m2")
    assert [f.id for f in store.keyword_search("guild:1", "alice", "lyon", 5)] == [paris]
    store.forget("guild:1", "alice", [bees])
    assert store.keyword_search("guild:1", "alice", "bees", 5) == []
    [again] = store.add_facts([fact("guild:1", "alice", "Alice keeps bees again", unit(1.0))])
    assert [f.id for f in store.keyword_search("guild:1", "alice", "bees", 5)] == [again]


def test_a_version_7_database_gets_its_facts_words_indexed_per_person(tmp_path: Path) -> None:
    """0008 fills `owner_words` with the words of the facts `facts_fts` held (the active ones), then drops it."""
    path = tmp_path / "v7.sqlite3"
    conn = old_database(path, 7)
    rows = [
        (1, "guild:1", "alice", "Alice is running a marathon in São Paulo", "active"),
        (2, "guild:1", "alice", "Alice used to run in Lyon", "invalidated"),
        (3, "guild:1", "bob", "Bob runs a café in Lisbon", "active"),
    ]
    for fid, scope, user, text, status in rows:
        conn.execute(
            "INSERT INTO facts (id, scope, user_id, text, status, recorded_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, 'a', 'a')",
            (fid, scope, user, text, status),
        )
        if status == "active":
            conn.execute(
                "INSERT INTO fact_vectors (fact_id, scope, user_id, embedding) VALUES (?, ?, ?, ?)",
                (fid, scope, user, vector_blob(unit(1.0))),
            )
            conn.execute(
                "INSERT INTO facts_fts (rowid, text, owner) VALUES (?, ?, ?)",
                (fid, text, owner_token(scope, user)),
            )
    conn.close()

    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    try:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == MIGRATIONS[-1].number
        names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master").fetchall()}
        assert not {n for n in names if n.startswith("facts_fts")}
        store.conn.execute("INSERT INTO owner_words (owner_words) VALUES ('integrity-check')")
        assert [f.id for f in store.keyword_search("guild:1", "alice", "who runs? sao paulo", 5)] == [1]
        assert [f.id for f in store.keyword_search("guild:1", "bob", "a cafe that runs", 5)] == [3]
        assert store.keyword_search("guild:1", "alice", "lyon", 5) == []  # not active: never indexed
        assert store.forget("guild:1", "alice", [1]) == 1  # its migrated words leave with it
        terms = indexed_terms(store)
        assert terms and not [t for t in terms if t.startswith(owner_token("guild:1", "alice"))]
    finally:
        store.close()


def test_a_new_file_gets_64_kib_pages_where_21_vector_rows_fit_and_an_old_file_keeps_its_own(
    tmp_path: Path,
) -> None:
    new = Store.open(tmp_path / "new.sqlite3", embedding_model="fake-embedding", dimensions=DIMS)
    assert new.conn.execute("PRAGMA page_size").fetchone()[0] == 65536
    # Read through a memory map: a search copies no whole 64 KiB page to read a row of it.
    assert new.conn.execute("PRAGMA mmap_size").fetchone()[0] > 0
    new.close()
    legacy = sqlite3.connect(tmp_path / "legacy.sqlite3")
    legacy.execute("PRAGMA page_size = 4096")
    legacy.execute("PRAGMA journal_mode = WAL")
    legacy.close()
    old = Store.open(tmp_path / "legacy.sqlite3", embedding_model="fake-embedding", dimensions=DIMS)
    try:
        assert old.conn.execute("PRAGMA page_size").fetchone()[0] == 4096
        [fid] = old.add_facts([fact("dm", "alice", "Alice keeps bees", unit(1.0))])
        assert [f.id for f in old.keyword_search("dm", "alice", "bees", 5)] == [fid]
    finally:
        old.close()


def test_migrations_from_empty_and_reopening_are_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    first = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    assert first.conn.execute("PRAGMA user_version").fetchone()[0] == MIGRATIONS[-1].number
    first.add_facts([fact("dm", "alice", "Alice keeps bees", unit(1.0))])
    tables = first.conn.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
    assert first.migrate() == MIGRATIONS[-1].number
    first.close()
    for _ in range(2):
        again = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
        assert again.conn.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall() == tables
        assert [f.text for f in again.list_facts("dm", "alice")] == ["Alice keeps bees"]
        assert again.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        again.close()


def test_a_version_1_buffer_survives_the_migration_that_adds_thread_parents(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    conn = connect(path)
    for statement in MIGRATIONS[0].statements:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO pending_messages (message_id, scope, channel_id, author_id, author_name, content, "
        "created_at, captured_at) VALUES ('m1', 'guild:1', 't1', 'alice', 'Alice', 'I keep bees', 'x', 1.0)"
    )
    conn.close()
    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == MIGRATIONS[-1].number
    [kept] = store.pending_messages("t1", 10)
    assert (kept.content, kept.parent_channel_id) == ("I keep bees", None)
    store.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "n.sqlite3"
    Store.open(path, embedding_model="fake-embedding", dimensions=DIMS).close()
    s = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    s.conn.execute(f"PRAGMA user_version = {MIGRATIONS[-1].number + 1}")
    s.close()
    with pytest.raises(DatabaseError, match="newer than this bot"):
        Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)


def test_another_embedding_model_or_dimension_names_reembed(database: Path | str) -> None:
    open_storage(database, embedding_model="fake-embedding", dimensions=DIMS).close()
    with pytest.raises(EmbeddingMismatchError, match="python -m bot reembed"):
        open_storage(database, embedding_model="other-model", dimensions=DIMS)
    with pytest.raises(EmbeddingMismatchError, match="at 16"):
        open_storage(database, embedding_model="fake-embedding", dimensions=16)


def indexed_terms(store: Store) -> list[str]:
    """Every term of SQLite's keyword index, each a person's token and one of their words."""
    return [r[0] for r in store.conn.execute("SELECT term FROM owner_words_terms").fetchall()]


def test_a_fact_whose_indexed_words_cannot_be_rebuilt_still_leaves_the_index_whole(tmp_path: Path) -> None:
    """The index deletes a fact by the words rebuilt from its row; should they differ from those it was
    indexed with (its text changed behind the store's back, a changed Unicode table), the person's terms
    that still name the fact are found and deleted too."""
    store = Store.open(tmp_path / "w.sqlite3", embedding_model="fake-embedding", dimensions=DIMS)
    try:
        [fid] = store.add_facts([fact("guild:1", "alice", "Alice keeps Quillotrin bees", unit(1.0))])
        [bob] = store.add_facts([fact("guild:1", "bob", "Bob keeps Quillotrin bees", unit(1.0))])
        store.conn.execute("UPDATE facts SET text = 'Alice keeps wasps' WHERE id = ?", (fid,))
        assert store.forget("guild:1", "alice", [fid]) == 1
        alice = owner_token("guild:1", "alice")
        assert not [t for t in indexed_terms(store) if t.startswith(alice)]
        store.conn.execute("INSERT INTO owner_words (owner_words) VALUES ('integrity-check')")
        assert [f.id for f in store.keyword_search("guild:1", "bob", "quillotrin bees", 5)] == [bob]
    finally:
        store.close()


def test_forget_leaves_no_trace(tmp_path: Path) -> None:
    path = tmp_path / "f.sqlite3"
    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    secret = "Zanzibarquux"
    [old] = store.add_facts(
        [fact("guild:1", "alice", f"Alice owns a boat named {secret}", unit(1.0), ["m1"])]
    )
    merged = NewFact(
        "guild:1", "alice", "Alice", f"Alice sails {secret} on weekends", ["m2"], embedding=unit(1, 0.1)
    )
    store.apply_flush(
        [
            Operation(
                Decision.MERGE,
                merged,
                old,
                merged_text=f"Alice owns {secret} and sails it",
            )
        ]
    )
    store.add_facts([fact("guild:1", "bob", "Bob likes tea", unit(0, 1.0))])
    assert store.count_facts("guild:1", "alice", all_statuses=True) == 2
    assert [t for t in indexed_terms(store) if secret.lower() in t]  # the merged fact's words

    assert store.forget("guild:1", "alice") == 2
    conn = store.conn
    assert conn.execute("SELECT count(*) FROM facts WHERE user_id = 'alice'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM fact_vectors").fetchone()[0] == 1  # Bob's
    assert conn.execute("SELECT count(*) FROM fact_sources").fetchone()[0] == 0
    assert not [t for t in indexed_terms(store) if secret.lower() in t]
    assert (
        conn.execute("SELECT count(*) FROM fact_events WHERE detail LIKE ?", (f"%{secret}%",)).fetchone()[0]
        == 0
    )
    blobs = conn.execute("SELECT block FROM owner_words_data").fetchall()
    assert not any(secret.lower().encode() in bytes(b[0]) for b in blobs if b[0])
    forgotten = conn.execute("SELECT detail FROM fact_events WHERE kind = 'forgotten'").fetchall()
    assert forgotten == [('{"count": 2, "all": true}',)]
    assert [f.text for f in store.list_facts("guild:1", "bob")] == ["Bob likes tea"]
    store.close()
    raw = path.read_bytes() + (
        path.with_name(path.name + "-wal").read_bytes()
        if path.with_name(path.name + "-wal").exists()
        else b""
    )
    assert secret.encode() not in raw and secret.lower().encode() not in raw


def merge(store: Store, target: int, text: str, source: str) -> int:
    new = NewFact("guild:1", "alice", "Alice", text.split(",")[-1], [source], embedding=unit(1.0, 0.2))
    [change] = store.apply_flush([Operation(Decision.MERGE, new, target, merged_text=text)])
    return change.fact_id


# Each backend's keyword index, as a table whose rows spell out its words (SQLite: the FTS5 index's terms).
TEXT_INDEX = {"sqlite": "owner_words_terms", "postgres": "fact_words"}


def test_deleting_a_message_takes_its_words_out_of_merged_facts(store: Store, backend: str) -> None:
    [cat] = store.add_facts([fact("guild:1", "alice", "Alice has a cat", unit(1.0), ["m1"])])
    dog = merge(store, cat, "Alice has a cat, and a secret dog", "m2")
    fish = merge(store, dog, "Alice has a cat, and a secret dog, and a fish", "m3")
    # Someone repeats the newest fact: a confirming source adds no words.
    store.apply_flush(
        [Operation(Decision.DUPLICATE, NewFact("guild:1", "alice", "Alice", "y", ["m4"]), fish)]
    )
    assert store.forget_message("m4") == []
    assert [f.text for f in store.list_facts("guild:1", "alice")] == [
        "Alice has a cat, and a secret dog, and a fish"
    ]

    removed = store.forget_message("m2")  # the dog's message: both facts holding "secret dog" go
    assert sorted(fid for _, _, fid in removed) == sorted([dog, fish])
    [left] = store.list_facts("guild:1", "alice")
    assert (left.id, left.text, left.status) == (cat, "Alice has a cat", FactStatus.ACTIVE)
    for table in ("facts", "fact_events", TEXT_INDEX[backend]):
        assert "secret" not in str(store.conn.execute(f"SELECT * FROM {table}").fetchall()), table
    assert [f.id for f, _ in store.knn("guild:1", "alice", unit(1.0), 5)] == [cat]


OLD_WORDS = ["Zanzibarquux", "Quillotrin", "Xerbonix"]


def build_history(store: Store, steps: tuple[Decision, ...]) -> list[int]:
    """Alice's fact about OLD_WORDS[0], replaced step by step (each adding the next word, message m1, m2..).

    A MERGE keeps the earlier words in the new text; an INVALIDATE says only the new word. Returns the
    versions' ids, oldest first: the last is active, every earlier one stays as history. A buffered reply
    of the bot repeats the active fact.
    """
    text = f"Alice collects {OLD_WORDS[0]}"
    versions = store.add_facts([fact("guild:1", "alice", text, unit(1.0), ["m1"])])
    for number, (decision, word) in enumerate(zip(steps, OLD_WORDS[1:], strict=True), start=2):
        said = f"Alice collects {word}"
        text = f"{text} and {word}" if decision is Decision.MERGE else said
        new = NewFact("guild:1", "alice", "Alice", said, [f"m{number}"], embedding=unit(1.0, 0.1 * number))
        merged = text if decision is Decision.MERGE else None
        [change] = store.apply_flush([Operation(decision, new, versions[-1], merged_text=merged)])
        versions.append(change.fact_id)
    bot_turn = BufferedMessage("b1", "guild:1", "c1", "bot", "Bot", f"You collect {text}!", "t", is_bot=True)
    store.buffer_messages([(bot_turn, 1.0)])
    return versions


def traces(store: Store, backend: str, words: list[str]) -> list[str]:
    """Every `table.column` of the database holding one of `words` (any case), blobs and indexes too.

    An FTS5 table is read through its shadow tables (its blocks of terms) and its fts5vocab table, which
    spells out every term it holds: a contentless one cannot be scanned itself.
    """
    tables = (
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE % fts5(%'"
        if backend == "sqlite"
        else "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()"
    )
    found = []
    for [table] in store.conn.execute(tables).fetchall():
        for row in store.conn.select(f"SELECT * FROM {table}"):
            for column, value in dict(row).items():
                held = bytes(value) if isinstance(value, (bytes, memoryview)) else str(value).encode()
                found += [f"{table}.{column}: {w}" for w in words if w.lower().encode() in held.lower()]
    return found


INDEX_COLUMN = {"sqlite": "term", "postgres": "words"}


def file_bytes(database: Path | str) -> bytes:
    """An SQLite database's file and its WAL as they are on disk (b"" for a PostgreSQL URL)."""
    if not isinstance(database, Path):
        return b""
    wal = database.with_name(database.name + "-wal")
    return database.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


HISTORIES = {
    "merge-merge": (Decision.MERGE, Decision.MERGE),
    "invalidate-merge": (Decision.INVALIDATE, Decision.MERGE),
    "merge-invalidate": (Decision.MERGE, Decision.INVALIDATE),
}
# Forgetting the first version takes the versions that hold its words: those it was merged into.
HOLDING_THE_FIRST = {"merge-merge": 3, "invalidate-merge": 1, "merge-invalidate": 2}


@pytest.mark.parametrize("history", list(HISTORIES))
@pytest.mark.parametrize("action", ["correct", "forget", "forget the first version"])
def test_correcting_or_forgetting_a_fact_leaves_no_word_of_any_earlier_version(
    store: Store, backend: str, database: Path | str, history: str, action: str
) -> None:
    [bob] = store.add_facts([fact("guild:1", "bob", "Bob collects stamps", unit(1.0), ["m9"])])
    versions = build_history(store, HISTORIES[history])
    current = versions[-1]
    assert traces(store, backend, OLD_WORDS)  # the words are there to be found
    active = store.get_fact(current)
    assert active is not None
    indexed = [
        w
        for w in OLD_WORDS
        if f"{TEXT_INDEX[backend]}.{INDEX_COLUMN[backend]}: {w}" in traces(store, backend, [w])
    ]
    assert indexed == [w for w in OLD_WORDS if w in active.text]  # the keyword index is searched too
    gone = OLD_WORDS
    if action == "correct":
        fixed = store.correct_fact("guild:1", "alice", current, "Alice collects coins", unit(0.0, 1.0), False)
        assert fixed is not None and (fixed.id, fixed.text) == (current, "Alice collects coins")
        assert [f.id for f in store.list_facts("guild:1", "alice", all_statuses=True)] == [current]
        assert [f.text for f in store.export_facts("guild:1", "alice")] == ["Alice collects coins"]
        [event] = store.events("guild:1", "alice")
        assert (event["fact_id"], event["kind"], event["detail"]) == (
            current,
            "corrected",
            {"versions_deleted": 2},
        )
    elif action == "forget":
        assert store.forget("guild:1", "alice", [current]) == 3
        assert store.export_facts("guild:1", "alice") == []
    else:
        gone = OLD_WORDS[:1]
        assert store.forget("guild:1", "alice", [versions[0]]) == HOLDING_THE_FIRST[history]
    assert traces(store, backend, gone) == []
    raw = file_bytes(database)  # while the store is open, as a running bot leaves it
    assert not [w for w in gone if w.encode() in raw or w.lower().encode() in raw]

    # Deleting the messages the history came from brings back no version that held the words.
    for message in ("m3", "m2", "m1"):
        store.forget_message(message)
        assert traces(store, backend, gone) == [], message
        assert not [f for f in store.export_facts("guild:1", "alice") if any(w in f.text for w in gone)]
    assert [f.id for f in store.list_facts("guild:1", "bob")] == [bob]


def test_withdrawing_a_replaced_fact_does_not_bring_back_what_it_had_replaced(store: Store) -> None:
    [lyon] = store.add_facts([fact("guild:1", "alice", "Alice lives in Lyon", unit(1.0), ["m1"])])
    paris = merge(store, lyon, "Alice lives in Paris, formerly Lyon", "m2")
    berlin = NewFact("guild:1", "alice", "Alice", "Alice lives in Berlin", ["m3"], embedding=unit(1.0, 0.4))
    [moved] = store.apply_flush([Operation(Decision.INVALIDATE, berlin, paris)])
    assert [r[2] for r in store.forget_message("m2")] == [paris]
    assert [f.text for f in store.list_facts("guild:1", "alice")] == ["Alice lives in Berlin"]
    old = store.get_fact(lyon)
    # Berlin replaced Lyon's line of facts without carrying its words: invalidated, not merged.
    assert old is not None and old.status is FactStatus.INVALIDATED and old.superseded_by == moved.fact_id
    # Lyon's own message goes: so does the old Lyon fact, but Berlin holds none of its words and stays.
    assert store.forget_message("m1") == [("guild:1", "alice", lyon)]
    assert [f.text for f in store.list_facts("guild:1", "alice")] == ["Alice lives in Berlin"]


def test_history_relinks_as_merged_only_when_both_steps_were_merges(store: Store) -> None:
    [lyon] = store.add_facts([fact("guild:1", "alice", "Alice lives in Lyon", unit(1.0), ["m1"])])
    paris = merge(store, lyon, "Alice lives in Lyon, and Paris", "m2")
    rome = merge(store, paris, "Alice lives in Lyon, and Paris, and Rome", "m3")
    assert sorted(r[2] for r in store.forget_message("m2")) == [paris, rome]  # both hold "Paris"
    assert [f.text for f in store.list_facts("guild:1", "alice")] == ["Alice lives in Lyon"]


def test_deleting_a_message_that_only_repeated_an_imported_fact_keeps_it(store: Store) -> None:
    [tea] = store.add_facts([fact("guild:1", "alice", "Alice likes tea", unit(1.0), [])])
    again = NewFact("guild:1", "alice", "Alice", "Alice likes tea", ["m9"])
    store.apply_flush([Operation(Decision.DUPLICATE, again, tea)])
    assert store.forget_message("m9") == []
    assert [f.id for f in store.list_facts("guild:1", "alice")] == [tea]


def test_recent_facts_put_the_last_stated_or_confirmed_first(store: Store) -> None:
    tea, cello, oslo = store.add_facts(
        [
            fact("guild:1", "alice", "Alice likes tea", unit(1.0), ["m1"]),
            fact("guild:1", "alice", "Alice plays the cello", unit(2.0), ["m2"]),
            fact("guild:1", "alice", "Alice lives in Oslo", unit(3.0), ["m3"]),
        ]
    )
    store.add_facts([fact("guild:1", "bob", "Bob likes coffee", unit(1.0), ["m4"])])
    assert [f.id for f in store.recent_facts("guild:1", "alice", 10)] == [oslo, cello, tea]
    again = NewFact("guild:1", "alice", "Alice", "Alice likes tea", ["m5"])
    store.apply_flush([Operation(Decision.DUPLICATE, again, tea)])  # said again: the newest now
    assert [f.id for f in store.recent_facts("guild:1", "alice", 2)] == [tea, oslo]
    [moved] = store.apply_flush(
        [
            Operation(
                Decision.INVALIDATE,
                NewFact("guild:1", "alice", "Alice", "Alice lives in Rome", ["m6"], embedding=unit(3.0)),
                oslo,
            )
        ]
    )
    recent = store.recent_facts("guild:1", "alice", 10)
    assert [f.id for f in recent] == [moved.fact_id, tea, cello]  # a superseded fact is not listed
    assert recent[1].source_message_ids == ("m1", "m5")


def test_a_source_deleted_while_the_flush_ran_is_not_kept_on_the_fact(store: Store) -> None:
    now = 1.0
    store.buffer_messages([(BufferedMessage("m2", "guild:1", "c1", "alice", "Alice", "I fly", "t"), now)])
    pilot = NewFact("guild:1", "alice", "Alice", "Alice is a pilot", ["m1", "m2"], embedding=unit(1.0))
    [change] = store.apply_flush([Operation(Decision.ADD, pilot)], consumed_message_ids=["m1", "m2"])
    assert store.get_fact(change.fact_id).source_message_ids == ("m2",)  # type: ignore[union-attr]


def test_forget_one_fact_checks_the_owner(store: Store) -> None:
    [alice_fact] = store.add_facts([fact("guild:1", "alice", "Alice is a pilot", unit(1.0))])
    assert store.forget("guild:1", "bob", [alice_fact]) == 0
    assert store.forget("guild:2", "alice", [alice_fact]) == 0
    assert store.forget("guild:1", "alice", [alice_fact + 100]) == 0
    assert store.get_fact(alice_fact) is not None
    assert store.forget("guild:1", "alice", [alice_fact]) == 1
    assert store.get_fact(alice_fact) is None


def test_deleting_the_only_source_message_forgets_and_restores_what_it_replaced(store: Store) -> None:
    [paris] = store.add_facts([fact("guild:1", "alice", "Alice lives in Paris", unit(1.0), ["m1"])])
    berlin = NewFact("guild:1", "alice", "Alice", "Alice lives in Berlin", ["m2"], embedding=unit(1.0, 0.3))
    [change] = store.apply_flush([Operation(Decision.INVALIDATE, berlin, paris)])
    assert store.get_fact(paris).status is FactStatus.INVALIDATED  # type: ignore[union-attr]
    assert [f.id for f, _ in store.knn("guild:1", "alice", unit(1.0), 5)] == [change.fact_id]

    assert store.forget_message("m2") == [("guild:1", "alice", change.fact_id)]
    assert store.get_fact(change.fact_id) is None  # type: ignore[arg-type]
    restored = store.get_fact(paris)
    assert restored is not None and restored.status is FactStatus.ACTIVE and restored.superseded_by is None
    assert [f.id for f, _ in store.knn("guild:1", "alice", unit(1.0), 5)] == [paris]
    assert [f.id for f in store.keyword_search("guild:1", "alice", "paris", 5)] == [paris]
    # A fact with another source left survives the deletion of one of them.
    store.apply_flush(
        [Operation(Decision.DUPLICATE, NewFact("guild:1", "alice", "Alice", "x", ["m3"]), paris)]
    )
    assert store.forget_message("m1") == []
    assert store.get_fact(paris).source_message_ids == ("m3",)  # type: ignore[union-attr]


@pytest.mark.parametrize("withdraw", ["opt_out", "ignore", "disable", "delete"])
def test_withdrawn_buffered_text_does_not_linger_in_the_files(tmp_path: Path, withdraw: str) -> None:
    path = tmp_path / "w.sqlite3"
    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    secret = "Quetzalcoatl-7781"
    message = BufferedMessage("m1", "guild:1", "c1", "alice", "Alice", f"my password is {secret}", "t")
    store.buffer_messages([(message, 1.0)])
    {
        "opt_out": lambda: store.set_opt_out("guild:1", "alice", True),
        "ignore": lambda: store.set_channel_ignored("1", "c1", True),
        "disable": lambda: store.update_guild_settings("1", memory_enabled=False),
        "delete": lambda: store.forget_message("m1"),
    }[withdraw]()
    wal = path.with_name(path.name + "-wal")
    raw = path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")  # while still open
    assert secret.encode() not in raw
    store.close()


def test_a_duplicate_of_a_fact_merged_in_the_same_flush_confirms_the_merged_one(store: Store) -> None:
    [cat] = store.add_facts([fact("guild:1", "alice", "Alice has a cat", unit(1.0), ["m1"])])
    named = NewFact("guild:1", "alice", "Alice", "Alice's cat is Tom", ["m2"], embedding=unit(1.0, 0.2))
    again = NewFact("guild:1", "alice", "Alice", "Alice owns a cat", ["m3"], embedding=unit(1.0, 0.01))
    merged, repeated = store.apply_flush(
        [
            Operation(Decision.MERGE, named, cat, merged_text="Alice has a cat called Tom"),
            Operation(Decision.DUPLICATE, again, cat),
        ]
    )
    assert repeated.decision is Decision.DUPLICATE and repeated.fact_id == merged.fact_id
    [current] = store.list_facts("guild:1", "alice")
    assert current.text == "Alice has a cat called Tom" and "m3" in current.source_message_ids


def test_a_merged_fact_replaced_before_its_own_vector_came_still_gets_it(store: Store) -> None:
    [cat] = store.add_facts([fact("guild:1", "alice", "Alice has a cat", unit(1.0), ["m1"])])
    first = merge(store, cat, "Alice has a cat, and a dog", "m2")
    second = merge(store, first, "Alice has a cat, and a dog, and a fish", "m3")
    assert [fid for fid, _ in store.stale_facts()] == [first, second]
    store.apply_flush([], refreshed=[(first, unit(0.0, 1.0)), (second, unit(0.0, 0.0, 1.0))])
    assert store.stale_facts() == []
    store.forget_message("m3")  # the fish goes: the dog version is current again, with its own vector
    [(hit, distance)] = store.knn("guild:1", "alice", unit(0.0, 1.0), 1)
    assert hit.id == first and distance == pytest.approx(0.0, abs=1e-6)


def test_autocomplete_search_takes_underscores_and_percent_literally_and_the_shown_id(store: Store) -> None:
    ids = store.add_facts(
        [
            fact("guild:1", "bob", "Bob uses snake_case names", unit(1.0)),
            fact("guild:1", "bob", "Bob owns a snakecase shirt", unit(0.0, 1.0)),
            fact("guild:1", "bob", "Bob gives 100% always", unit(0.0, 0.0, 1.0)),
        ]
    )
    assert [f.text for f in store.search_own_facts("guild:1", "bob", "snake_case")] == [
        "Bob uses snake_case names"
    ]
    assert [f.text for f in store.search_own_facts("guild:1", "bob", "100%")] == ["Bob gives 100% always"]
    assert [f.id for f in store.search_own_facts("guild:1", "bob", f"#{ids[1]}")] == [ids[1]]


def said_in(channel: str, *message_ids: str, parent: str | None = None, private: bool = False) -> dict:
    return {mid: Origin(channel, parent, private) for mid in message_ids}


def test_provenance_is_kept_through_merge_invalidate_duplicate_and_restore(store: Store) -> None:
    staff, general = "c-staff", "c-general"
    lyon = fact("guild:1", "alice", "Alice lives in Lyon", unit(1.0), ["m1"])
    lyon.origins = said_in(staff, "m1")
    [lyon_id] = store.add_facts([lyon])
    assert store.get_fact(lyon_id).audience_keys == {staff}  # type: ignore[union-attr]

    # A merge holds both statements' words: it serves only where both were said.
    near = NewFact(
        "guild:1", "alice", "Alice", "Alice lives near the river", ["m2"], embedding=unit(1.0, 0.1)
    )
    near.origins = said_in(general, "m2")
    [merged] = store.apply_flush(
        [Operation(Decision.MERGE, near, lyon_id, merged_text="Alice lives in Lyon by the river")]
    )
    merged_fact = store.get_fact(merged.fact_id)
    assert merged_fact is not None and merged_fact.audience_keys == {staff, general}
    assert {s.message_id: s.origin.channel_id for s in merged_fact.sources if s.origin} == {
        "m1": staff,
        "m2": general,
    }

    # A repeat somewhere else adds no words and does not widen the audience.
    again = NewFact("guild:1", "alice", "Alice", "Alice lives in Lyon by the river", ["m3"])
    again.origins = said_in("c-random", "m3")
    store.apply_flush([Operation(Decision.DUPLICATE, again, merged.fact_id)])
    repeated = store.get_fact(merged.fact_id)
    assert repeated is not None and repeated.audience_keys == {staff, general}
    assert [s.confirms for s in repeated.sources] == [False, False, True]

    # An invalidating statement holds only its own words; withdrawing it restores the old fact as it was.
    moved = NewFact("guild:1", "alice", "Alice", "Alice lives in Oslo", ["m4"], embedding=unit(1.0, 0.3))
    moved.origins = said_in("t-1", "m4", parent=general)
    [oslo] = store.apply_flush([Operation(Decision.INVALIDATE, moved, merged.fact_id)])
    assert store.get_fact(oslo.fact_id).audience_keys == {general}  # type: ignore[union-attr]  # a public thread
    store.forget_message("m4")
    restored = store.get_fact(merged.fact_id)
    assert restored is not None and restored.status is FactStatus.ACTIVE
    assert restored.audience_keys == {staff, general}


def test_a_flushed_fact_records_where_its_buffered_messages_were_said(store: Store) -> None:
    store.buffer_messages(
        [
            (
                BufferedMessage(
                    "m1",
                    "guild:1",
                    "t9",
                    "alice",
                    "Alice",
                    "I fly",
                    "t",
                    parent_channel_id="c1",
                    private_thread=True,
                ),
                1.0,
            )
        ]
    )
    pilot = NewFact("guild:1", "alice", "Alice", "Alice is a pilot", ["m1"], embedding=unit(1.0))
    [change] = store.apply_flush([Operation(Decision.ADD, pilot)], consumed_message_ids=["m1"])
    [source] = store.get_fact(change.fact_id).sources  # type: ignore[union-attr]
    assert source.origin == Origin("t9", "c1", True)
    assert source.origin.audience_key == "t9"  # a private thread is its own audience


def test_facts_from_before_provenance_serve_no_channel(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite3"
    conn = connect(path)
    for number in (0, 1):
        for statement in MIGRATIONS[number].statements:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    conn.execute(
        "INSERT INTO facts (id, scope, user_id, text, recorded_at, updated_at) "
        "VALUES (1, 'guild:1', 'alice', 'Alice keeps bees', 'x', 'x')"
    )
    conn.execute("INSERT INTO fact_sources (fact_id, message_id) VALUES (1, 'm1')")
    conn.close()
    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    old = store.get_fact(1)
    assert old is not None and old.sources[0].origin is None and old.audience_keys is None
    assert old.sensitive is False
    store.close()


def test_a_fact_id_is_never_handed_out_twice(store: Store) -> None:
    """Ids in old /facts screens, exports and the admin log must never come to name another fact."""
    first = store.add_facts([fact("guild:1", "alice", f"Alice fact {i}", unit(1.0), ["m1"]) for i in (1, 2)])
    assert sorted(r[2] for r in store.forget_message("m1")) == sorted(first)  # she deleted her message
    [alice_next] = store.add_facts([fact("guild:1", "alice", "Alice keeps bees", unit(1.0))])
    assert alice_next > max(first)
    assert store.forget("guild:1", "alice") == 1
    [bob_first] = store.add_facts([fact("guild:1", "bob", "Bob plays chess", unit(1.0))])
    assert bob_first > alice_next


def old_database(path: Path, version: int) -> sqlite3.Connection:
    """A connection to a new SQLite file at schema `version`, for a test to fill before it migrates."""
    conn = connect(path)
    for migration in MIGRATIONS[:version]:
        for statement in migration.statements:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    return conn


def test_a_version_5_database_is_rebuilt_to_never_reuse_a_fact_id(tmp_path: Path) -> None:
    """Version 6 rebuilds `facts` with AUTOINCREMENT: rows, history, sources, vectors, words, events,
    indexes and foreign keys as they were, and the counter past every id the file still names."""
    path = tmp_path / "v5.sqlite3"
    conn = old_database(path, 5)
    conn.execute(
        "INSERT INTO facts (id, scope, user_id, text, status, superseded_by, recorded_at, updated_at, "
        "archived_embedding) VALUES (1, 'guild:1', 'alice', 'Alice has a cat', 'invalidated', 2, 'a', 'a', ?), "
        "(2, 'guild:1', 'alice', 'Alice has a dog', 'active', NULL, 'b', 'b', NULL)",
        (vector_blob(unit(1.0)),),
    )
    conn.execute(
        "INSERT INTO fact_sources (fact_id, message_id, channel_id) VALUES (1, 'm1', 'c1'), (2, 'm2', 'c1')"
    )
    conn.execute(
        "INSERT INTO fact_vectors (fact_id, scope, user_id, embedding) VALUES (2, 'guild:1', 'alice', ?)",
        (vector_blob(unit(0.0, 1.0)),),
    )
    conn.execute(
        "INSERT INTO facts_fts (rowid, text, owner) VALUES (2, 'Alice has a dog', ?)",
        (owner_token("guild:1", "alice"),),
    )
    # Fact 7 was withdrawn (its message deleted) after it had replaced fact 2 for a while: only an event names it.
    conn.execute(
        "INSERT INTO fact_events (fact_id, scope, user_id, kind, detail, at) VALUES "
        "(1, 'guild:1', 'alice', 'invalidated', '{\"superseded_by\": 2}', 'b'), "
        "(2, 'guild:1', 'alice', 'invalidated', '{\"superseded_by\": 7}', 'c'), "
        "(2, 'guild:1', 'alice', 'restored', '{}', 'd')"
    )
    conn.close()

    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    fresh = Store.open(tmp_path / "fresh.sqlite3", embedding_model="fake-embedding", dimensions=DIMS)
    try:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == MIGRATIONS[-1].number
        assert schema_of(store) == schema_of(fresh)  # every index kept, AUTOINCREMENT, foreign keys
        assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        [dog, cat] = sorted(store.export_facts("guild:1", "alice"), key=lambda f: -f.id)
        assert (cat.status, cat.superseded_by, cat.source_message_ids) == (FactStatus.INVALIDATED, 2, ("m1",))
        assert [f.id for f, _ in store.knn("guild:1", "alice", unit(0.0, 1.0), 5)] == [2]
        assert [f.id for f in store.keyword_search("guild:1", "alice", "dog", 5)] == [2]
        assert len(store.events("guild:1", "alice")) == 3
        [bees] = store.add_facts([fact("guild:1", "alice", "Alice keeps bees", unit(1.0))])
        assert bees == 8  # past 7, which an event still names
        assert store.forget("guild:1", "alice", [dog.id]) == 2  # the dog and the cat it replaced
        left = store.conn.execute("SELECT count(*) FROM fact_sources").fetchone()[0]
        assert left == 0  # the foreign keys still cascade
    finally:
        store.close()
        fresh.close()


def schema_of(store: Store) -> list[tuple[str, str]]:
    return store.conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_autoindex%' ORDER BY name"
    ).fetchall()


def test_an_older_database_keeps_every_vector_without_its_owner_beside_it(tmp_path: Path) -> None:
    """Version 11 rebuilds `fact_vectors` as (fact_id, embedding): a person's vectors are found through
    their facts, so each person still finds their own, at the same distance, and nobody else's."""
    path = tmp_path / "v7.sqlite3"
    conn = old_database(path, 7)  # 8 to 10 need the store's own SQL functions to migrate
    people = [(1, "alice", "Alice keeps bees", unit(1.0)), (2, "bob", "Bob keeps goats", unit(0.0, 1.0))]
    for fid, user, text, vector in people:
        conn.execute(
            "INSERT INTO facts (id, scope, user_id, text, status, recorded_at, updated_at) "
            "VALUES (?, 'guild:1', ?, ?, 'active', 'a', 'a')",
            (fid, user, text),
        )
        conn.execute(
            "INSERT INTO fact_vectors (fact_id, scope, user_id, embedding) VALUES (?, 'guild:1', ?, ?)",
            (fid, user, vector_blob(vector)),
        )
        conn.execute(
            "INSERT INTO facts_fts (rowid, text, owner) VALUES (?, ?, ?)",
            (fid, text, owner_token("guild:1", user)),
        )
    conn.close()

    store = Store.open(path, embedding_model="fake-embedding", dimensions=DIMS)
    try:
        columns = [r[1] for r in store.conn.execute("PRAGMA table_info(fact_vectors)").fetchall()]
        assert columns == ["fact_id", "embedding"]
        indexes = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "fact_vectors_owner" not in indexes
        for fid, user, _, vector in people:
            [(found, distance)] = store.knn("guild:1", user, vector, 5)
            assert (found.id, round(distance, 6)) == (fid, 0.0)
        [(_, distance)] = store.knn("guild:1", "alice", unit(0.0, 1.0), 5)
        assert round(distance, 6) == 1.0  # Alice's own fact, 90° away; Bob's is not hers to find
        assert store.forget("guild:1", "alice", [1]) == 1
        assert store.conn.execute("SELECT fact_id FROM fact_vectors").fetchall() == [(2,)]
    finally:
        store.close()


def test_a_transaction_sqlite_ended_itself_tells_its_own_error_and_a_full_disk_says_so(
    tmp_path: Path,
) -> None:
    """On a full disk SQLite rolls the transaction back itself: the error to tell is the full disk, not
    "cannot rollback - no transaction is active", and it says what to do."""
    from bot.storage.sqlite.connection import Transaction, connect, describe_error

    conn = connect(tmp_path / "m.sqlite3")
    with pytest.raises(ValueError, match="the disk filled up"), Transaction(conn):
        conn.execute("ROLLBACK")  # as SQLite does on SQLITE_FULL
        raise ValueError("the disk filled up")
    assert not conn.in_transaction
    conn.close()
    line = describe_error(tmp_path / "m.sqlite3", Exception("database or disk is full"))
    assert "the disk holding database" in line and "is full: free some space" in line
