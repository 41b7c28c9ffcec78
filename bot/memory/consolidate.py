"""New facts + similar known facts -> KEEP / MERGE / INVALIDATE / DUPLICATE -> one transaction.

Cost is the point of the shape: one batched embedding request for all new facts of a flush, duplicates
settled without the model, and ONE decision call for every fact that has candidates (split only when the
prompt would grow past a size bound). A MERGE's text is embedded with the NEXT flush's request (the
merged fact is searchable meanwhile with the new fact's vector), so a flush never needs a second one. Per-person locks, always taken in sorted order, keep two flushes
from deciding against the same facts at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from bot.memory.leases import Leases, person_key
from bot.memory.model_ports import Embedder, JsonModel, ModelBadAnswer, ModelRefusal, Purpose, answer_budget
from bot.memory.models import (
    MAX_FACT_CHARS,
    AppliedChange,
    Decision,
    Fact,
    NewEpisode,
    NewFact,
    Operation,
    iso,
)
from bot.memory.ports import Storage, StorageWorker
from bot.memory.prompts.consolidation import (
    CONSOLIDATE_SYSTEM,
    ConsolidationDecision,
    ConsolidationResult,
    consolidation_prompt,
)
from bot.memory.text import (
    change_words,
    clean,
    worth_reading,
)
from bot.memory.verdicts import (
    MERGE_FAULTS,
    change_verdict,
    invented_words,
    merge_verdict,
    replaced_by_words,
    same_subject,
    same_topic,
    settled_by_words,
)

log = logging.getLogger(__name__)

MODEL_DECIDED = "the model's decision"  # an audit event's reason; what the model wrote is only logged
# A channel's talk read in chunks a flush apart is one episode: the next chunk goes on the latest episode
# when it began at most this long after that one ended (and is about the same thing).
EPISODE_GAP = timedelta(hours=2)
DECISION_TRIES = 2  # asks for an answer that decides about at least one fact, before it is a bad answer


@dataclass
class _Pending:
    fact: NewFact
    candidates: list[tuple[Fact, float]]


def cosine_distance(a: Sequence[float], b: Sequence[float]) -> float:
    """For unit vectors: 1 - dot product."""
    return 1.0 - sum(x * y for x, y in zip(a, b, strict=True))


class PersonLocks:
    """One asyncio lock per (scope, user), acquired in sorted order so that flushes cannot deadlock.

    A lock lives only while someone holds or waits for it, so a server with many people keeps few.
    With `leases`, the people are then leased in the database too, so other processes wait likewise.
    """

    def __init__(self, leases: Leases | None = None) -> None:
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._users: dict[tuple[str, str], int] = {}
        self.leases = leases  # other processes on the database: their leases are waited for too

    @contextlib.asynccontextmanager
    async def hold(self, keys: Sequence[tuple[str, str]]) -> AsyncIterator[None]:
        ordered = sorted(set(keys))
        for key in ordered:
            self._users[key] = self._users.get(key, 0) + 1
        try:
            locks = [self._locks.setdefault(k, asyncio.Lock()) for k in ordered]
            async with contextlib.AsyncExitStack() as stack:
                for lock in locks:
                    await stack.enter_async_context(lock)
                if self.leases is not None and ordered:
                    await stack.enter_async_context(self.leases.holding([person_key(*k) for k in ordered]))
                yield
        finally:
            for key in ordered:
                self._users[key] -= 1
                if not self._users[key]:
                    del self._users[key]
                    self._locks.pop(key, None)

    def __len__(self) -> int:
        """How many people's locks exist now (held or waited for)."""
        return len(self._locks)


