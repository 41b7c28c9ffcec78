"""Who is in the conversation -> their relevant facts -> the escaped `<background_facts>` block.

One query embedding serves everyone; each person's search runs only inside their own (scope, user)
partition: an exact vector KNN within a distance threshold plus FTS5 keyword matches, fused by score
(a vector hit's similarity, plus a keyword bonus by rank). The vector hits always make it in (the
fusion only reorders them and fills free slots with keyword-only matches), so the hybrid is never
worse than the vector search alone. A person the message asks about in general ("what do you know
about Carol?", `about.py`) is not searched for: their newest facts are their hits, and fill the budget
first.

Before fusion every hit passes the reply's `Audience`: a fact serves only people who could have read
where it was said, and a sensitive fact only its owner. The searches run on the store's thread; the
audience check runs on the event loop, since it reads the Discord cache.
"""

from __future__ import annotations

import logging
import math
import re
import statistics
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol
from xml.sax.saxutils import escape, quoteattr

from bot.memory.about import asked_about
from bot.memory.model_ports import Embedder
from bot.memory.models import COMMUNITY_ID, Episode, Fact, ScoredFact, guild_id_of, iso, utcnow
from bot.memory.ports import Storage, StorageWorker
from bot.memory.shared import point_links, said_by, served_episode, served_fact
from bot.memory.text import xml_safe
from bot.memory.timespan import Span, time_span

log = logging.getLogger(__name__)

KEYWORD_WEIGHT = 0.3  # RECALL_KEYWORD_WEIGHT's default; see fuse()
CONTEXT_WEIGHT = 0.3  # RECALL_CONTEXT_WEIGHT's default; see blend()
_NAME_WORDS = re.compile(r"\w+", re.UNICODE)
FACT_OVERHEAD_TOKENS = 12
USER_OVERHEAD_TOKENS = 16
EPISODES_PER_REPLY = 3


@dataclass(frozen=True)
class Participant:
    user_id: str
    name: str


@dataclass(frozen=True)
class Audience:
    """Who will read a reply, which decides the facts that may be put in front of the model for it.

    `owner_id`: the person being answered, the only one whose sensitive facts may be used.
    `can_read(key)`: whether everyone who reads the reply could read the channel a fact was said in
    (an `Origin.audience_key`). None means a private place of the owner's (their DMs), where every
    fact of theirs may be used. `unrestricted` is for the operator's own tools.
    """

    owner_id: str | None
    can_read: Callable[[str], bool] | None = None
    unrestricted: bool = False

    @classmethod
    def operator(cls) -> Audience:
        return cls(None, None, unrestricted=True)

    def allows(self, fact: Heard) -> bool:
        if self.unrestricted:
            return True
        if fact.sensitive and fact.user_id != self.owner_id:
            return False
        if self.can_read is None:
            return True
        keys = fact.audience_keys  # None: where it was said is not known, so it serves no channel
        return keys is not None and all(self.can_read(key) for key in keys)


class Heard(Protocol):
    """What the audience rule reads of anything it may show: a fact, a community fact, an episode."""

    @property
    def user_id(self) -> str: ...
    @property
    def sensitive(self) -> bool: ...
    @property
    def audience_keys(self) -> frozenset[str] | None: ...


@dataclass
class RecallResult:
    """The block, and what is in it: people's facts by user id (the community's under COMMUNITY_ID)
    and the conversations' episodes."""

    block: str
    facts: dict[str, list[ScoredFact]] = field(default_factory=dict)
    elapsed_ms: float = 0.0
    episodes: list[Episode] = field(default_factory=list)
    authors: dict[str, str] = field(default_factory=dict)  # names of the shared memory's authors, by id

    @property
    def fact_ids(self) -> list[int]:
        return [s.fact.id for facts in self.facts.values() for s in facts]


