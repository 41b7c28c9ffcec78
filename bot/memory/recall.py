"""Who is in the conversation -> their relevant facts -> the escaped `<background_facts>` block.

One query embedding serves everyone; each person's search runs only inside their own (scope, user)
partition: an exact vector KNN within a distance threshold plus FTS5 keyword matches, fused by
reciprocal rank. The vector hits always make it in (the fusion only reorders them and fills free
slots with keyword-only matches), so the hybrid is never worse than the vector search alone.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from bot.llm.gemini import Embedder
from bot.memory.models import Fact, ScoredFact
from bot.memory.store import AsyncStore, Store
from bot.memory.text import xml_safe

log = logging.getLogger(__name__)

RRF_K = 60
FACT_OVERHEAD_TOKENS = 12
USER_OVERHEAD_TOKENS = 16


@dataclass(frozen=True)
class Participant:
    user_id: str
    name: str


@dataclass
class RecallResult:
    block: str
    facts: dict[str, list[ScoredFact]] = field(default_factory=dict)
    elapsed_ms: float = 0.0

    @property
    def fact_ids(self) -> list[int]:
        return [s.fact.id for facts in self.facts.values() for s in facts]


def fuse(vector_hits: list[tuple[Fact, float]], keyword_hits: list[Fact], limit: int) -> list[ScoredFact]:
    """Reciprocal-rank fusion that keeps every vector hit within `limit` and fills the rest by keyword."""
    scored: dict[int, ScoredFact] = {}
    for rank, (fact, distance) in enumerate(vector_hits, start=1):
        scored[fact.id] = ScoredFact(fact, 1.0 / (RRF_K + rank), distance=distance)
    keyword_only: list[ScoredFact] = []
    for rank, fact in enumerate(keyword_hits, start=1):
        bonus = 1.0 / (RRF_K + rank)
        if fact.id in scored:
            s = scored[fact.id]
            scored[fact.id] = ScoredFact(fact, s.score + bonus, s.distance, rank)
        else:
            keyword_only.append(ScoredFact(fact, bonus, None, rank))
    chosen = sorted(scored.values(), key=lambda s: (-s.score, s.fact.id))[:limit]
    chosen += keyword_only[: max(0, limit - len(chosen))]
    return sorted(chosen, key=lambda s: (-s.score, s.fact.id))


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def within_budget(ranked: dict[str, list[ScoredFact]], budget: int) -> dict[str, list[ScoredFact]]:
    """Round-robin over people, best fact first, so everyone gets a fair share of the token budget."""
    chosen: dict[str, list[ScoredFact]] = {uid: [] for uid in ranked}
    spent = sum(USER_OVERHEAD_TOKENS for facts in ranked.values() if facts)
    queues = {uid: list(facts) for uid, facts in ranked.items()}
    while any(queues.values()):
        for uid, queue in queues.items():
            while queue:
                candidate = queue.pop(0)
                cost = estimate_tokens(candidate.fact.text) + FACT_OVERHEAD_TOKENS
                if spent + cost <= budget:
                    chosen[uid].append(candidate)
                    spent += cost
                    break
    return {uid: facts for uid, facts in chosen.items() if facts}


def render_block(people: list[Participant], facts: dict[str, list[ScoredFact]]) -> str:
    """The XML block; every value escaped so that a fact can never close a tag or add markup."""
    if not any(facts.get(p.user_id) for p in people):
        return ""
    lines = ["<background_facts>"]
    for person in people:
        own = facts.get(person.user_id)
        if not own:
            continue
        lines.append(
            f"  <user id={quoteattr(xml_safe(person.user_id))} name={quoteattr(xml_safe(person.name))}>"
        )
        for s in own:
            recorded = quoteattr(s.fact.recorded_at[:10])
            lines.append(
                f'    <fact id="{s.fact.id}" recorded={recorded}>{escape(xml_safe(s.fact.text))}</fact>'
            )
        lines.append("  </user>")
    lines.append("</background_facts>")
    return "\n".join(lines)


def search_people(
    store: Store,
    scope: str,
    user_ids: list[str],
    vector: list[float] | None,
    query: str,
    *,
    limit: int,
    max_distance: float,
    pool: int,
) -> dict[str, list[ScoredFact]]:
    """Runs on the store's thread: every person's hybrid search in one hop."""
    out: dict[str, list[ScoredFact]] = {}
    for uid in user_ids:
        vector_hits = store.knn(scope, uid, vector, pool, max_distance) if vector is not None else []
        keyword_hits = store.keyword_search(scope, uid, query, pool) if query else []
        out[uid] = fuse(vector_hits, keyword_hits, limit)
    return out


class Recaller:
    def __init__(
        self,
        store: AsyncStore,
        embedder: Embedder,
        *,
        facts_per_person: int,
        max_distance: float,
        token_budget: int,
        pool: int = 20,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.facts_per_person = facts_per_person
        self.max_distance = max_distance
        self.token_budget = token_budget
        self.pool = max(pool, facts_per_person)
        self.latencies_ms: list[float] = []

    async def recall(
        self, scope: str, people: list[Participant], query: str, *, vector: list[float] | None = None
    ) -> RecallResult:
        """The facts to show Gemini for this conversation. Embedding errors propagate to the caller.

        `vector`: the query's embedding when the caller already has it (many queries embedded at once).
        """
        started = time.perf_counter()
        people = list({p.user_id: p for p in people}.values())
        if not people:
            return RecallResult("")
        query = query.strip()
        if vector is None and query:
            vector = (await self.embedder.embed([query], "query"))[0]
        ranked = await self.store.call(
            search_people,
            scope,
            [p.user_id for p in people],
            vector,
            query,
            limit=self.facts_per_person,
            max_distance=self.max_distance,
            pool=self.pool,
        )
        chosen = within_budget(ranked, self.token_budget)
        elapsed = (time.perf_counter() - started) * 1000
        self.latencies_ms.append(elapsed)
        del self.latencies_ms[:-1000]
        return RecallResult(render_block(people, chosen), chosen, elapsed)
