"""How SQLite finds a person's facts: sqlite-vec's cosine distance over float32 blobs, and FTS5.

The keyword index `owner_words` holds, per active fact, its folded words each glued to its person's
hashed token (`owner_token`): "o<20 hex>lives", "o<20 hex>oslo". FTS5 keeps terms sorted, so the terms
of one person sit together, and a stem matched as a prefix ('"o<20 hex>liv"*') expands only to that
person's words: its cost follows the person's facts (and FTS5's segments, a handful that it merges as
the index grows), not how many facts in the whole file share the stem (as `text:"liv"*` over everyone's
words did). Query words are quoted: no FTS syntax from users.

The table is contentless (no copy of the text, no positions: `detail=none`), so a fact leaves it
through FTS5's 'delete' command given the words it was indexed with, which `_unindex_words` rebuilds
from the fact's row: the shared code takes a fact out of the index before it changes its text or
status. `secure-delete` is on, so a forgotten fact's words leave the index's pages; a fact whose words
could not be rebuilt (a Unicode table that changed between versions) is found by its person's terms and
removed word by word. The ranking and the rest of the search are shared (bot/storage/sql/search.py).
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from bot.memory.text import fold
from bot.storage.keywords import search_terms
from bot.storage.sql.database import Connected
from bot.storage.sql.rows import select, select_one

# The characters FTS5's unicode61 tokenizer keeps in a token: letters and digits, not "_".
TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def vector_blob(vector: Sequence[float]) -> bytes:
    """float32 little-endian bytes, the layout sqlite-vec reads."""
    return array("f", vector).tobytes()


def owner_token(scope: str, user_id: str) -> str:
    """One prefix per (scope, user), 21 letters and digits, whatever the ids contain."""
    return "o" + hashlib.blake2b(f"{scope}\x00{user_id}".encode(), digest_size=10).hexdigest()


def indexed_words(scope: str, user_id: str, text: str) -> str:
    """What `owner_words` indexes for a fact: each folded word once, glued to its person's token."""
    owner = owner_token(scope, user_id)
    return " ".join(owner + word for word in dict.fromkeys(TOKEN.findall(fold(text))))


def fts_query(owner: str, terms: Sequence[str]) -> str:
    """An FTS5 OR-query of `terms` as prefixes of `owner`'s words.

    A term of several tokens ("foo_bar") needs each of them among the fact's words, the last as a prefix.
    """
    alternatives = []
    for term in terms:
        parts = [f'"{owner}{part}"' for part in TOKEN.findall(term)]
        if parts:
            parts[-1] += "*"
            alternatives.append(parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")")
    return " OR ".join(alternatives)


def keyword_query(scope: str, user_id: str, text: str, *, ignore: Iterable[str] = ()) -> str | None:
    """The FTS5 query keyword search runs for `text` (None: no informative word)."""
    terms = search_terms(text, ignore=ignore)
    return fts_query(owner_token(scope, user_id), terms) if terms else None


class SqliteSearch(Connected):
    """The hooks of the shared SQL that SQLite fills: vectors as blobs, words in FTS5."""

    DISTANCE = "vec_distance_cosine(embedding, ?)"
    LIKE = "LIKE"  # ASCII case-insensitive in SQLite
    # A vector row is its fact's id and its vector, 21 to a 64 KiB page (migration 0011).
    VECTOR_OWNER = False
    PERSON_VECTORS = (
        "facts AS o JOIN fact_vectors ON fact_vectors.fact_id = o.id "
        "WHERE o.scope = ? AND o.user_id = ? AND o.status = 'active'"
    )
    _words_removed = False  # a fact's words left `owner_words` since the last scrub (Store._scrub)

    def _vector(self, vector: Sequence[float]) -> object:
        return vector_blob(vector)

    def _index_words(self, fact_id: int, scope: str, user_id: str, text: str) -> None:
        self.conn.execute(
            "INSERT INTO owner_words (rowid, words) VALUES (?, ?)",
            (fact_id, indexed_words(scope, user_id, text)),
        )

    def _unindex_words(self, fact_id: int) -> None:
        """Delete the words an active fact was indexed with (no other fact is in the index)."""
        row = select_one(
            self.conn, "SELECT scope, user_id, text FROM facts WHERE id = ? AND status = 'active'", (fact_id,)
        )
        if row is None:
            return
        self._delete_words(fact_id, indexed_words(row["scope"], row["user_id"], row["text"]))
        owner = owner_token(row["scope"], row["user_id"])
        if self._holds(fact_id, f'"{owner}"*'):
            self._delete_words(fact_id, " ".join(self._leftovers(fact_id, owner)))

    def _delete_words(self, fact_id: int, words: str) -> None:
        self.conn.execute(
            "INSERT INTO owner_words (owner_words, rowid, words) VALUES ('delete', ?, ?)", (fact_id, words)
        )
        self._words_removed = True

    def _holds(self, fact_id: int, query: str) -> bool:
        return bool(
            select(
                self.conn,
                "SELECT 1 FROM owner_words WHERE owner_words MATCH ? AND rowid = ?",
                (query, fact_id),
            )
        )

    def _leftovers(self, fact_id: int, owner: str) -> list[str]:
        """The words of `owner` the index still holds for the fact, looked up one by one among theirs."""
        terms = select(
            self.conn,
            "SELECT term FROM owner_words_terms WHERE term >= ? AND term < ?",
            (owner, owner[:-1] + chr(ord(owner[-1]) + 1)),
        )
        return [r["term"] for r in terms if self._holds(fact_id, '"' + r["term"] + '"')]

    def _word_matches(self, scope: str, user_id: str, terms: Sequence[str]) -> tuple[str, Sequence[Any]]:
        query = fts_query(owner_token(scope, user_id), terms)
        if not query:  # only underscores: no word FTS5 could hold
            return "SELECT rowid FROM owner_words WHERE 0", ()
        return "SELECT rowid FROM owner_words WHERE owner_words MATCH ?", (query,)