def fuse(
    vector_hits: list[tuple[Fact, float]],
    keyword_hits: list[Fact],
    limit: int,
    keyword_weight: float = KEYWORD_WEIGHT,
) -> list[ScoredFact]:
    """Score-based fusion: a vector hit scores its similarity (1 - cosine distance), a keyword hit adds
    `keyword_weight / rank`. A close vector hit keeps its place unless keywords back a nearly as close
    one; a keyword-only hit comes in ahead of vector hits only as far as its weight beats their
    similarity (weights: docs/benchmarks.md, tuned with bench/recall_quality.py)."""
    # (fact, score, distance, keyword rank) by fact id; a ScoredFact only for the `limit` kept.
    scored: dict[int, tuple[Fact, float, float | None, int | None]] = {}
    for fact, distance in vector_hits:
        scored[fact.id] = (fact, 1.0 - distance, distance, None)
    for rank, fact in enumerate(keyword_hits, start=1):
        bonus = keyword_weight / rank
        s = scored.get(fact.id)
        scored[fact.id] = (fact, bonus, None, rank) if s is None else (fact, s[1] + bonus, s[2], rank)
    best = sorted(scored.values(), key=lambda s: (-s[1], s[0].id))[:limit]
    return [ScoredFact(fact, score, distance, rank) for fact, score, distance, rank in best]


def name_words(name: str) -> list[str]:
    """The words of a person's name: in all of their facts, so they tell a keyword search nothing."""
    return _NAME_WORDS.findall(name)


def blend(message: list[float], context: list[float], context_weight: float) -> list[float]:
    """The query vector: the message being answered, leaned towards the talk before it by `context_weight`.

    Embedding the joined turns gave each turn an equal say, so a question after two lines of small talk
    found facts about the small talk; the message itself now dominates, and a short follow-up ("and
    her?") still borrows its subject from the context.
    """
    mixed = [(1 - context_weight) * a + context_weight * b for a, b in zip(message, context, strict=True)]
    norm = math.sqrt(sum(x * x for x in mixed)) or 1.0
    return [x / norm for x in mixed]


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def within_budget(
    ranked: dict[str, list[ScoredFact]], budget: int, first: Collection[str] = ()
) -> dict[str, list[ScoredFact]]:
    """Round-robin over people (and the community), best fact first, so everyone gets a fair share of
    the token budget; the people the message asks about (`first`) fill it before the others."""
    chosen: dict[str, list[ScoredFact]] = {uid: [] for uid in ranked}
    spent = sum(USER_OVERHEAD_TOKENS for facts in ranked.values() if facts)
    for turn in (True, False):
        queues = {uid: list(facts) for uid, facts in ranked.items() if (uid in first) is turn}
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


def learned_in(fact: Fact) -> str | None:
    """Where a server fact was said, as a channel mention Discord shows as a link ('<#123>'), so that
    "where did you learn that?" has an answer; None in DMs and when it is not known."""
    if not fact.scope.startswith("guild:"):
        return None
    for source in fact.sources:
        if not source.confirms and source.origin is not None:
            return f"<#{source.origin.channel_id}>"
    return None


def render_block(
    people: list[Participant],
    facts: dict[str, list[ScoredFact]],
    episodes: Sequence[Episode] = (),
    authors: Mapping[str, str] | None = None,
) -> str:
    """The XML block; every value escaped so that a fact can never close a tag or add markup.

    People's facts under `<user>`, the server's own under `<community>` (newest said first: when a rule or
    a date changed, the newer fact is the one in force), each fact with the day it was said (`said`), each
    community fact with `voice="server"` or whose word it is
    (`said_by`, from `authors`: names by user id), what conversations were about under `<episodes>`,
    point by point, each with a link to the message it comes from.
    """
    community = sorted(facts.get(COMMUNITY_ID, []), key=lambda s: s.fact.said, reverse=True)
    if not any(facts.get(p.user_id) for p in people) and not community and not episodes:
        return ""
    lines = ["<background_facts>"]
    for person in people:
        own = facts.get(person.user_id)
        if not own:
            continue
        lines.append(
            f"  <user id={quoteattr(xml_safe(person.user_id))} name={quoteattr(xml_safe(person.name))}>"
        )
        lines += [_fact_line(s.fact) for s in own]
        lines.append("  </user>")
    if community:
        lines.append("  <community>")
        lines += [_fact_line(s.fact, said_by(s.fact, authors or {})) for s in community]
        lines.append("  </community>")
    if episodes:
        lines.append("  <episodes>")
        for e in episodes:
            span = f"from={quoteattr(e.started_at[:16].replace('T', ' '))} to={quoteattr(e.ended_at[:16].replace('T', ' '))}"
            where = quoteattr(f"<#{e.origin.channel_id}>")
            lines.append(f'    <episode id="{e.id}" channel={where} {span}>')
            for point, link in zip(e.points, point_links(e), strict=True):
                source = f" source={quoteattr(link)}" if link else ""
                lines.append(f"      <point{source}>{escape(xml_safe(point.text))}</point>")
            lines.append("    </episode>")
        lines.append("  </episodes>")
    lines.append("</background_facts>")
    return "\n".join(lines)


