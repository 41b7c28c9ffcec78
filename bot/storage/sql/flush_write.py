"""Writing a flush: a consolidation plan applied with its episodes and the removal of its buffered
messages, in ONE transaction, re-checked against what changed since the flush read its chunk (a
message deleted, edited or opted out meanwhile teaches nothing). `SqlStore` composes this part."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from bot.memory.models import (
    COMMUNITY_ID,
    AppliedChange,
    Decision,
    FactStatus,
    NewEpisode,
    Operation,
    iso,
    utcnow,
)
from bot.storage.sql.buffer import Buffer, buffered_authors, buffered_texts
from bot.storage.sql.episodes import Episodes
from bot.storage.sql.facts import Facts
from bot.storage.sql.people import People, upsert_user
from bot.storage.sql.rows import Owner


class FlushWrite(Facts, Episodes, Buffer, People):
    """A flush's plan applied atomically (see the module)."""

    def apply_flush(
        self,
        operations: Sequence[Operation],
        *,
        episodes: Sequence[NewEpisode] = (),
        consumed_message_ids: Sequence[str] = (),
        user_names: dict[tuple[str, str], str] | None = None,
        refreshed: Sequence[tuple[int, Sequence[float]]] = (),
        actor: str = "system",
        read_texts: dict[str, str] | None = None,
        refreshed_episodes: Sequence[tuple[int, str, Sequence[float]]] = (),
    ) -> list[AppliedChange]:
        """Apply a flush's plan and store its episodes, with its events and the removal of its buffered
        messages, in ONE transaction.

        The plan is decided: consolidation (bot/memory/consolidate.py, `resolved`) settled every
        operation, down to what it becomes if its target is gone. An incomplete operation (a MERGE
        without its text, a decision on a known fact that names none, a fact to store without its
        vector) or episode (without sources or vector) raises ValueError before anything is written.

        What only the write can see is checked here, each with one outcome:
        - a fact of a person who opted out, drawn from a message edited while the flush ran (its text
          differs from `read_texts`), or whose every source message left the buffer meanwhile, is
          skipped; an edited message stays buffered with its new text, and a fact keeps no trace of a
          source deleted meanwhile;
        - a community fact or an episode is made of all its messages: it is skipped unless every one of
          them is still buffered, unedited, and by someone who has not opted out (`_from_buffer`);
        - a target that is no longer the person's active fact (forgotten meanwhile) gets the
          operation's `fallback`; an operation without one is skipped;
        - a DUPLICATE of a fact merged meanwhile (by this very plan) confirms the fact holding its words.
        `refreshed` carries fresh vectors for facts listed by `stale_facts()`, `refreshed_episodes` for
        episodes listed by `stale_episodes()` (with the summary each was made from).
        """
        faults = [fault for planned in operations if (fault := _incomplete(planned)) is not None]
        faults += [f"an episode of {e.scope} has no {what}" for e in episodes for what in _missing(e)]
        if faults:
            raise ValueError(f"cannot apply the flush's plan: {'; '.join(faults)}")
        now = iso(utcnow())
        applied: list[AppliedChange] = []
        with self._tx():
            self._write_vectors(refreshed)
            self._refresh_episode_vectors(refreshed_episodes)
            opted_out = self.opted_out()
            # Messages deleted, forgotten or dropped by an opt-out while the model was thinking must teach nothing.
            current = buffered_texts(self.conn, {*consumed_message_ids, *(read_texts or {})})
            withdrawn = {mid for mid in consumed_message_ids if current[mid] is None}
            edited = {mid for mid, text in (read_texts or {}).items() if current[mid] not in (None, text)}
            # What is made of several people's messages is checked against each message's author.
            made_of = {
                m for op in operations if op.fact.user_id == COMMUNITY_ID for m in op.fact.source_message_ids
            }
            authors = buffered_authors(self.conn, made_of | {m for e in episodes for m in e.sources})
            for (scope, user_id), name in (user_names or {}).items():
                upsert_user(self.conn, scope, user_id, name)
            for planned in operations:
                op = _admitted(planned, opted_out, withdrawn, edited, authors)
                if op is None:
                    continue
                if not op.decision.has_target:
                    applied.append(self._add(op, op.decision, now, actor))
                elif (found := self._target(op)) is None:  # gone meanwhile: the plan's fallback, or skipped
                    if op.fallback is not None:
                        applied.append(self._add(op, op.fallback, now, actor))
                elif op.decision is Decision.DUPLICATE:
                    applied.append(self._confirm(op, found[0], now, actor))
                else:
                    applied.append(self._replace(op, *found, now, actor))
            for episode in episodes:
                if _from_buffer(episode.scope, episode.sources, opted_out, edited, authors) and (
                    episode.continues is None or not self._extend_episode(episode, episode.continues)
                ):
                    self._insert_episode(episode, now)
            for mid in consumed_message_ids:
                if mid not in edited:
                    self.conn.execute("DELETE FROM pending_messages WHERE message_id = ?", (mid,))
        return applied

    def _target(self, op: Operation) -> tuple[int, Owner] | None:
        """The id and owner of the active fact an operation acts on; None when it is not the person's now."""
        target_id = op.target_id
        if target_id is None:
            return None
        if op.decision is Decision.DUPLICATE:
            # Another operation of this plan may have merged the target already: repeat its successor.
            target_id = [target_id, *self._merged_into(target_id)][-1]
        owner = self._active_owner(target_id)
        if owner is None or (owner.scope, owner.user_id) != (op.fact.scope, op.fact.user_id):
            return None
        return target_id, owner

    def _add(self, op: Operation, decision: Decision, now: str, actor: str) -> AppliedChange:
        """ADD or KEEP: the new fact is stored beside what is known."""
        fact = op.fact
        fact_id = self._insert_fact(fact, fact.text, fact.embedding or (), now)
        detail = {"decision": decision.value, "reason": op.reason}
        self._event(fact_id, fact.scope, fact.user_id, "added", detail, actor)
        return AppliedChange(decision, fact.scope, fact.user_id, fact.user_name, fact_id)

    def _confirm(self, op: Operation, target_id: int, now: str, actor: str) -> AppliedChange:
        """DUPLICATE: the known fact gains the new fact's messages as sources that repeat it."""
        fact = op.fact
        self._add_sources(target_id, fact, confirms=True)
        self.conn.execute("UPDATE facts SET updated_at = ? WHERE id = ?", (now, target_id))
        # The repeat's words are the fact's own: the event records the decision, never the text (a deleted
        # repeat would otherwise leave them here).
        self._event(target_id, fact.scope, fact.user_id, "duplicate", {"reason": op.reason}, actor)
        return AppliedChange(op.decision, fact.scope, fact.user_id, fact.user_name, target_id, target_id)

    def _replace(self, op: Operation, target_id: int, target: Owner, now: str, actor: str) -> AppliedChange:
        """MERGE or INVALIDATE: a new fact supersedes the known one, which keeps its row as history."""
        fact = op.fact
        merge = op.decision is Decision.MERGE
        text = op.merged_text if merge and op.merged_text else fact.text
        if (
            merge
        ):  # the merged text holds both facts' words: sensitive if either was, the server's only if both
            fact = replace(
                fact,
                sensitive=fact.sensitive or target.sensitive,
                speaks_for_server=fact.speaks_for_server and target.speaks_for_server,
            )
        fact_id = self._insert_fact(fact, text, fact.embedding or (), now)
        if merge:
            self._inherit_sources(fact_id, target_id)
            # Searchable at once with the new fact's vector; the merged text's own vector rides along
            # with the next flush's embedding request (`refreshed`).
            self.conn.execute("INSERT INTO stale_vectors (fact_id) VALUES (?)", (fact_id,))
        status = FactStatus.MERGED if merge else FactStatus.INVALIDATED
        self._supersede(target_id, fact_id, status, now)
        added = {"decision": op.decision.value, "replaces": target_id, "reason": op.reason}
        self._event(fact_id, fact.scope, fact.user_id, "added", added, actor)
        replaced = {"superseded_by": fact_id, "reason": op.reason}  # the row keeps its words, not the event
        self._event(target_id, fact.scope, fact.user_id, status.value, replaced, actor)
        return AppliedChange(op.decision, fact.scope, fact.user_id, fact.user_name, fact_id, target_id)


