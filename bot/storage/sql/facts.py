"""Facts with their history, sources and events: listing them, and the writes a flush is made of.

A superseded fact keeps its row (status + superseded_by) and its vector moves to
`facts.archived_embedding`, so that a later undo (its successor's only source message deleted) can
bring it back without asking the model again; correcting or forgetting the current fact (`SqlStore`)
deletes that history, whose words were taken back. Every fact's words are in the backend's text index
while it is active. The writes here are steps: the transactions that combine them are `SqlStore`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from bot.memory.models import COMMUNITY_ID, Fact, FactStatus, NewFact, discord_id_time, iso, utcnow
from bot.storage.sql.buffer import buffered_source, buffered_times
from bot.storage.sql.database import Connected, SourceValues
from bot.storage.sql.rows import (
    FACT_COLUMNS,
    Owner,
    event_from,
    facts_from,
    owner_from,
    scalar,
    select,
    select_one,
    source_ids_of,
)


class Facts(Connected):
    """A person's facts as lists and single facts, and the steps that write them."""

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
        rows = select(
            self.conn,
            f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = ? AND f.user_id = ? {status_filter} "
            "ORDER BY f.recorded_at DESC, f.id DESC LIMIT ? OFFSET ?",
            (scope, user_id, limit, offset),
        )
        return facts_from(self.conn, rows)

    def recent_facts(self, scope: str, user_id: str, limit: int) -> list[Fact]:
        """A person's active facts, the most recently stated or confirmed first (`updated_at`: a repeat
        or a correction brings a fact back to the top), with their sources."""
        rows = select(
            self.conn,
            f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = ? AND f.user_id = ? "
            "AND f.status = 'active' ORDER BY f.updated_at DESC, f.id DESC LIMIT ?",
            (scope, user_id, limit),
        )
        return facts_from(self.conn, rows)

    def count_facts(self, scope: str, user_id: str, *, all_statuses: bool = False) -> int:
        status_filter = "" if all_statuses else "AND status = 'active'"
        count: int = scalar(
            self.conn,
            f"SELECT count(*) FROM facts WHERE scope = ? AND user_id = ? {status_filter}",
            (scope, user_id),
        )
        return count

    def get_fact(self, fact_id: int) -> Fact | None:
        row = select_one(self.conn, f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.id = ?", (fact_id,))
        return facts_from(self.conn, [row])[0] if row else None

    def export_facts(self, scope: str, user_id: str | None = None) -> list[Fact]:
        """Every fact in a scope (of one person, or everyone's), all statuses, oldest first, with sources."""
        who, params = ("AND f.user_id = ?", (scope, user_id)) if user_id is not None else ("", (scope,))
        rows = select(
            self.conn, f"SELECT {FACT_COLUMNS} FROM facts AS f WHERE f.scope = ? {who} ORDER BY f.id", params
        )
        return facts_from(self.conn, rows)

    def events(
        self, scope: str, user_id: str | None = None, limit: int = 100, *, offset: int = 0
    ) -> list[dict[str, Any]]:
        params: tuple[Any, ...] = (scope,) if user_id is None else (scope, user_id)
        where = "scope = ?" if user_id is None else "scope = ? AND user_id = ?"
        rows = select(
            self.conn,
            f"SELECT id, fact_id, user_id, kind, detail, actor, at FROM fact_events WHERE {where} "
            "ORDER BY id DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [event_from(r) for r in rows]

    def events_per_day(self, scope: str, since: str) -> dict[str, dict[str, int]]:
        """Per UTC day since `since` (ISO), how many facts of the scope were learned (the 'added' events
        still held: a forget deletes a fact's history) and forgotten (the 'forgotten' events' counts)."""
        days: dict[str, dict[str, int]] = {}
        rows = select(
            self.conn,
            "SELECT kind, detail, at FROM fact_events WHERE scope = ? AND at >= ? "
            "AND kind IN ('added', 'forgotten')",
            (scope, since),
        )
        for row in rows:
            day = days.setdefault(row["at"][:10], {"learned": 0, "forgotten": 0})
            if row["kind"] == "added":
                day["learned"] += 1
            else:
                count = json.loads(row["detail"]).get("count", 0)
                day["forgotten"] += count if isinstance(count, int) else 0
        return days

    def record_retrievals(self, fact_ids: Sequence[int]) -> None:
        with self._tx():
            self.conn.executemany(
                "UPDATE facts SET retrieval_count = retrieval_count + 1, last_retrieved_at = ? WHERE id = ?",
                [(iso(utcnow()), fid) for fid in fact_ids],
            )

    def stale_facts(self, limit: int = 50) -> list[tuple[int, str]]:
        """Merged facts still searched with a stand-in vector, oldest first, with their texts."""
        rows = select(
            self.conn,
            "SELECT f.id, f.text FROM stale_vectors AS s JOIN facts AS f ON f.id = s.fact_id "
            "ORDER BY s.fact_id LIMIT ?",
            (limit,),
        )
        return [(r["id"], r["text"]) for r in rows]

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
        self._check_width(embedding)
        sources = self._sources_of(fact, confirms=False)
        copies = self._source_copies(sources)  # the backend's copy of them in the row (PostgreSQL's)
        [new_id] = self.conn.execute(
            "INSERT INTO facts (scope, user_id, text, valid_from, recorded_at, updated_at, sensitive, "
            f"speaks_for_server, said_at{''.join(', ' + c for c in copies)}) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?{', ?' * len(copies)}) RETURNING id",
            (
                fact.scope,
                fact.user_id,
                text,
                fact.valid_from,
                now,
                now,
                int(fact.sensitive),
                int(fact.speaks_for_server),
                min(self._said_at(fact) or now, now),
                *copies.values(),
            ),
        ).fetchone()
        fact_id = int(new_id)
        if self.VECTOR_OWNER:
            self.conn.execute(
                "INSERT INTO fact_vectors (fact_id, scope, user_id, embedding) VALUES (?, ?, ?, ?)",
                (fact_id, fact.scope, fact.user_id, self._vector(embedding)),
            )
        else:
            self.conn.execute(
                "INSERT INTO fact_vectors (fact_id, embedding) VALUES (?, ?)",
                (fact_id, self._vector(embedding)),
            )
        self._index_words(fact_id, fact.scope, fact.user_id, text)
        self._write_sources(fact_id, sources)
        return fact_id

    def _said_at(self, fact: NewFact) -> str | None:
        """When a new fact was said: as given (an import's record), else its newest buffered message's
        time, else the time its newest Discord message id carries; None when none is known (then: now)."""
        if fact.said_at is not None:
            return fact.said_at
        buffered = buffered_times(self.conn, fact.source_message_ids)
        if buffered:
            return max(buffered.values())
        return max(filter(None, map(discord_id_time, fact.source_message_ids)), default=None)

    def _add_sources(self, fact_id: int, fact: NewFact, *, confirms: bool) -> None:
        """Record which messages a fact comes from (`_sources_of`); `confirms`: they only repeated it."""
        self._write_sources(fact_id, self._sources_of(fact, confirms=confirms))

    def _sources_of(self, fact: NewFact, *, confirms: bool) -> list[SourceValues]:
        """The `fact_sources` values of a fact's messages (new, or repeating it), once each, in message
        order: where each was
        said comes from `fact.origins`, else from the buffered message itself; who said it from the
        buffered message, else (a person's fact) its owner: a community fact goes when one of its authors
        erases what they said."""
        values: dict[str, SourceValues] = {}
        for mid in fact.source_message_ids:
            origin, author = buffered_source(self.conn, mid)
            origin = fact.origins.get(mid) or origin
            if author is None and fact.user_id != COMMUNITY_ID:
                author = fact.user_id
            values.setdefault(
                mid,
                (
                    mid,
                    int(confirms),
                    None if origin is None else origin.channel_id,
                    None if origin is None else origin.parent_channel_id,
                    int(origin is not None and origin.private_thread),
                    author,
                ),
            )
        return [values[mid] for mid in sorted(values)]

    def _write_sources(self, fact_id: int, values: Sequence[SourceValues]) -> None:
        for source in values:
            self.conn.execute(
                "INSERT INTO fact_sources "
                "(fact_id, message_id, confirms, channel_id, parent_channel_id, private_thread, author_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (fact_id, *source),
            )

    def _inherit_sources(self, fact_id: int, from_id: int) -> None:
        """A merged fact holds the words of the fact it replaces: it keeps that fact's sources, as they were."""
        self.conn.execute(
            "INSERT INTO fact_sources "
            "(fact_id, message_id, confirms, channel_id, parent_channel_id, private_thread, author_id) "
            "SELECT ?, message_id, confirms, channel_id, parent_channel_id, private_thread, author_id "
            "FROM fact_sources WHERE fact_id = ? ON CONFLICT DO NOTHING",
            (fact_id, from_id),
        )

    def _supersede(self, old_id: int, new_id: int, status: FactStatus, now: str) -> None:
        """Take an active fact out of search, keeping its row and its vector (archived) for history."""
        self._unindex_words(old_id)  # first: while the row still says what was indexed
        self.conn.execute(
            "UPDATE facts SET status = ?, superseded_by = ?, updated_at = ?, "
            "archived_embedding = (SELECT embedding FROM fact_vectors WHERE fact_id = ?) WHERE id = ?",
            (status.value, new_id, now, old_id, old_id),
        )
        self.conn.execute("DELETE FROM fact_vectors WHERE fact_id = ?", (old_id,))

    def _merged_into(self, fact_id: int) -> list[int]:
        """The facts this one was merged into, one after the other: its words live on in each of them."""
        chain: list[int] = []
        while (
            (
                row := select_one(
                    self.conn,
                    "SELECT superseded_by FROM facts WHERE id = ? AND status = 'merged'",
                    (fact_id,),
                )
            )
            is not None
            and row["superseded_by"] is not None
            and row["superseded_by"] not in chain
        ):
            fact_id = row["superseded_by"]
            chain.append(fact_id)
        return chain

    def _active_owner(self, fact_id: int) -> Owner | None:
        row = select_one(
            self.conn,
            "SELECT scope, user_id, text, sensitive, speaks_for_server FROM facts WHERE id = ? AND status = 'active'",
            (fact_id,),
        )
        return owner_from(row) if row else None

    def _write_vectors(self, vectors: Iterable[tuple[int, Sequence[float]]]) -> None:
        """Give facts new vectors: the one searched with while active, the archived one once superseded.

        The one way a vector is replaced (a merged fact's own vector arriving, a re-embedding, a
        correction); a fact given its vector no longer waits in `stale_vectors`.
        """
        for fact_id, vector in vectors:
            blob = self._vector(vector)
            self.conn.execute("UPDATE fact_vectors SET embedding = ? WHERE fact_id = ?", (blob, fact_id))
            # Superseded since: its kept vector is what a later restore searches with, so it gets the refresh.
            self.conn.execute(
                "UPDATE facts SET archived_embedding = ? WHERE id = ? AND archived_embedding IS NOT NULL",
                (blob, fact_id),
            )
            self.conn.execute("DELETE FROM stale_vectors WHERE fact_id = ?", (fact_id,))

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
                r["id"] for r in select(self.conn, "SELECT id FROM facts WHERE superseded_by = ?", (fid,))
            )
        return seen

    def _lineage(self, fact_ids: Iterable[int]) -> list[int]:
        """The facts, every fact they were merged into (which holds their words), and the whole history of
        each: what forgetting them deletes."""
        ids = list(fact_ids)
        return self._chain([*ids, *(later for fid in ids for later in self._merged_into(fid))])

    def _source_messages(self, fact_ids: Sequence[int]) -> list[str]:
        """Every message these facts were learned from (or repeated by)."""
        return sorted({mid for mids in source_ids_of(self.conn, fact_ids).values() for mid in mids})

    def _delete_facts(self, fact_ids: Sequence[int]) -> None:
        for fid in fact_ids:
            self._unindex_words(fid)
            self.conn.execute("DELETE FROM fact_events WHERE fact_id = ?", (fid,))
            self.conn.execute("UPDATE facts SET superseded_by = NULL WHERE superseded_by = ?", (fid,))
        for fid in fact_ids:
            self.conn.execute("DELETE FROM facts WHERE id = ?", (fid,))

    def _facts_carrying(self, message_id: str) -> list[int]:
        """Facts whose text holds words of this message, newest last (see forget_message)."""
        with_source = {
            r["fact_id"]: bool(r["confirms"])
            for r in select(
                self.conn, "SELECT fact_id, confirms FROM fact_sources WHERE message_id = ?", (message_id,)
            )
        }
        sources = source_ids_of(self.conn, list(with_source))
        carrying: set[int] = set()
        for fid, repeated in with_source.items():
            merged_from = [
                r["id"]
                for r in select(
                    self.conn, "SELECT id FROM facts WHERE superseded_by = ? AND status = 'merged'", (fid,)
                )
            ]
            inherited = {mid for mids in source_ids_of(self.conn, merged_from).values() for mid in mids}
            added_words = bool(merged_from) and not repeated and message_id not in inherited
            # A fact whose only source merely repeated it came from elsewhere (an import): it stays.
            orphaned = set(sources.get(fid, ())) == {message_id} and not repeated
            if orphaned or added_words:
                carrying.add(fid)
        for fid in list(carrying):  # a fact merged from a carrying fact carries its words too
            carrying.update(self._merged_into(fid))
        return sorted(carrying)

    def _restore(self, fact_id: int, scope: str, user_id: str, text: str, now: str) -> None:
        owner = ", scope, user_id" if self.VECTOR_OWNER else ""
        self.conn.execute(
            f"INSERT INTO fact_vectors (fact_id{owner}, embedding) "
            f"SELECT id{owner}, archived_embedding FROM facts WHERE id = ?",
            (fact_id,),
        )
        self.conn.execute(
            "UPDATE facts SET status = 'active', superseded_by = NULL, archived_embedding = NULL, updated_at = ? "
            "WHERE id = ?",
            (now, fact_id),
        )
        self._index_words(fact_id, scope, user_id, text)
        self._event(
            fact_id, scope, user_id, "restored", {"reason": "the fact that replaced it lost its source"}
        )