def _fact_line(fact: Fact, who: str | None = None) -> str:
    said = quoteattr(fact.said[:10])  # the day it was said: yesterday's decision reads newer than last week's
    where = learned_in(fact)
    where_attr = f" learned_in={quoteattr(where)}" if where else ""
    if fact.user_id == COMMUNITY_ID:
        where_attr += f" said_by={quoteattr(xml_safe(who))}" if who else ' voice="server"'
    return f'    <fact id="{fact.id}" said={said}{where_attr}>{escape(xml_safe(fact.text))}</fact>'


Hits = tuple[list[tuple[Fact, float]], list[Fact]]


def gather_hits(
    store: Storage,
    scope: str,
    user_ids: list[str],
    vector: list[float] | None,
    query: str,
    *,
    max_distance: float,
    pool: int,
    names: dict[str, str] | None = None,
    recent: Collection[str] = (),
    newest: int = 0,
) -> dict[str, Hits]:
    """Runs on the store's thread: every person's vector and keyword hits in one hop.

    `names`: each person's name, left out of their keyword search (all their facts start with it).
    `recent`: the people a message asks about in general: their `newest` facts, most recently stated or
    confirmed first, are their only hits (in the keyword list, which fusion keeps in order), and pass
    the audience and the budget as any hits do.
    """
    out: dict[str, Hits] = {}
    for uid in user_ids:
        if uid in recent:
            out[uid] = ([], store.recent_facts(scope, uid, newest))
            continue
        ignore = name_words((names or {}).get(uid, ""))
        out[uid] = store.person_hits(
            scope, uid, vector, query, pool=pool, max_distance=max_distance, ignore=ignore
        )
    return out


def gather_episodes(
    store: Storage,
    scope: str,
    vector: list[float] | None,
    span: Span | None,
    *,
    max_distance: float,
    pool: int,
    channels: tuple[str, ...] = (),
) -> list[Episode]:
    """Runs on the store's thread: the scope's episodes nearest the query, within the question's time
    span when it names one (then whatever their topic, nearest first), best first; of the `channels` it
    names, their newest."""
    if channels:  # "what did I miss in #general?": that channel's newest, of the span if one is named
        since, until = (iso(span[0]), iso(span[1])) if span else (None, None)
        found = store.list_episodes(scope, channel_ids=channels, since=since, limit=pool)
        return [e for e in found if until is None or e.started_at < until]
    if span is not None:
        since, until = iso(span[0]), iso(span[1])
        if vector is None:
            return store.episodes_between(scope, since, until, pool)
        return [e for e, _ in store.episodes_near(scope, vector, pool, since=since, until=until)]
    if vector is None:
        return []
    return [e for e, _ in store.episodes_near(scope, vector, pool, max_distance=max_distance)]