def _incomplete(op: Operation) -> str | None:
    """What a planned operation lacks to be applied as it stands, if anything."""
    if op.decision.has_target and op.target_id is None:
        return f"a {op.decision} names no fact"
    if op.decision is Decision.MERGE and not op.merged_text:
        return f"a MERGE into fact {op.target_id} has no merged text"
    if op.fallback is not None and op.fallback not in (Decision.ADD, Decision.KEEP):
        return f"a fallback must store the new fact (ADD or KEEP), not {op.fallback}"
    stores_fact = op.decision is not Decision.DUPLICATE or op.fallback is not None
    if stores_fact and op.fact.embedding is None:
        return f"{op.fact.text!r} has no embedding"
    return None


def _missing(episode: NewEpisode) -> list[str]:
    """What an episode lacks to be stored: the messages it was made from, its vector."""
    return [
        what for what, there in (("sources", episode.sources), ("embedding", episode.embedding)) if not there
    ]


def _from_buffer(
    scope: str,
    sources: Collection[str],
    opted_out: set[tuple[str, str]],
    edited: set[str],
    authors: dict[str, str],
) -> bool:
    """Whether something made of all these messages may be stored: each is still buffered (`authors`:
    neither deleted, forgotten nor dropped meanwhile), unedited, and by someone who has not opted out."""
    return bool(sources) and all(
        mid in authors and mid not in edited and (scope, authors[mid]) not in opted_out for mid in sources
    )


def _admitted(
    op: Operation,
    opted_out: set[tuple[str, str]],
    withdrawn: set[str],
    edited: set[str],
    authors: dict[str, str],
) -> Operation | None:
    """The operation as its sources stand at the write; None when it must teach nothing (see apply_flush).
    `authors`: the buffered authors of community facts' sources."""
    fact = op.fact
    if fact.user_id == COMMUNITY_ID:
        return op if _from_buffer(fact.scope, fact.source_message_ids, opted_out, edited, authors) else None
    sources = set(fact.source_message_ids)
    if (fact.scope, fact.user_id) in opted_out or sources & edited:
        return None
    if withdrawn and sources and sources <= withdrawn:
        return None
    if withdrawn & sources:  # keep no trace of a message deleted meanwhile
        kept = [m for m in fact.source_message_ids if m not in withdrawn]
        return replace(op, fact=replace(fact, source_message_ids=kept))
    return op
