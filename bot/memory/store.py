"""The only module that speaks SQL: schema, migrations, queries and transactions.

Layout choices (measured in docs/benchmarks.md):
- Vectors of ACTIVE facts live in a plain table indexed on (scope, user_id) and are searched with
  `vec_distance_cosine() ... ORDER BY ... LIMIT`: an exact KNN that only ever reads one person's rows,
  so other people's vectors can neither slow it down nor crowd a person's facts out of the top k.
- `facts_fts` is an FTS5 table with secure-delete on (a delete really removes the tokens from the
  index; contentless-delete tables only add tombstones), plus an `owner` token per (scope, user) so a
  keyword search is confined to one person.
- A superseded fact keeps its row (status + superseded_by) and its vector moves to
  `facts.archived_embedding`, so that a later undo (its successor's only source message deleted)
  can bring it back without asking Gemini again.

`Store` is synchronous; `AsyncStore` runs every call on one dedicated thread, so each method is
one atomic unit of work that never interleaves with another coroutine's statements.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import re
import sqlite3
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from bot.memory.db import DatabaseError, connect
from bot.memory.models import (
    AppliedChange,
    BufferedMessage,
    Decision,
    Fact,
    FactStatus,
    GuildSettings,
    NewFact,
    Operation,
    Origin,
    PendingChannel,
    Source,
    guild_scope,
    iso,
    utcnow,
)
from bot.memory.text import STOPWORDS, fold, stem

MIGRATIONS: list[str] = [
    # 1: the whole first schema.
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE users (
        scope TEXT NOT NULL, user_id TEXT NOT NULL, name TEXT NOT NULL DEFAULT '',
        opted_out INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL,
        PRIMARY KEY (scope, user_id)
    ) WITHOUT ROWID;
    CREATE TABLE facts (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        user_id TEXT NOT NULL,
        text TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'merged', 'invalidated')),
        superseded_by INTEGER REFERENCES facts(id) ON DELETE SET NULL,
        valid_from TEXT,
        recorded_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        retrieval_count INTEGER NOT NULL DEFAULT 0,
        last_retrieved_at TEXT,
        archived_embedding BLOB
    );
    CREATE INDEX facts_owner ON facts (scope, user_id, status);
    CREATE INDEX facts_superseded_by ON facts (superseded_by) WHERE superseded_by IS NOT NULL;
    CREATE TABLE fact_sources (
        fact_id INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
        message_id TEXT NOT NULL,
        PRIMARY KEY (fact_id, message_id)
    ) WITHOUT ROWID;
    CREATE INDEX fact_sources_message ON fact_sources (message_id);
    CREATE TABLE fact_vectors (
        fact_id INTEGER PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE,
        scope TEXT NOT NULL,
        user_id TEXT NOT NULL,
        embedding BLOB NOT NULL
    );
    CREATE INDEX fact_vectors_owner ON fact_vectors (scope, user_id);
    CREATE VIRTUAL TABLE facts_fts USING fts5(
        text, owner, tokenize='unicode61 remove_diacritics 2'
    );
    INSERT INTO facts_fts (facts_fts, rank) VALUES ('secure-delete', 1);
    CREATE TABLE fact_events (
        id INTEGER PRIMARY KEY,
        fact_id INTEGER,
        scope TEXT NOT NULL,
        user_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL DEFAULT '{}',
        actor TEXT NOT NULL DEFAULT 'system',
        at TEXT NOT NULL
    );
    CREATE INDEX fact_events_fact ON fact_events (fact_id);
    CREATE INDEX fact_events_owner ON fact_events (scope, user_id);
    CREATE TABLE pending_messages (
        seq INTEGER PRIMARY KEY,
        message_id TEXT NOT NULL UNIQUE,
        scope TEXT NOT NULL,
        channel_id TEXT NOT NULL,
        author_id TEXT NOT NULL,
        author_name TEXT NOT NULL,
        is_bot INTEGER NOT NULL DEFAULT 0,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL,
        captured_at REAL NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX pending_channel ON pending_messages (channel_id, seq);
    CREATE INDEX pending_author ON pending_messages (scope, author_id);
    CREATE TABLE guild_settings (
        guild_id TEXT PRIMARY KEY,
        memory_enabled INTEGER NOT NULL DEFAULT 1,
        log_channel_id TEXT,
        members_see_others INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE ignored_channels (
        guild_id TEXT NOT NULL, channel_id TEXT NOT NULL, PRIMARY KEY (guild_id, channel_id)
    ) WITHOUT ROWID;
    CREATE TABLE app_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE stale_vectors (fact_id INTEGER PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE);
    """,
    # 2: a thread's messages remember their parent channel, so ignoring the channel drops them too;
    # the bot's buffered replies remember the message they answer, so deleting it drops them too;
    # a source that only repeated a known fact (DUPLICATE) is marked, as it added no words to it.
    """
    ALTER TABLE pending_messages ADD COLUMN parent_channel_id TEXT;
    CREATE INDEX pending_parent ON pending_messages (parent_channel_id) WHERE parent_channel_id IS NOT NULL;
    ALTER TABLE pending_messages ADD COLUMN reply_to TEXT;
    CREATE INDEX pending_reply_to ON pending_messages (reply_to) WHERE reply_to IS NOT NULL;
    ALTER TABLE fact_sources ADD COLUMN confirms INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: provenance and consent. Each source records the channel (thread, parent, private or not) it was
    # said in, the audience its facts may serve; sources from before stay NULL, which recall treats as
    # the most private place. Facts kept only because their owner asked are marked sensitive.
    """
    ALTER TABLE pending_messages ADD COLUMN private_thread INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE fact_sources ADD COLUMN channel_id TEXT;
    ALTER TABLE fact_sources ADD COLUMN parent_channel_id TEXT;
    ALTER TABLE fact_sources ADD COLUMN private_thread INTEGER NOT NULL DEFAULT 0;
    UPDATE fact_sources SET channel_id = p.channel_id, parent_channel_id = p.parent_channel_id
        FROM pending_messages AS p WHERE p.message_id = fact_sources.message_id;
    ALTER TABLE facts ADD COLUMN sensitive INTEGER NOT NULL DEFAULT 0;
    """,
]

_FACT_COLUMNS = (
    "f.id, f.scope, f.user_id, f.text, f.status, f.superseded_by, f.valid_from, f.recorded_at, "
    "f.updated_at, f.retrieval_count, f.sensitive"
)
_WORD = re.compile(r"\w+", re.UNICODE)
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')


class EmbeddingMismatchError(DatabaseError):
    """The database holds vectors of another model or dimension than the one configured."""


def vector_blob(vector: Sequence[float]) -> bytes:
    """float32 little-endian bytes, the layout sqlite-vec reads."""
    return array("f", vector).tobytes()


def owner_token(scope: str, user_id: str) -> str:
    """One FTS token per (scope, user): confines keyword search to one person whatever the ids contain."""
    return "o" + hashlib.blake2b(f"{scope}\x00{user_id}".encode(), digest_size=10).hexdigest()


def keyword_query(text: str, *, max_terms: int = 12, ignore: Iterable[str] = ()) -> str | None:
    """An FTS5 OR-query of the stems of the informative words of `text`, each a quoted prefix, or None.

    `ignore`: words that say nothing within the searched facts (the person's own name, in all of them).
    """
    skip = {fold(w) for w in ignore}
    terms: list[str] = []
    for word in _WORD.findall(text.lower()):
        if len(word) < 3 or word in STOPWORDS or (word.isdigit() and len(word) > 8):
            continue
        folded = fold(word)
        if folded in skip or stem(folded) in terms:
            continue
        terms.append(stem(folded))
        if len(terms) >= max_terms:
            break
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"*' for t in terms)


def keyword_terms(query: str) -> list[str]:
    """The words of a `keyword_query` result, unquoted and folded."""
    return [fold(t.replace('""', '"')) for t in _QUOTED.findall(query)]


def bm25_order(texts: Sequence[str], terms: Sequence[str], total: int) -> list[int]:
    """Indexes of `texts` by Okapi BM25 (k1 1.2, b 0.75) over a corpus of `total` documents, best first.

    The corpus is one person's facts: document frequencies come from the matched texts (a term's other
    occurrences in that person's facts would have matched too), so nobody else's facts are read.
    """
    tokens = [_WORD.findall(fold(t)) for t in texts]
    average = sum(len(t) for t in tokens) / len(tokens) or 1.0
    df = {w: sum(any(x.startswith(w) for x in t) for t in tokens) for w in terms}
    scores = []
    for i, toks in enumerate(tokens):
        score = 0.0
        for w in terms:
            tf = sum(t.startswith(w) for t in toks)
            if tf:
                idf = math.log(1 + (total - df[w] + 0.5) / (df[w] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(toks) / average))
        scores.append((-score, i))
    scores.sort()
    return [i for _, i in scores]


def _fact(row: Sequence[Any], sources: tuple[Source, ...] = ()) -> Fact:
    return Fact(
        id=row[0],
        scope=row[1],
        user_id=row[2],
        text=row[3],
        status=FactStatus(row[4]),
        superseded_by=row[5],
        valid_from=row[6],
        recorded_at=row[7],
        updated_at=row[8],
        retrieval_count=row[9],
        sources=sources,
        sensitive=bool(row[10]),
    )


class Store:
    """Synchronous SQLite + sqlite-vec store. Use `AsyncStore` from async code."""

    def __init__(self, conn: sqlite3.Connection, *, dimensions: int) -> None:
        self.conn = conn
        self.dimensions = dimensions

    # ---- opening -------------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        embedding_model: str,
        dimensions: int,
        allow_model_change: bool = False,
    ) -> Store:
        """Open (creating and migrating as needed) and check the embedding model recorded in the file.

        A different model or dimension raises EmbeddingMismatchError naming `python -m bot reembed`,
        because mixing vectors of two models silently ruins every search.
        """
        conn = connect(path)
        try:
            store = cls(conn, dimensions=dimensions)
            store.migrate()
            store._check_embedding(embedding_model, dimensions, allow_model_change)
        except BaseException:
            conn.close()
            raise
        return store

    def migrate(self) -> int:
        """Apply numbered migrations past PRAGMA user_version; returns the resulting version."""
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise DatabaseError(
                f"the database schema is version {version}, newer than this bot knows ({len(MIGRATIONS)}); "
                "upgrade the bot"
            )
        for number in range(version + 1, len(MIGRATIONS) + 1):
            with self._tx():
                for statement in _split_sql(MIGRATIONS[number - 1]):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number}")
        return len(MIGRATIONS)

    def _check_embedding(self, model: str, dimensions: int, allow_change: bool) -> None:
        meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        if "embedding_model" not in meta:
            with self._tx():
                self._set_meta("embedding_model", model)
                self._set_meta("embedding_dimensions", str(dimensions))
            return
        if allow_change:
            return
        if "reembed_target" in meta:
            raise EmbeddingMismatchError(
                f"a re-embedding to {meta['reembed_target']} was interrupted; finish it with `python -m bot reembed`"
            )
        stored = (meta["embedding_model"], int(meta["embedding_dimensions"]))
        if stored != (model, dimensions):
            raise EmbeddingMismatchError(
                f"the database holds vectors of {stored[0]} at {stored[1]} dimensions but EMBEDDING_MODEL/"
                f"EMBEDDING_DIMENSIONS say {model} at {dimensions}; run `python -m bot reembed` to re-embed "
                "every fact with the new model, or set the old values back"
            )

    def embedding_meta(self) -> tuple[str, int]:
        meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        return meta["embedding_model"], int(meta["embedding_dimensions"])

    def reembed_unfinished(self) -> bool:
        """Whether a re-embedding was started and not finished."""
        return self.conn.execute("SELECT 1 FROM meta WHERE key = 'reembed_target'").fetchone() is not None

    def _set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def close(self) -> None:
        self.conn.close()

    def _tx(self) -> _Transaction:
        return _Transaction(self.conn)

    def health(self) -> dict[str, Any]:
        """What `check` reports: versions, schema, FTS5 and the embedding recorded.

        `PRAGMA quick_check` first: a damaged file opens and answers simple queries, then fails later.
        """
        problems = [row[0] for row in self.conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise DatabaseError(f"the database is damaged ({problems[0]}); restore it from a backup")
        vec_version, sqlite_version = self.conn.execute("SELECT vec_version(), sqlite_version()").fetchone()
        self.conn.execute("SELECT count(*) FROM facts_fts WHERE facts_fts MATCH 'probe'").fetchone()
        model, dims = self.embedding_meta()
        return {
            "sqlite_version": sqlite_version,
            "sqlite_vec_version": vec_version,
            "schema_version": self.conn.execute("PRAGMA user_version").fetchone()[0],
            "fts5": True,
            "embedding_model": model,
            "embedding_dimensions": dims,
        }

    # ---- users, opt-out and guild settings ---------------------------------------------------------------

    def _upsert_user(self, scope: str, user_id: str, name: str) -> None:
        self.conn.execute(
            "INSERT INTO users (scope, user_id, name, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (scope, user_id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at "
            "WHERE excluded.name != ''",
            (scope, user_id, name, iso(utcnow())),
        )

    def set_opt_out(self, scope: str, user_id: str, opted_out: bool) -> int:
        """Record the choice; opting out also drops that person's not-yet-extracted messages here."""
        with self._tx():
            self.conn.execute(
                "INSERT INTO users (scope, user_id, opted_out, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (scope, user_id) DO UPDATE SET opted_out = excluded.opted_out, "
                "updated_at = excluded.updated_at",
                (scope, user_id, int(opted_out), iso(utcnow())),
            )
            dropped = 0
            if opted_out:
                dropped = self._drop_pending_of(scope, user_id)
                self._event(None, scope, user_id, "opted_out", {"pending_dropped": dropped}, actor=user_id)
            else:
                self._event(None, scope, user_id, "opted_in", {}, actor=user_id)
        if opted_out:
            self.checkpoint()  # the dropped messages' text must not linger in the WAL
        return dropped

    def _drop_pending_of(self, scope: str, user_id: str) -> int:
        """Drop a person's buffered messages, and every buffered turn of the bot in the scope.

        The bot's replies are only context for extraction, but any of them may repeat what the person
        said or what was just forgotten, so they go too. Returns how many of the person's own messages
        were dropped.
        """
        self._drop_bot_turns(scope)
        return self.conn.execute(
            "DELETE FROM pending_messages WHERE scope = ? AND author_id = ? AND is_bot = 0", (scope, user_id)
        ).rowcount

    def _drop_bot_turns(self, scope: str) -> None:
        self.conn.execute("DELETE FROM pending_messages WHERE scope = ? AND is_bot = 1", (scope,))

    def opted_out(self) -> set[tuple[str, str]]:
        return {
            (r[0], r[1])
            for r in self.conn.execute("SELECT scope, user_id FROM users WHERE opted_out = 1").fetchall()
        }

    def user_names(self, scope: str, user_ids: Iterable[str]) -> dict[str, str]:
        ids = list(user_ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            f"SELECT user_id, name FROM users WHERE scope = ? AND user_id IN ({marks})", (scope, *ids)
        ).fetchall()
        return {r[0]: r[1] for r in rows}

    def guild_settings(self) -> dict[str, GuildSettings]:
        out: dict[str, GuildSettings] = {}
        for gid, enabled, log_channel, see_others in self.conn.execute(
            "SELECT guild_id, memory_enabled, log_channel_id, members_see_others FROM guild_settings"
        ):
            out[gid] = GuildSettings(gid, bool(enabled), log_channel, bool(see_others))
        for gid, cid in self.conn.execute("SELECT guild_id, channel_id FROM ignored_channels"):
            out.setdefault(gid, GuildSettings(gid)).ignored_channel_ids.add(cid)
        return out

    def update_guild_settings(self, guild_id: str, **changes: Any) -> GuildSettings:
        """Set memory_enabled, log_channel_id or members_see_others for a guild."""
        allowed = {"memory_enabled", "log_channel_id", "members_see_others"}
        if not set(changes) <= allowed:
            raise ValueError(f"unknown guild settings: {sorted(set(changes) - allowed)}")
        with self._tx():
            self.conn.execute("INSERT OR IGNORE INTO guild_settings (guild_id) VALUES (?)", (guild_id,))
            for key, value in changes.items():
                stored = int(value) if isinstance(value, bool) else value
                self.conn.execute(
                    f"UPDATE guild_settings SET {key} = ? WHERE guild_id = ?", (stored, guild_id)
                )
            if changes.get("memory_enabled") is False:  # switched off: nothing buffered is read later
                self.conn.execute("DELETE FROM pending_messages WHERE scope = ?", (guild_scope(guild_id),))
        if changes.get("memory_enabled") is False:
            self.checkpoint()
        return self.guild_settings().get(guild_id, GuildSettings(guild_id))

    def set_channel_ignored(self, guild_id: str, channel_id: str, ignored: bool) -> None:
        with self._tx():
            if ignored:
                self.conn.execute(
                    "INSERT OR IGNORE INTO ignored_channels VALUES (?, ?)", (guild_id, channel_id)
                )
                self.conn.execute(
                    "DELETE FROM pending_messages WHERE channel_id = ? OR parent_channel_id = ?",
                    (channel_id, channel_id),
                )
            else:
                self.conn.execute(
                    "DELETE FROM ignored_channels WHERE guild_id = ? AND channel_id = ?",
                    (guild_id, channel_id),
                )
        if ignored:
            self.checkpoint()

    def get_state(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM app_state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_state(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO app_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # ---- the durable message buffer ----------------------------------------------------------------------

    def buffer_messages(self, messages: Sequence[tuple[BufferedMessage, float]]) -> int:
        """Append (message, captured_at) pairs in order; a message id seen before is ignored."""
        with self._tx():
            cur = self.conn.executemany(
                "INSERT OR IGNORE INTO pending_messages (message_id, scope, channel_id, author_id, author_name, "
                "is_bot, content, created_at, captured_at, parent_channel_id, reply_to, private_thread) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        m.message_id,
                        m.scope,
                        m.channel_id,
                        m.author_id,
                        m.author_name,
                        int(m.is_bot),
                        m.content,
                        m.created_at,
                        at,
                        m.parent_channel_id,
                        m.reply_to,
                        int(m.private_thread),
                    )
                    for m, at in messages
                ],
            )
        return cur.rowcount

    def update_pending_message(self, message_id: str, content: str) -> bool:
        with self._tx():
            return (
                self.conn.execute(
                    "UPDATE pending_messages SET content = ? WHERE message_id = ?", (content, message_id)
                ).rowcount
                > 0
            )

    def delete_pending_messages(self, message_ids: Sequence[str]) -> int:
        with self._tx():
            deleted = sum(
                self.conn.execute("DELETE FROM pending_messages WHERE message_id = ?", (mid,)).rowcount
                for mid in message_ids
            )
        if deleted:
            self.checkpoint()  # a deleted message's text must not linger in the WAL
        return deleted

    def drop_lone_bot_turns(self) -> int:
        """Drop the bot's buffered turns in channels with no person's message left to give them context.

        They are only ever read beside people's messages, and a restart would otherwise keep them forever.
        """
        with self._tx():
            return self.conn.execute(
                "DELETE FROM pending_messages WHERE is_bot = 1 AND channel_id NOT IN "
                "(SELECT channel_id FROM pending_messages WHERE is_bot = 0)"
            ).rowcount

    def pending_channels(self) -> list[PendingChannel]:
        rows = self.conn.execute(
            "SELECT channel_id, min(scope), count(*), min(captured_at), max(captured_at) FROM pending_messages "
            "WHERE is_bot = 0 GROUP BY channel_id"
        ).fetchall()
        return [PendingChannel(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def pending_messages(self, channel_id: str, limit: int) -> list[BufferedMessage]:
        """The oldest `limit` buffered messages of a channel, in arrival order."""
        rows = self.conn.execute(
            "SELECT message_id, scope, channel_id, author_id, author_name, content, created_at, is_bot, attempts, "
            "parent_channel_id, reply_to, private_thread FROM pending_messages WHERE channel_id = ? "
            "ORDER BY seq LIMIT ?",
            (channel_id, limit),
        ).fetchall()
        return [
            BufferedMessage(
                r[0], r[1], r[2], r[3], r[4], r[5], r[6], bool(r[7]), r[8], r[9], r[10], bool(r[11])
            )
            for r in rows
        ]

    def count_pending(self, scope: str | None = None) -> int:
        if scope is None:
            return self.conn.execute("SELECT count(*) FROM pending_messages WHERE is_bot = 0").fetchone()[0]
        return self.conn.execute(
            "SELECT count(*) FROM pending_messages WHERE is_bot = 0 AND scope = ?", (scope,)
        ).fetchone()[0]

    def mark_attempt(self, message_ids: Sequence[str]) -> None:
        with self._tx():
            self.conn.executemany(
                "UPDATE pending_messages SET attempts = attempts + 1 WHERE message_id = ?",
                [(m,) for m in message_ids],
            )

    # ---- searching facts ---------------------------------------------------------------------------------

    def knn(
        self, scope: str, user_id: str, vector: Sequence[float], k: int, max_distance: float | None = None
    ) -> list[tuple[Fact, float]]:
        """Exact cosine KNN over one person's active facts, nearest first."""
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS}, n.d FROM ("
            "  SELECT fact_id, vec_distance_cosine(embedding, ?) AS d FROM fact_vectors"
            "  WHERE scope = ? AND user_id = ? ORDER BY d LIMIT ?"
            ") AS n JOIN facts AS f ON f.id = n.fact_id ORDER BY n.d, f.id",
            (vector_blob(vector), scope, user_id, k),
        ).fetchall()
        sources = self._sources([r[0] for r in rows])
        return [
            (_fact(r, sources.get(r[0], ())), r[11])
            for r in rows
            if max_distance is None or r[11] <= max_distance
        ]

    def keyword_search(
        self, scope: str, user_id: str, text: str, k: int, *, ignore: Iterable[str] = ()
    ) -> list[Fact]:
        """Active facts of one person matching informative words of `text`, best BM25 first.

        FTS5's own `rank` looks up every query term's document count in the whole index, so its cost grows
        with everyone's facts (9.7 ms p99 at a million). Matching without `rank` touches only the person's
        rows; BM25 over the person's own active facts then orders them (3.0 ms p99 at 1M facts, bench/recall_scale.py).
        """
        terms = keyword_query(text, ignore=ignore)
        if terms is None:
            return []
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM facts AS f WHERE f.id IN ("
            "  SELECT rowid FROM facts_fts WHERE facts_fts MATCH ?"
            ") AND f.status = 'active'",
            (f'owner:"{owner_token(scope, user_id)}" AND text:({terms})',),
        ).fetchall()
        if not rows:
            return []
        rows.sort(key=lambda r: r[0])  # equal scores: oldest fact first, whatever order SQLite chose
        total = self.conn.execute(
            "SELECT count(*) FROM fact_vectors WHERE scope = ? AND user_id = ?", (scope, user_id)
        ).fetchone()[0]
        ranked = [
            rows[i] for i in bm25_order([r[3] for r in rows], keyword_terms(terms), max(total, len(rows)))
        ]
        sources = self._sources([r[0] for r in ranked[:k]])
        return [_fact(r, sources.get(r[0], ())) for r in ranked[:k]]

    def facts_by_text(
        self, scope: str, user_id: str, texts: Iterable[str], *, all_statuses: bool = False
    ) -> dict[str, Fact]:
        """Facts of one person whose text equals one of `texts` exactly (case-folded).

        Active ones by default (someone saying an old fact again makes it news); `all_statuses` for an
        import, where a line matching a superseded fact is history, not news.
        """
        wanted = {t.casefold() for t in texts}
        status_filter = "" if all_statuses else "AND status = 'active'"
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM facts AS f WHERE scope = ? AND user_id = ? {status_filter}",
            (scope, user_id),
        ).fetchall()
        return {r[3].casefold(): _fact(r) for r in rows if r[3].casefold() in wanted}

    def record_retrievals(self, fact_ids: Sequence[int]) -> None:
        with self._tx():
            self.conn.executemany(
                "UPDATE facts SET retrieval_count = retrieval_count + 1, last_retrieved_at = ? WHERE id = ?",
                [(iso(utcnow()), fid) for fid in fact_ids],
            )

    # ---- listing -----------------------------------------------------------------------------------------

    def list_facts(
        self,
        scope: str,
        user_id: str,
        *,
        all_statuses: bool = False,
        limit: int = 1000,
        offset: int = 0,
    ) -> list[Fact]:
        """A person's facts in one scope, newest first, with their source message ids."""
        status_filter = "" if all_statuses else "AND f.status = 'active'"
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM facts AS f WHERE f.scope = ? AND f.user_id = ? {status_filter} "
            "ORDER BY f.recorded_at DESC, f.id DESC LIMIT ? OFFSET ?",
            (scope, user_id, limit, offset),
        ).fetchall()
        sources = self._sources([r[0] for r in rows])
        return [_fact(r, sources.get(r[0], ())) for r in rows]

    def count_facts(self, scope: str, user_id: str, *, all_statuses: bool = False) -> int:
        status_filter = "" if all_statuses else "AND status = 'active'"
        return self.conn.execute(
            f"SELECT count(*) FROM facts WHERE scope = ? AND user_id = ? {status_filter}", (scope, user_id)
        ).fetchone()[0]

    def get_fact(self, fact_id: int) -> Fact | None:
        row = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM facts AS f WHERE f.id = ?", (fact_id,)
        ).fetchone()
        return _fact(row, self._sources([fact_id]).get(fact_id, ())) if row else None

    def export_facts(self, scope: str, user_id: str | None = None) -> list[Fact]:
        """Every fact in a scope (of one person, or everyone's), all statuses, oldest first, with sources."""
        who, params = ("AND f.user_id = ?", (scope, user_id)) if user_id is not None else ("", (scope,))
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM facts AS f WHERE f.scope = ? {who} ORDER BY f.id", params
        ).fetchall()
        sources = self._sources([r[0] for r in rows])
        return [_fact(r, sources.get(r[0], ())) for r in rows]

    def correct_fact(
        self, scope: str, user_id: str, fact_id: int, text: str, embedding: Sequence[float], sensitive: bool
    ) -> Fact | None:
        """Replace an active fact's text in place (vector, keyword index, flag); the old text leaves no
        trace: the fact's events, which quote it, are replaced by one 'corrected' event without text.

        Its sources, and so where it was learned, stay. None when it is not this person's active fact.
        """
        if len(embedding) != self.dimensions:
            raise ValueError(f"embedding has {len(embedding)} dimensions, expected {self.dimensions}")
        with self._tx():
            owner = self._active_owner(fact_id)
            if owner is None or owner[:2] != (scope, user_id):
                return None
            self.conn.execute(
                "UPDATE facts SET text = ?, sensitive = ?, updated_at = ? WHERE id = ?",
                (text, int(sensitive), iso(utcnow()), fact_id),
            )
            self.conn.execute(
                "UPDATE fact_vectors SET embedding = ? WHERE fact_id = ?", (vector_blob(embedding), fact_id)
            )
            self.conn.execute("DELETE FROM stale_vectors WHERE fact_id = ?", (fact_id,))
            self.conn.execute("DELETE FROM facts_fts WHERE rowid = ?", (fact_id,))
            self.conn.execute(
                "INSERT INTO facts_fts (rowid, text, owner) VALUES (?, ?, ?)",
                (fact_id, text, owner_token(scope, user_id)),
            )
            self.conn.execute("DELETE FROM fact_events WHERE fact_id = ?", (fact_id,))
            self._event(fact_id, scope, user_id, "corrected", {}, actor=user_id)
        self.checkpoint()
        return self.get_fact(fact_id)

    def search_own_facts(self, scope: str, user_id: str, prefix: str, limit: int = 25) -> list[Fact]:
        """Active facts whose text or id contains `prefix`, for autocomplete ("#12" as shown finds fact 12)."""
        typed = prefix.strip()
        typed = typed[1:] if typed.startswith("#") and typed[1:].isdigit() else typed
        needle = "%" + typed.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM facts AS f WHERE scope = ? AND user_id = ? AND status = 'active' "
            "AND (text LIKE ? ESCAPE '\\' OR CAST(id AS TEXT) LIKE ? ESCAPE '\\') "
            "ORDER BY recorded_at DESC, id DESC LIMIT ?",
            (scope, user_id, needle, needle, limit),
        ).fetchall()
        return [_fact(r) for r in rows]

    def _sources(self, fact_ids: Sequence[int]) -> dict[int, tuple[Source, ...]]:
        """Each fact's source messages with where they were said, in message order."""
        out: dict[int, list[Source]] = {}
        for start in range(0, len(fact_ids), 500):
            chunk = fact_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for fid, mid, confirms, channel, parent, private in self.conn.execute(
                "SELECT fact_id, message_id, confirms, channel_id, parent_channel_id, private_thread "
                f"FROM fact_sources WHERE fact_id IN ({marks}) ORDER BY message_id",
                chunk,
            ):
                origin = None if channel is None else Origin(channel, parent, bool(private))
                out.setdefault(fid, []).append(Source(mid, origin, bool(confirms)))
        return {k: tuple(v) for k, v in out.items()}

    def _source_ids(self, fact_ids: Sequence[int]) -> dict[int, tuple[str, ...]]:
        return {fid: tuple(s.message_id for s in sources) for fid, sources in self._sources(fact_ids).items()}

    def events(self, scope: str, user_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        params: tuple[Any, ...] = (scope,) if user_id is None else (scope, user_id)
        where = "scope = ?" if user_id is None else "scope = ? AND user_id = ?"
        rows = self.conn.execute(
            f"SELECT id, fact_id, user_id, kind, detail, actor, at FROM fact_events WHERE {where} "
            "ORDER BY id DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [
            {
                "id": r[0],
                "fact_id": r[1],
                "user_id": r[2],
                "kind": r[3],
                "detail": json.loads(r[4]),
                "actor": r[5],
                "at": r[6],
            }
            for r in rows
        ]

    # ---- writing facts -----------------------------------------------------------------------------------

    def _event(
        self,
        fact_id: int | None,
        scope: str,
        user_id: str,
        kind: str,
        detail: dict[str, Any],
        actor: str = "system",
    ) -> None:
        self.conn.execute(
            "INSERT INTO fact_events (fact_id, scope, user_id, kind, detail, actor, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (fact_id, scope, user_id, kind, json.dumps(detail, ensure_ascii=False), actor, iso(utcnow())),
        )

    def _insert_fact(self, fact: NewFact, text: str, embedding: Sequence[float], now: str) -> int:
        if len(embedding) != self.dimensions:
            raise ValueError(f"embedding has {len(embedding)} dimensions, expected {self.dimensions}")
        cur = self.conn.execute(
            "INSERT INTO facts (scope, user_id, text, valid_from, recorded_at, updated_at, sensitive) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (fact.scope, fact.user_id, text, fact.valid_from, now, now, int(fact.sensitive)),
        )
        fact_id = int(cur.lastrowid or 0)
        self.conn.execute(
            "INSERT INTO fact_vectors (fact_id, scope, user_id, embedding) VALUES (?, ?, ?, ?)",
            (fact_id, fact.scope, fact.user_id, vector_blob(embedding)),
        )
        self.conn.execute(
            "INSERT INTO facts_fts (rowid, text, owner) VALUES (?, ?, ?)",
            (fact_id, text, owner_token(fact.scope, fact.user_id)),
        )
        self._add_sources(fact_id, fact, confirms=False)
        return fact_id

    def _add_sources(self, fact_id: int, fact: NewFact, *, confirms: bool) -> None:
        """Record which messages a fact comes from and where each was said; `confirms`: they only repeated
        it, adding no words. Where comes from `fact.origins`, else from the buffered message itself."""
        for mid in fact.source_message_ids:
            origin = fact.origins.get(mid) or self._buffered_origin(mid)
            self.conn.execute(
                "INSERT OR IGNORE INTO fact_sources "
                "(fact_id, message_id, confirms, channel_id, parent_channel_id, private_thread) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    fact_id,
                    mid,
                    int(confirms),
                    origin and origin.channel_id,
                    origin and origin.parent_channel_id,
                    int(bool(origin and origin.private_thread)),
                ),
            )

    def _buffered_origin(self, message_id: str) -> Origin | None:
        row = self.conn.execute(
            "SELECT channel_id, parent_channel_id, private_thread FROM pending_messages WHERE message_id = ?",
            (message_id,),
        ).fetchone()
        return Origin(row[0], row[1], bool(row[2])) if row else None

    def _inherit_sources(self, fact_id: int, from_id: int) -> None:
        """A merged fact holds the words of the fact it replaces: it keeps that fact's sources, as they were."""
        self.conn.execute(
            "INSERT OR IGNORE INTO fact_sources "
            "(fact_id, message_id, confirms, channel_id, parent_channel_id, private_thread) "
            "SELECT ?, message_id, confirms, channel_id, parent_channel_id, private_thread "
            "FROM fact_sources WHERE fact_id = ?",
            (fact_id, from_id),
        )

    def _supersede(self, old_id: int, new_id: int, status: FactStatus, now: str) -> None:
        """Take an active fact out of search, keeping its row and its vector (archived) for history."""
        self.conn.execute(
            "UPDATE facts SET status = ?, superseded_by = ?, updated_at = ?, "
            "archived_embedding = (SELECT embedding FROM fact_vectors WHERE fact_id = ?) WHERE id = ?",
            (status.value, new_id, now, old_id, old_id),
        )
        self.conn.execute("DELETE FROM fact_vectors WHERE fact_id = ?", (old_id,))
        self.conn.execute("DELETE FROM facts_fts WHERE rowid = ?", (old_id,))

    def _merged_into(self, fact_id: int) -> list[int]:
        """The facts this one was merged into, one after the other: its words live on in each of them."""
        chain: list[int] = []
        while (
            (
                row := self.conn.execute(
                    "SELECT superseded_by FROM facts WHERE id = ? AND status = 'merged'", (fact_id,)
                ).fetchone()
            )
            is not None
            and row[0] is not None
            and row[0] not in chain
        ):
            fact_id = row[0]
            chain.append(fact_id)
        return chain

    def _active_owner(self, fact_id: int) -> tuple[str, str, str, bool] | None:
        row = self.conn.execute(
            "SELECT scope, user_id, text, sensitive FROM facts WHERE id = ? AND status = 'active'", (fact_id,)
        ).fetchone()
        return (row[0], row[1], row[2], bool(row[3])) if row else None

    def apply_flush(
        self,
        operations: Sequence[Operation],
        *,
        consumed_message_ids: Sequence[str] = (),
        user_names: dict[tuple[str, str], str] | None = None,
        refreshed: Sequence[tuple[int, Sequence[float]]] = (),
        actor: str = "system",
        read_texts: dict[str, str] | None = None,
    ) -> list[AppliedChange]:
        """Apply a flush's decisions, their events and the removal of its buffered messages in ONE transaction.

        An operation whose target is not an active fact of the same person (forgotten meanwhile, or an id
        the model made up) is applied as ADD. Facts of people who opted out, and facts whose every source
        message left the buffer while the flush ran, are dropped. A message edited while the flush ran
        (its text differs from `read_texts`) stays buffered with its new text, and facts drawn from it are
        dropped: they were read from words that are no longer there. `refreshed` carries
        fresh vectors for facts listed by `stale_facts()`.
        """
        now = iso(utcnow())
        applied: list[AppliedChange] = []
        with self._tx():
            self._refresh_vectors(refreshed)
            opted_out = self.opted_out()
            # Messages deleted, forgotten or dropped by an opt-out while Gemini was thinking must teach nothing.
            current = self._buffered_texts({*consumed_message_ids, *(read_texts or {})})
            withdrawn = {mid for mid in consumed_message_ids if current[mid] is None}
            edited = {mid for mid, text in (read_texts or {}).items() if current[mid] not in (None, text)}
            for (scope, user_id), name in (user_names or {}).items():
                self._upsert_user(scope, user_id, name)
            for op in operations:
                fact = op.fact
                if (fact.scope, fact.user_id) in opted_out:
                    continue
                if withdrawn and fact.source_message_ids and set(fact.source_message_ids) <= withdrawn:
                    continue
                if edited & set(fact.source_message_ids):
                    continue
                if withdrawn & set(fact.source_message_ids):  # keep no trace of a message deleted meanwhile
                    fact = replace(
                        fact, source_message_ids=[m for m in fact.source_message_ids if m not in withdrawn]
                    )
                decision = op.decision
                target_id = op.target_id
                if decision is Decision.DUPLICATE and target_id is not None:
                    # Another decision of this flush may have merged the target already: repeat its successor.
                    merged = self._merged_into(target_id)
                    target_id = merged[-1] if merged else target_id
                    op = replace(op, target_id=target_id)
                target = self._active_owner(target_id) if target_id is not None else None
                if decision in (Decision.MERGE, Decision.INVALIDATE, Decision.DUPLICATE) and (
                    target is None or target[:2] != (fact.scope, fact.user_id)
                ):
                    decision = Decision.ADD
                if decision is Decision.MERGE and not op.merged_text:
                    decision = Decision.KEEP
                fact_id: int | None
                if decision in (Decision.ADD, Decision.KEEP):
                    assert fact.embedding is not None
                    fact_id = self._insert_fact(fact, fact.text, fact.embedding, now)
                    self._event(
                        fact_id,
                        fact.scope,
                        fact.user_id,
                        "added",
                        {"text": fact.text, "decision": decision.value, "reason": op.reason},
                        actor,
                    )
                    applied.append(AppliedChange(decision, fact.scope, fact.user_id, fact.user_name, fact_id))
                elif decision is Decision.DUPLICATE:
                    assert op.target_id is not None
                    fact_id = op.target_id
                    self._add_sources(fact_id, fact, confirms=True)
                    self.conn.execute("UPDATE facts SET updated_at = ? WHERE id = ?", (now, fact_id))
                    self._event(
                        fact_id,
                        fact.scope,
                        fact.user_id,
                        "duplicate",
                        {"text": fact.text, "reason": op.reason},
                        actor,
                    )
                    applied.append(
                        AppliedChange(decision, fact.scope, fact.user_id, fact.user_name, fact_id, fact_id)
                    )
                else:
                    assert op.target_id is not None and target is not None
                    assert fact.embedding is not None
                    text, vector = fact.text, fact.embedding
                    if decision is Decision.MERGE:
                        assert op.merged_text is not None
                        text = op.merged_text
                        # The merged text holds both facts' words: sensitive if either was.
                        fact = replace(fact, sensitive=fact.sensitive or target[3])
                    fact_id = self._insert_fact(fact, text, vector, now)
                    if decision is Decision.MERGE:
                        self._inherit_sources(fact_id, op.target_id)
                        # Searchable at once with the new fact's vector; the merged text's own vector
                        # rides along with the next flush's embedding request (see refresh below).
                        self.conn.execute("INSERT INTO stale_vectors (fact_id) VALUES (?)", (fact_id,))
                    status = FactStatus.MERGED if decision is Decision.MERGE else FactStatus.INVALIDATED
                    self._supersede(op.target_id, fact_id, status, now)
                    self._event(
                        fact_id,
                        fact.scope,
                        fact.user_id,
                        "added",
                        {
                            "text": text,
                            "decision": decision.value,
                            "replaces": op.target_id,
                            "reason": op.reason,
                        },
                        actor,
                    )
                    self._event(
                        op.target_id,
                        fact.scope,
                        fact.user_id,
                        status.value,
                        {"text": target[2], "superseded_by": fact_id, "reason": op.reason},
                        actor,
                    )
                    applied.append(
                        AppliedChange(
                            decision, fact.scope, fact.user_id, fact.user_name, fact_id, op.target_id
                        )
                    )
            for mid in consumed_message_ids:
                if mid not in edited:
                    self.conn.execute("DELETE FROM pending_messages WHERE message_id = ?", (mid,))
        return applied

    def _buffered_texts(self, message_ids: Iterable[str]) -> dict[str, str | None]:
        """Each message's buffered text as it is now; None for one that left the buffer."""
        texts: dict[str, str | None] = {}
        for mid in message_ids:
            row = self.conn.execute(
                "SELECT content FROM pending_messages WHERE message_id = ?", (mid,)
            ).fetchone()
            texts[mid] = row[0] if row is not None else None
        return texts

    def stale_facts(self, limit: int = 50) -> list[tuple[int, str]]:
        """Merged facts still searched with a stand-in vector, oldest first, with their texts."""
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT f.id, f.text FROM stale_vectors AS s JOIN facts AS f ON f.id = s.fact_id "
                "ORDER BY s.fact_id LIMIT ?",
                (limit,),
            ).fetchall()
        ]

    def _refresh_vectors(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        for fact_id, vector in vectors:
            blob = vector_blob(vector)
            self.conn.execute("UPDATE fact_vectors SET embedding = ? WHERE fact_id = ?", (blob, fact_id))
            # Superseded since: its kept vector is what a later restore searches with, so it gets the refresh.
            self.conn.execute(
                "UPDATE facts SET archived_embedding = ? WHERE id = ? AND archived_embedding IS NOT NULL",
                (blob, fact_id),
            )
            self.conn.execute("DELETE FROM stale_vectors WHERE fact_id = ?", (fact_id,))

    # ---- forgetting ----------------------------------------------------------------------------------------

    def _chain(self, fact_ids: Iterable[int]) -> list[int]:
        """The facts and, recursively, the older facts they superseded: the whole history of each."""
        seen: list[int] = []
        todo = list(fact_ids)
        while todo:
            fid = todo.pop()
            if fid in seen:
                continue
            seen.append(fid)
            todo.extend(
                r[0] for r in self.conn.execute("SELECT id FROM facts WHERE superseded_by = ?", (fid,))
            )
        return seen

    def _delete_facts(self, fact_ids: Sequence[int]) -> None:
        for fid in fact_ids:
            self.conn.execute("DELETE FROM facts_fts WHERE rowid = ?", (fid,))
            self.conn.execute("DELETE FROM fact_events WHERE fact_id = ?", (fid,))
            self.conn.execute("UPDATE facts SET superseded_by = NULL WHERE superseded_by = ?", (fid,))
        for fid in fact_ids:
            self.conn.execute("DELETE FROM facts WHERE id = ?", (fid,))

    def forget(
        self, scope: str, user_id: str, fact_ids: Sequence[int] | None = None, *, actor: str = "system"
    ) -> int:
        """Hard-delete facts (None: all of this person's in this scope) with their history, vectors and FTS rows.

        Ids that are not this person's in this scope are ignored (the count says what was removed).
        Forgetting everything also drops the person's buffered messages, so nothing is learned afterwards
        from text they said before. Leaves one 'forgotten' event with a count and no text.
        """
        with self._tx():
            if fact_ids is None:
                ids = [
                    r[0]
                    for r in self.conn.execute(
                        "SELECT id FROM facts WHERE scope = ? AND user_id = ?", (scope, user_id)
                    )
                ]
                self._drop_pending_of(scope, user_id)
            else:
                own = [
                    fid
                    for fid in fact_ids
                    if self.conn.execute(
                        "SELECT 1 FROM facts WHERE id = ? AND scope = ? AND user_id = ?",
                        (fid, scope, user_id),
                    ).fetchone()
                ]
                ids = self._chain(own)
                if ids:  # a buffered reply of the bot may repeat the fact; it must not teach it again
                    self._drop_bot_turns(scope)
            self._delete_facts(ids)
            if ids or fact_ids is None:
                self._event(
                    None, scope, user_id, "forgotten", {"count": len(ids), "all": fact_ids is None}, actor
                )
        self.checkpoint()
        return len(ids)

    def forget_message(self, message_id: str) -> list[tuple[str, str, int]]:
        """A source message was deleted: drop it from the buffer, with the bot's replies to it, and from facts.

        Facts that carry its words are deleted: a fact left with no source, a merged fact the message
        added its text to, and every fact merged from one of those. Facts they had superseded become
        active again, because the statement that replaced them was withdrawn. Other facts only lose it
        as a source. Returns (scope, user_id, fact_id) of deleted facts.
        """
        removed: list[tuple[str, str, int]] = []
        now = iso(utcnow())
        with self._tx():
            buffered = self.conn.execute(
                "DELETE FROM pending_messages WHERE message_id = ? OR reply_to = ?", (message_id, message_id)
            ).rowcount
            carrying = self._facts_carrying(message_id)
            self.conn.execute("DELETE FROM fact_sources WHERE message_id = ?", (message_id,))
            for fid in carrying:
                row = self.conn.execute(
                    "SELECT scope, user_id, status, superseded_by FROM facts WHERE id = ?", (fid,)
                ).fetchone()
                if row is None:
                    continue
                replaced = [
                    (old_id, old_text)
                    for old_id, old_text in self.conn.execute(
                        "SELECT id, text FROM facts WHERE superseded_by = ? AND archived_embedding IS NOT NULL",
                        (fid,),
                    ).fetchall()
                    if old_id not in carrying
                ]
                for old_id, old_text in replaced:
                    if row[2] == FactStatus.ACTIVE.value:
                        self._restore(old_id, row[0], row[1], old_text, now)
                    else:  # the withdrawn fact was itself replaced since: its successor replaces these too,
                        # and carries their words only if both steps were merges
                        self.conn.execute(
                            "UPDATE facts SET superseded_by = ?, status = CASE WHEN status = 'merged' AND ? = "
                            "'merged' THEN 'merged' ELSE 'invalidated' END WHERE id = ?",
                            (row[3], row[2], old_id),
                        )
                self._delete_facts([fid])
                self._event(None, row[0], row[1], "forgotten", {"count": 1, "source_deleted": True})
                removed.append((row[0], row[1], fid))
        if removed or buffered:
            self.checkpoint()
        return removed

    def _facts_carrying(self, message_id: str) -> list[int]:
        """Facts whose text holds words of this message, newest last (see forget_message)."""
        with_source = {
            r[0]: bool(r[1])
            for r in self.conn.execute(
                "SELECT fact_id, confirms FROM fact_sources WHERE message_id = ?", (message_id,)
            )
        }
        sources = self._source_ids(list(with_source))
        carrying: set[int] = set()
        for fid, repeated in with_source.items():
            merged_from = [
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM facts WHERE superseded_by = ? AND status = 'merged'", (fid,)
                )
            ]
            inherited = {mid for mids in self._source_ids(merged_from).values() for mid in mids}
            added_words = bool(merged_from) and not repeated and message_id not in inherited
            # A fact whose only source merely repeated it came from elsewhere (an import): it stays.
            orphaned = set(sources.get(fid, ())) == {message_id} and not repeated
            if orphaned or added_words:
                carrying.add(fid)
        for fid in list(carrying):  # a fact merged from a carrying fact carries its words too
            carrying.update(self._merged_into(fid))
        return sorted(carrying)

    def _restore(self, fact_id: int, scope: str, user_id: str, text: str, now: str) -> None:
        self.conn.execute(
            "INSERT INTO fact_vectors (fact_id, scope, user_id, embedding) "
            "SELECT id, scope, user_id, archived_embedding FROM facts WHERE id = ?",
            (fact_id,),
        )
        self.conn.execute(
            "UPDATE facts SET status = 'active', superseded_by = NULL, archived_embedding = NULL, updated_at = ? "
            "WHERE id = ?",
            (now, fact_id),
        )
        self.conn.execute(
            "INSERT INTO facts_fts (rowid, text, owner) VALUES (?, ?, ?)",
            (fact_id, text, owner_token(scope, user_id)),
        )
        self._event(
            fact_id, scope, user_id, "restored", {"reason": "the fact that replaced it lost its source"}
        )

    def checkpoint(self) -> None:
        """Fold the WAL into the main file and truncate it, so deleted text does not linger in the log."""
        with contextlib.suppress(sqlite3.OperationalError):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()

    # ---- import and re-embedding ---------------------------------------------------------------------------

    def add_facts(self, facts: Sequence[NewFact], *, actor: str = "import") -> list[int]:
        """Store facts as they are (no consolidation), each with its embedding, in one transaction."""
        now = iso(utcnow())
        ids: list[int] = []
        with self._tx():
            for fact in facts:
                assert fact.embedding is not None
                self._upsert_user(fact.scope, fact.user_id, fact.user_name)
                fid = self._insert_fact(fact, fact.text, fact.embedding, now)
                self._event(
                    fid, fact.scope, fact.user_id, "added", {"text": fact.text, "decision": "IMPORT"}, actor
                )
                ids.append(fid)
        return ids

    def begin_reembed(self, model: str, dimensions: int) -> int:
        """Start (or resume) re-embedding into `model`; returns the last fact id already done."""
        meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        target = f"{model}@{dimensions}"
        with self._tx():
            if meta.get("reembed_target") != target:
                self._set_meta("reembed_target", target)
                self._set_meta("reembed_after_id", "0")
                return 0
        return int(meta.get("reembed_after_id", "0"))

    def facts_to_reembed(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute(
                "SELECT id, text FROM facts WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit)
            ).fetchall()
        ]

    def store_reembedded(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Replace vectors (active: searchable; superseded: archived) and record progress, atomically."""
        with self._tx():
            for fid, vector in vectors:
                blob = vector_blob(vector)
                self.conn.execute("UPDATE fact_vectors SET embedding = ? WHERE fact_id = ?", (blob, fid))
                self.conn.execute(
                    "UPDATE facts SET archived_embedding = ? WHERE id = ? AND archived_embedding IS NOT NULL",
                    (blob, fid),
                )
                self.conn.execute("DELETE FROM stale_vectors WHERE fact_id = ?", (fid,))
            if vectors:
                self._set_meta("reembed_after_id", str(max(fid for fid, _ in vectors)))

    def finish_reembed(self, model: str, dimensions: int) -> None:
        with self._tx():
            self._set_meta("embedding_model", model)
            self._set_meta("embedding_dimensions", str(dimensions))
            self.conn.execute("DELETE FROM meta WHERE key IN ('reembed_target', 'reembed_after_id')")
        self.dimensions = dimensions

    # ---- statistics ----------------------------------------------------------------------------------------

    def stats(self, scope: str | None = None) -> dict[str, Any]:
        where, params = ("WHERE scope = ?", (scope,)) if scope else ("", ())
        by_status = dict(
            self.conn.execute(
                f"SELECT status, count(*) FROM facts {where} GROUP BY status", params
            ).fetchall()
        )
        people = self.conn.execute(
            f"SELECT count(*) FROM (SELECT DISTINCT scope, user_id FROM facts {where})", params
        ).fetchone()[0]
        scopes = self.conn.execute("SELECT count(DISTINCT scope) FROM facts").fetchone()[0]
        return {
            "facts": {s.value: by_status.get(s.value, 0) for s in FactStatus},
            "people": people,
            "scopes": scopes,
            "pending_messages": self.count_pending(scope),
        }


def _split_sql(script: str) -> list[str]:
    """Statements of a migration script (no semicolons inside literals in our migrations)."""
    return [s.strip() for s in script.split(";") if s.strip()]


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (a crash mid-write leaves nothing half done)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")


P = ParamSpec("P")
R = TypeVar("R")


class AsyncStore:
    """Runs `Store` methods on one dedicated thread so the event loop never blocks on SQLite.

    `await store.call(Store.method, args...)` is the single entry point: methods stay defined once, in
    `Store`, and each call is atomic with respect to every other call.
    """

    def __init__(self, store: Store) -> None:
        self.sync = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-store")
        self._closed = threading.Event()

    @classmethod
    async def open(cls, path: Path | str, *, embedding_model: str, dimensions: int) -> AsyncStore:
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-store")
        try:
            store = await loop.run_in_executor(
                executor, lambda: Store.open(path, embedding_model=embedding_model, dimensions=dimensions)
            )
        finally:
            executor.shutdown(wait=False)
        return cls(store)

    async def call(self, method: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        if self._closed.is_set():
            raise DatabaseError("the store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: method(self.sync, *args, **kwargs))

    async def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self.sync.close)
        self._executor.shutdown(wait=True)