def gather_recall(
    store: Storage,
    scope: str,
    user_ids: list[str],
    vector: list[float] | None,
    query: str,
    span: Span | None,
    *,
    max_distance: float,
    pool: int,
    names: dict[str, str],
    episodes: bool,
    channels: tuple[str, ...] = (),
    recent: Collection[str] = (),
    newest: int = 0,
) -> tuple[dict[str, Hits], list[Episode], dict[str, str]]:
    """Runs on the store's thread: everyone's hits (the `recent` people's `newest` facts) and
    (`episodes`) the episodes, in one hop, without what people who opted out said in shared memory;
    with the names of the authors of what is left (`withhold_opted_out`)."""
    hits = gather_hits(
        store,
        scope,
        user_ids,
        vector,
        query,
        max_distance=max_distance,
        pool=pool,
        names=names,
        recent=recent,
        newest=newest,
    )
    found = (
        gather_episodes(store, scope, vector, span, max_distance=max_distance, pool=pool, channels=channels)
        if episodes
        else []
    )
    return withhold_opted_out(store, scope, hits, found)


def withhold_opted_out(
    store: Storage, scope: str, hits: dict[str, Hits], episodes: list[Episode]
) -> tuple[dict[str, Hits], list[Episode], dict[str, str]]:
    """Runs on the store's thread: the community's hits and the episodes without what people who opted
    out said (`shared.served_fact`, `served_episode`), and the names of the authors left, by id (whose
    word a community fact is). Reads the store only when there is shared memory to serve."""
    community = hits.get(COMMUNITY_ID)
    facts = [f for f, _ in community[0]] + community[1] if community else []
    authors = {a for f in facts for a in f.authors} | {a for e in episodes for a in e.participants}
    if not authors:
        return hits, episodes, {}
    out = store.opted_out_among(scope, authors)
    if community and out:
        vector_hits, keyword_hits = community
        hits = {
            **hits,
            COMMUNITY_ID: (
                [(f, d) for f, d in vector_hits if served_fact(f, out)],
                [f for f in keyword_hits if served_fact(f, out)],
            ),
        }
    kept = [e for e in (served_episode(episode, out) for episode in episodes) if e is not None]
    return hits, kept, store.user_names(scope, authors - out)


def fuse_allowed(
    hits: Hits, audience: Audience, limit: int, keyword_weight: float = KEYWORD_WEIGHT
) -> list[ScoredFact]:
    """The audience's facts among one person's hits, fused."""
    vector_hits, keyword_hits = hits
    return fuse(
        [(f, d) for f, d in vector_hits if audience.allows(f)],
        [f for f in keyword_hits if audience.allows(f)],
        limit,
        keyword_weight,
    )


def search_people(
    store: Storage,
    scope: str,
    user_ids: list[str],
    vector: list[float] | None,
    query: str,
    *,
    limit: int,
    max_distance: float,
    pool: int,
    names: dict[str, str] | None = None,
    keyword_weight: float = KEYWORD_WEIGHT,
) -> dict[str, list[ScoredFact]]:
    """Every person's hybrid search as the operator sees it (no audience), on the store's thread."""
    hits = gather_hits(
        store, scope, user_ids, vector, query, max_distance=max_distance, pool=pool, names=names
    )
    return {uid: fuse_allowed(h, Audience.operator(), limit, keyword_weight) for uid, h in hits.items()}