class Consolidator:
    def __init__(
        self,
        store: StorageWorker,
        llm: JsonModel,
        embedder: Embedder,
        *,
        candidate_distance: float,
        duplicate_distance: float,
        change_distance: float | None = None,
        changes_by_words: bool = False,
        max_candidates: int = 8,
        prompt_char_budget: int = 40_000,
        refresh_per_flush: int = 50,
        leases: Leases | None = None,
    ) -> None:
        """`change_distance` (at least `candidate_distance`): how far a new fact that says it changed
        ("Ana moved to Lyon") looks for the fact it changes, whose words may be far from its own.
        `changes_by_words`: such a fact replaces its nearest candidate about the same thing without a
        model (`replaced_by_words`), for models whose own decisions are no better than chance."""
        self.store = store
        self.llm = llm
        self.embedder = embedder
        self.candidate_distance = candidate_distance
        self.change_distance = max(candidate_distance, change_distance or candidate_distance)
        self.changes_by_words = changes_by_words
        self.duplicate_distance = duplicate_distance
        self.max_candidates = max_candidates
        self.prompt_char_budget = prompt_char_budget
        self.refresh_per_flush = refresh_per_flush
        self.locks = PersonLocks(leases)

    async def run(
        self,
        facts: list[NewFact],
        *,
        episodes: Sequence[NewEpisode] = (),
        consumed_message_ids: Sequence[str] = (),
        user_names: dict[tuple[str, str], str] | None = None,
        read_texts: dict[str, str] | None = None,
        last_try: bool = False,
    ) -> list[AppliedChange]:
        """Decide and apply, with the flush's `episodes`. Model errors propagate before anything is written.

        `read_texts` (message id -> the text extraction read) lets the write notice edits made meanwhile.
        `last_try` (the flush's messages have had their unusable answers): a consolidation answer that
        decides nothing keeps the new facts beside the old ones, so the channel is not held up for good.
        """
        facts = self._dedupe_exact(facts)
        refreshed: list[tuple[int, list[float]]] = []
        refreshed_episodes: list[tuple[int, str, list[float]]] = []
        if facts or episodes:
            # One embedding request per flush: the new facts, the episodes, merged facts awaiting their
            # own vector, and episodes that lost points since theirs was made.
            stale = await self.store.call(Storage.stale_facts, self.refresh_per_flush)
            stale_episodes = await self.store.call(Storage.stale_episodes, self.refresh_per_flush)
            texts = [f.text for f in facts] + [e.summary for e in episodes]
            later = [text for _, text in stale] + [summary for _, summary in stale_episodes]
            vectors = await self.embedder.embed(texts + later, "document")
            for fact, vector in zip(facts, vectors, strict=False):
                fact.embedding = vector
            for episode, vector in zip(episodes, vectors[len(facts) :], strict=False):
                episode.embedding = vector
            rest = vectors[len(texts) :]
            refreshed = [(fid, vector) for (fid, _), vector in zip(stale, rest, strict=False)]
            refreshed_episodes = [
                (eid, summary, vector)
                for (eid, summary), vector in zip(stale_episodes, rest[len(stale) :], strict=True)
            ]
            for episode in episodes:
                episode.continues = await self._goes_on(episode)
            facts = await asyncio.to_thread(self._dedupe_close, facts)  # pairwise: keep it off the loop
        async with self.locks.hold([(f.scope, f.user_id) for f in facts]):
            operations, pending = await self._triage(facts)
            if pending:
                operations += await self._decide(pending, last_try=last_try)
            return await self.store.call(
                Storage.apply_flush,
                [resolved(op) for op in operations],
                episodes=episodes,
                consumed_message_ids=consumed_message_ids,
                user_names=user_names,
                read_texts=read_texts,
                refreshed=refreshed,
                refreshed_episodes=refreshed_episodes,
            )

    async def _goes_on(self, episode: NewEpisode) -> int | None:
        """The channel's episode this one continues: the latest, ended at most EPISODE_GAP before this
        one began and about the same thing (within the distance of a fact's candidates), so a talk read
        in several chunks is one episode, not one per flush."""
        if episode.embedding is None:
            return None
        began = datetime.fromisoformat(episode.started_at.replace("Z", "+00:00"))
        return await self.store.call(
            Storage.episode_to_extend,
            episode.scope,
            episode.origin.channel_id,
            episode.embedding,
            iso(began - EPISODE_GAP),
            self.candidate_distance,
        )

    @staticmethod
    def _dedupe_exact(facts: list[NewFact]) -> list[NewFact]:
        kept: dict[tuple[str, str, str], NewFact] = {}
        for fact in facts:
            key = (fact.scope, fact.user_id, fact.text.casefold())
            if key in kept:
                kept[key].source_message_ids = sorted(
                    {*kept[key].source_message_ids, *fact.source_message_ids}
                )
            else:
                kept[key] = fact
        return list(kept.values())

    def _dedupe_close(self, facts: list[NewFact]) -> list[NewFact]:
        """Near-identical new facts of one person in the same flush collapse into the first.

        Pairwise within each person, so it runs on a worker thread (extraction caps the count).
        """
        kept: list[NewFact] = []
        by_person: dict[tuple[str, str], list[NewFact]] = {}
        for fact in facts:
            own = by_person.setdefault((fact.scope, fact.user_id), [])
            twin = next(
                (
                    k
                    for k in own
                    if cosine_distance(k.embedding or [], fact.embedding or []) <= self.duplicate_distance
                ),
                None,
            )
            if twin is None:
                kept.append(fact)
                own.append(fact)
            else:
                twin.source_message_ids = sorted({*twin.source_message_ids, *fact.source_message_ids})
        return kept

    async def _triage(self, facts: list[NewFact]) -> tuple[list[Operation], list[_Pending]]:
        """ADD when nothing is similar, DUPLICATE when something is (nearly) identical, else ask the memory model."""
        operations: list[Operation] = []
        pending: list[_Pending] = []
        exact: dict[tuple[str, str], dict[str, Fact]] = {}
        for fact in facts:
            key = (fact.scope, fact.user_id)
            if key not in exact:
                texts = [f.text for f in facts if (f.scope, f.user_id) == key]
                exact[key] = await self.store.call(Storage.facts_by_text, fact.scope, fact.user_id, texts)
        for fact in facts:
            assert fact.embedding is not None
            same = exact[(fact.scope, fact.user_id)].get(fact.text.casefold())
            if same is not None:
                operations.append(Operation(Decision.DUPLICATE, fact, same.id, reason="same text"))
                continue
            candidates = await self.store.call(
                Storage.knn,
                fact.scope,
                fact.user_id,
                fact.embedding,
                self.max_candidates,
                self.change_distance if change_words(fact.text) else self.candidate_distance,
            )
            if not candidates:
                operations.append(Operation(Decision.ADD, fact, reason="nothing similar known"))
            elif candidates[0][1] <= self.duplicate_distance:
                operations.append(
                    Operation(Decision.DUPLICATE, fact, candidates[0][0].id, reason="near-identical")
                )
            elif self.changes_by_words and (replaced := replaced_by_words(fact, candidates)):
                operations.append(replaced)
            elif settled := settled_by_words(fact, candidates):
                operations.append(settled)
            else:
                pending.append(_Pending(fact, candidates))
        return operations, pending

    def _batches(self, pending: list[_Pending]) -> list[list[_Pending]]:
        """Split the facts to decide so that no prompt passes the size bound."""
        batches: list[list[_Pending]] = [[]]
        size = 0
        for p in pending:
            item_size = len(p.fact.text) + sum(len(f.text) + 40 for f, _ in p.candidates) + 80
            if batches[-1] and size + item_size > self.prompt_char_budget:
                batches.append([])
                size = 0
            batches[-1].append(p)
            size += item_size
        return batches

    @staticmethod
    def _items(batch: list[_Pending]) -> list[dict[str, object]]:
        """The prompt's new facts, numbered 0..n-1 by their place in the list.

        Numbering by position makes "new_fact" mean the same whether a model reads it as the number
        given or as the item's index, so a decision can never land on another fact.
        """
        return [
            {
                "new_fact": position,
                "person": p.fact.user_name,
                "text": p.fact.text,
                "candidates": [
                    {"id": f.id, "text": f.text, "recorded_at": f.recorded_at[:10]} for f, _ in p.candidates
                ],
            }
            for position, p in enumerate(batch)
        ]

    async def _decide(self, pending: list[_Pending], *, last_try: bool = False) -> list[Operation]:
        operations: list[Operation] = []
        for batch in self._batches(pending):
            try:
                decisions = await self._decisions(batch)
            except ModelRefusal as exc:  # it will not weigh these texts: keep them, as for a missing answer
                log.info(
                    "the memory model refused to consolidate %d facts; keeping them as new: %s",
                    len(batch),
                    exc,
                )
                decisions = {}
            except ModelBadAnswer as exc:
                if not last_try:
                    raise
                log.warning(
                    "no usable consolidation answer for %d facts; keeping them as new: %s", len(batch), exc
                )
                decisions = {}
            operations += [self._operation(p, decisions.get(position)) for position, p in enumerate(batch)]
        return operations

    async def _decisions(self, batch: list[_Pending]) -> dict[int, ConsolidationDecision]:
        """The model's decision per new fact of `batch`, by position. An answer none of whose decisions
        names a fact of the batch decides nothing: it is asked again, then it is a bad answer (the flush
        fails and its messages wait), never "keep everything". The facts an answer passed over are asked
        about once more on their own (a small model answered for the first of three and stopped,
        bench/quality.py); what that answer leaves undecided is kept beside the known facts."""
        decisions: dict[int, ConsolidationDecision] = {}
        for _ in range(DECISION_TRIES):
            decisions = await self._answer(batch)
            if decisions:
                break
            log.info("consolidation answered no decision about any of its %d facts", len(batch))
        else:
            raise ModelBadAnswer(
                f"consolidation answered no decision about any of its {len(batch)} facts, {DECISION_TRIES} times",
                purpose=Purpose.CONSOLIDATE,
            )
        undecided = [position for position in range(len(batch)) if position not in decisions]
        if undecided:
            log.info(
                "consolidation passed over %d of its %d facts; asking about them", len(undecided), len(batch)
            )
            try:
                again = await self._answer([batch[position] for position in undecided])
            except ModelBadAnswer as exc:
                log.info("no usable answer about the facts passed over; keeping them as new: %s", exc)
                again = {}
            decisions.update({undecided[position]: d for position, d in again.items()})
        return decisions

    async def _answer(self, batch: list[_Pending]) -> dict[int, ConsolidationDecision]:
        """One call's decisions by the position of the fact they name; decisions about no fact of the
        batch are dropped, and the first of two about one fact counts."""
        result = await self.llm.generate_json(
            Purpose.CONSOLIDATE,
            system=CONSOLIDATE_SYSTEM,
            prompt=consolidation_prompt(self._items(batch)),
            schema=ConsolidationResult,
            max_output_tokens=answer_budget(len(batch)),
        )
        decisions: dict[int, ConsolidationDecision] = {}
        for d in result.decisions:
            if 0 <= d.new_fact < len(batch):
                decisions.setdefault(d.new_fact, d)
        return decisions

    @staticmethod
    def _operation(p: _Pending, d: ConsolidationDecision | None) -> Operation:
        """Turn the model's answer into an operation; anything it got wrong falls back to KEEP."""
        if d is None:
            return Operation(Decision.KEEP, p.fact, reason="no decision given")
        decision = Decision(d.decision)
        # The model's own words are logged, never stored: they may quote a known fact, and the audit
        # event holding them outlives that fact's forget or correction.
        log.debug("the model's reason for %s of a new fact: %s", decision, d.reason)
        if decision is Decision.KEEP:
            return Operation(Decision.KEEP, p.fact, reason=MODEL_DECIDED)
        target_id = d.target_fact_id
        if target_id is None and len(p.candidates) == 1:  # the one fact it can mean (small models omit it)
            target_id = p.candidates[0][0].id
        candidate_ids = {f.id for f, _ in p.candidates}
        if target_id not in candidate_ids:
            log.info("consolidation named fact %r, not a candidate; keeping the new fact", target_id)
            return Operation(Decision.KEEP, p.fact, reason="unknown target id")
        target = next(f for f, _ in p.candidates if f.id == target_id)
        if not same_subject(target.text, p.fact.text, p.fact.user_name):
            log.debug(
                "a %s of fact %d: the two facts share no subject (no word besides the name, no word of one"
                " subject of a life); keeping both",
                decision,
                target.id,
            )
            return Operation(Decision.KEEP, p.fact, reason="decision on a fact about something else")
        if decision in (Decision.MERGE, Decision.DUPLICATE) and (
            corrected := change_verdict(decision, target.text, p.fact.text, p.fact.user_name)
        ):
            log.info(
                "a %s of fact %d would lose what the new fact changes; applying %s",
                decision,
                target.id,
                corrected,
            )
            return Operation(
                corrected,
                p.fact,
                target.id if corrected is Decision.INVALIDATE else None,
                reason=f"{decision.value.lower()} that loses a change",
            )
        if decision is Decision.MERGE:
            merged = clean(d.merged_text or "", len(d.merged_text or ""))
            if not worth_reading(merged):
                return Operation(Decision.KEEP, p.fact, reason="merge without text")
            if len(merged) > MAX_FACT_CHARS:  # never cut: both statements stay whole, side by side
                return Operation(
                    Decision.KEEP, p.fact, reason=f"merged text over {MAX_FACT_CHARS} characters"
                )
            if not same_topic(target.text, p.fact.text, p.fact.user_name):
                log.info("a merge into fact %d joins facts about different things; keeping both", target.id)
                return Operation(Decision.KEEP, p.fact, reason="merge of facts about different things")
            if invented_words(target.text, p.fact.text, merged, p.fact.user_name):
                log.info("a merge into fact %d says what neither fact says; keeping both", target.id)
                return Operation(Decision.KEEP, p.fact, reason="merge saying what neither fact says")
            verdict = merge_verdict(target.text, p.fact.text, merged, p.fact.user_name)
            if verdict is not Decision.MERGE:
                log.info("a merge into fact %d %s; applying %s", target.id, MERGE_FAULTS[verdict], verdict)
                return Operation(
                    verdict,
                    p.fact,
                    target.id if verdict is Decision.DUPLICATE else None,
                    reason=f"merge {MERGE_FAULTS[verdict]}",
                )
            return Operation(Decision.MERGE, p.fact, target.id, merged_text=merged, reason=MODEL_DECIDED)
        return Operation(decision, p.fact, target.id, reason=MODEL_DECIDED)


def resolved(op: Operation) -> Operation:
    """The operation as storage applies it, with nothing left for storage to decide.

    A decision on a known fact that names none adds the new fact; a MERGE without merged text keeps
    the new fact beside the old one. A decision on a known fact adds the new fact instead (its
    `fallback`) if that fact is no longer the person's active fact when the plan is written (forgotten
    while the model thought): nothing is left to weigh it against, and it must not be lost.
    """
    if op.decision.has_target and op.target_id is None:
        return replace(op, decision=Decision.ADD)
    if op.decision is Decision.MERGE and not op.merged_text:
        return replace(op, decision=Decision.KEEP, target_id=None)
    if op.decision.has_target:
        return replace(op, fallback=Decision.ADD)
    return op