class Recaller:
    def __init__(
        self,
        store: StorageWorker,
        embedder: Embedder,
        *,
        facts_per_person: int,
        max_distance: float,
        token_budget: int,
        pool: int = 20,
        keyword_weight: float = KEYWORD_WEIGHT,
        context_weight: float = CONTEXT_WEIGHT,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.facts_per_person = facts_per_person
        self.max_distance = max_distance
        self.token_budget = token_budget
        self.pool = max(pool, facts_per_person)
        self.keyword_weight = keyword_weight
        self.context_weight = context_weight
        self.latencies_ms: list[float] = []

    def latency_ms(self) -> dict[str, float]:
        """p50 and p95 of the last recalls' times, for the admins' stats."""
        samples = sorted(self.latencies_ms)
        if not samples:
            return {"p50": 0.0, "p95": 0.0, "samples": 0}
        q = statistics.quantiles(samples, n=100, method="inclusive") if len(samples) > 1 else samples * 99
        return {"p50": round(q[49], 2), "p95": round(q[94], 2), "samples": len(samples)}

    async def recall(
        self,
        scope: str,
        people: list[Participant],
        query: str,
        *,
        audience: Audience,
        context: str = "",
        vector: list[float] | None = None,
        limit: int | None = None,
        community: bool = True,
        now: datetime | None = None,
        channels: Collection[str] = (),
        about: Collection[str] | None = None,
    ) -> RecallResult:
        """The facts the audience may hear for this conversation. Embedding errors propagate to the caller.

        `query`: the message being answered; `context`: the turns before it, which lean the search towards
        the talk (`blend`) and add keywords after the message's own. Both are embedded in one request.
        `vector`: the query's embedding when the caller already has it (many queries embedded at once).
        `limit`: facts per person, when not RECALL_FACTS_PER_PERSON (the model's own lookups).
        `community`: in a server, also the server's community facts and the episodes of its conversations
        (of the time the query names, `timespan`; of the `channels` it names, newest first), under the
        same audience rule and budget.
        `about`: the people asked about in general, whose newest facts (most recently stated or
        confirmed first) fill the budget before anyone else's, instead of a search for the query; None:
        those the query asks about (`about.asked_about`: "what do you know about Carol?").
        """
        started = time.perf_counter()
        people = list({p.user_id: p for p in people}.values())
        community = community and guild_id_of(scope) is not None
        if not people and not community:
            return RecallResult("")
        query, context = query.strip(), context.strip()
        if about is None:
            about = asked_about(query, {p.user_id: p.name for p in people})
        most = self.token_budget // FACT_OVERHEAD_TOKENS  # the most facts the budget could ever hold
        searched = community or any(p.user_id not in about for p in people)  # else no vector is read
        if vector is None and (query or context) and searched:
            vector = await self.query_vector(query, context)
        span = time_span(query, now or utcnow()) if community else None
        if context:
            query = f"{query}\n{context}".strip()
        owners = [p.user_id for p in people] + ([COMMUNITY_ID] if community else [])
        hits, found, authors = await self.store.call(
            gather_recall,
            scope,
            owners,
            vector,
            query,
            span if community else None,
            max_distance=self.max_distance,
            pool=max(self.pool, limit or 0),
            names={p.user_id: p.name for p in people},
            episodes=community,
            channels=tuple(channels),
            recent=tuple(about),
            newest=max(most, limit or 0),
        )
        ranked = {
            uid: fuse_allowed(
                h, audience, limit or (most if uid in about else self.facts_per_person), self.keyword_weight
            )
            for uid, h in hits.items()
        }
        episodes = self._episodes_within(found, audience)
        spent = sum(estimate_tokens(e.summary) + FACT_OVERHEAD_TOKENS for e in episodes)
        chosen = within_budget(ranked, self.token_budget - spent, first=about)
        elapsed = (time.perf_counter() - started) * 1000
        self.latencies_ms.append(elapsed)
        del self.latencies_ms[:-1000]
        block = render_block(people, chosen, episodes, authors)
        return RecallResult(block, chosen, elapsed, episodes, authors)

    def _episodes_within(self, found: list[Episode], audience: Audience) -> list[Episode]:
        """The audience's episodes among those found, best first, at most EPISODES_PER_REPLY and a
        third of the token budget (people's facts keep the rest)."""
        chosen: list[Episode] = []
        spent = 0
        for episode in (e for e in found if audience.allows(e)):
            cost = estimate_tokens(episode.summary) + FACT_OVERHEAD_TOKENS
            if len(chosen) < EPISODES_PER_REPLY and spent + cost <= self.token_budget // 3:
                chosen.append(episode)
                spent += cost
        return chosen

    async def query_vector(self, message: str, context: str) -> list[float]:
        """One embedding request for the message and its context, blended so the message dominates."""
        texts = [t for t in (message, context) if t]
        vectors = await self.embedder.embed(texts, "query")
        if len(vectors) == 1:
            return vectors[0]
        return blend(vectors[0], vectors[1], self.context_weight)
