"""The chat model's memory lookup (`search_memory`): one person's facts beyond the pre-fetched block.

The block holds what recall found for the message being answered; a question may need more ("what was
Ana's dog called again?" when the block says nothing of a dog). The lookup answers under the block's own
rules, since it runs the same recall with the same `Audience`: only people in the conversation, no
opted-out person, no fact said where the reply's readers cannot read, no sensitive fact of anyone but
the person being answered. An answer is compact and budgeted: fact ids with short texts first, the full
texts of chosen ids on a second call, each within its token budget, so a lookup never costs much more
than the block.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from bot.memory.about import asks_in_general
from bot.memory.models import (
    COMMUNITY_ID,
    COMMUNITY_NAME,
    Episode,
    Fact,
    FactStatus,
    PersonSettings,
    guild_id_of,
    positive_number,
)
from bot.memory.policy import MemoryPolicy
from bot.memory.ports import Storage, StorageWorker
from bot.memory.recall import Audience, Participant, RecallResult, estimate_tokens
from bot.memory.shared import as_said
from bot.memory.text import fold

SEARCH_LIMIT = 10  # facts one search may find
SHORT_CHARS = 80  # a compact result's text is cut here; its full text is one call away
LIST_TOKEN_BUDGET = 300  # what a compact answer may cost the prompt
FULL_TOKEN_BUDGET = 600  # ... and an answer with full texts
ENTRY_OVERHEAD_TOKENS = 8
_IDS = re.compile(r"\d+")
MAX_ARG_CHARS = 300  # of each argument a model passes: a name, a query, a time, the ids
_MENTION = re.compile(r"^<@!?(\d+)>$")
# What a model may call the server when it looks up the community rather than one person.
COMMUNITY_WORDS = frozenset(
    {"server", "the server", "community", "the community", "everyone", "us", "we", "group"}
)


def _text(value: Any) -> str:
    """An argument as text; a number too long to write (past Python's 4,300 digits) as nothing."""
    try:
        return str(value)
    except ValueError:
        return ""


@dataclass(frozen=True)
class LookupRequest:
    """A search_memory call as the model made it: whom, what for, and which facts to read in full."""

    person: str
    query: str = ""
    ids: tuple[int, ...] = ()
    when: str = ""  # a time phrase ("yesterday", "last week") for what a server talked about then

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> LookupRequest:
        """The request from a tool call's arguments, read leniently: ids as a list, numbers or "#12, 15"."""
        raw = args.get("ids") or ""
        listed = " ".join(map(_text, raw)) if isinstance(raw, list) else _text(raw)
        written = _IDS.findall(listed)[: SEARCH_LIMIT * 3]
        ids = tuple(found for i in written if (found := positive_number(i)) is not None)  # no 5,000 digits
        return cls(
            str(args.get("person") or "").strip()[:MAX_ARG_CHARS],
            str(args.get("query") or "").strip()[:MAX_ARG_CHARS],
            ids[:SEARCH_LIMIT],
            str(args.get("when") or "").strip()[:MAX_ARG_CHARS],
        )

    @property
    def about_community(self) -> bool:
        """Whether the lookup is of the server itself (its decisions and conversations), not a person."""
        return fold(self.person).strip(" @") in COMMUNITY_WORDS


class Memory(Protocol):
    """What a lookup needs of memory (`MemoryService` offers it): its recall, which never finds people
    who opted out, their opt-outs and own settings, its store, and whether the server's own memory is
    kept."""

    store: StorageWorker
    policy: MemoryPolicy

    def is_opted_out(self, scope: str, user_id: str) -> bool: ...

    def person(self, scope: str, user_id: str) -> PersonSettings: ...

    async def recall(
        self,
        scope: str,
        people: list[Participant],
        query: str,
        *,
        audience: Audience,
        count_retrievals: bool = True,
        limit: int | None = None,
        community: bool = True,
        about: Collection[str] | None = None,
    ) -> RecallResult: ...


async def search_memory(
    memory: Memory,
    scope: str,
    people: list[Participant],
    request: LookupRequest,
    *,
    audience: Audience,
    shown: Collection[int] = (),
) -> dict[str, Any]:
    """The chat model's lookup (search_memory) of one person in the conversation, under the block's
    rules: the same recall, the same `audience`, opted-out people never. A query gets ids and short
    texts, leaving out the block's `shown` facts (no query, or a general one such as "everything
    about Bob": the person's newest facts, as far as the block did not show them); `request.ids`
    get their full texts."""
    if request.about_community and memory.policy.community and guild_id_of(scope) is not None:
        return await _search_community(memory, scope, request, audience=audience, shown=shown)
    person = find_person(people, request.person)
    if person is None:
        return not_present(people, request.person)
    if memory.is_opted_out(scope, person.user_id) or not memory.person(scope, person.user_id).in_replies:
        return compact_answer(person, [])  # as if nothing were known, like the block
    if request.ids:
        asked = await memory.store.call(facts_by_id, list(request.ids))
        return full_answer(
            person, [f for f in asked if f is not None and readable(f, scope, person, audience)]
        )
    general = asks_in_general(request.query, person.name)  # their newest facts, past the block's
    found = await memory.recall(
        scope,
        [person],
        request.query,
        audience=audience,
        limit=SEARCH_LIMIT + (len(shown) if general else 0),
        community=False,
        about=[person.user_id] if general else (),
    )
    facts = [s.fact for s in found.facts.get(person.user_id, [])]
    return compact_answer(person, facts, shown=shown)


async def _search_community(
    memory: Memory, scope: str, request: LookupRequest, *, audience: Audience, shown: Collection[int]
) -> dict[str, Any]:
    """search_memory of the server itself: its community facts and the episodes of its conversations
    (of the time `request.when` or the query names), under the block's audience."""
    query = " ".join(x for x in (request.query, request.when) if x)
    found = await memory.recall(
        scope,
        [],
        query or "what was discussed",
        audience=audience,
        limit=SEARCH_LIMIT,
        count_retrievals=False,
    )
    return community_answer(
        [s.fact for s in found.facts.get(COMMUNITY_ID, [])],
        found.episodes,
        shown=shown,
        authors=found.authors,
    )


def find_person(people: Sequence[Participant], person: str) -> Participant | None:
    """Who `person` names among the people in the conversation: by id or mention, by name (case and
    accents aside, an "@" before it allowed), else by the one name it begins."""
    wanted = person.strip().removeprefix("@")
    mention = _MENTION.match(person.strip())
    if mention is not None:
        wanted = mention.group(1)
    for p in people:
        if wanted == p.user_id:
            return p
    folded = fold(wanted)
    if not folded:
        return None
    exact = [p for p in people if fold(p.name) == folded]
    if exact:
        return exact[0]
    starting = [p for p in people if fold(p.name).startswith(folded)]
    return starting[0] if len(starting) == 1 else None


def short(text: str) -> str:
    return text if len(text) <= SHORT_CHARS else text[: SHORT_CHARS - 1].rstrip() + "…"


def budgeted(entries: list[dict[str, Any]], budget: int) -> tuple[list[dict[str, Any]], int]:
    """The entries that fit in `budget` tokens, in order, and how many were left out."""
    kept: list[dict[str, Any]] = []
    spent = 0
    for entry in entries:
        cost = estimate_tokens(str(entry.get("text", ""))) + ENTRY_OVERHEAD_TOKENS
        if spent + cost > budget:
            break
        kept.append(entry)
        spent += cost
    return kept, len(entries) - len(kept)


def compact_answer(
    person: Participant, facts: Sequence[Fact], *, shown: Collection[int] = ()
) -> dict[str, Any]:
    """Ids and short texts, best first, within LIST_TOKEN_BUDGET; facts already in the block (`shown`)
    are not repeated."""
    new = [f for f in facts if f.id not in shown]
    entries, left_out = budgeted([{"id": f.id, "text": short(f.text)} for f in new], LIST_TOKEN_BUDGET)
    answer: dict[str, Any] = {"person": person.name, "facts": entries}
    if any(e["text"].endswith("…") for e in entries):
        answer["hint"] = "texts ending in … are cut: call again with their ids for the full texts"
    if left_out:
        answer["more"] = f"{left_out} more matched; a narrower query finds them"
    if not entries:
        answer["hint"] = (
            "what matched is already in the background block"
            if len(new) < len(facts)
            else "nothing remembered about that; say so rather than guess"
        )
    return answer


def full_answer(person: Participant, facts: Sequence[Fact]) -> dict[str, Any]:
    """The full texts of the facts asked for, with the day each was said, within FULL_TOKEN_BUDGET."""
    entries, left_out = budgeted(
        [{"id": f.id, "text": f.text, "said": f.said[:10]} for f in facts], FULL_TOKEN_BUDGET
    )
    answer: dict[str, Any] = {"person": person.name, "facts": entries}
    if left_out:
        answer["more"] = f"{left_out} more did not fit; ask for fewer ids"
    return answer


def readable(fact: Fact | None, scope: str, person: Participant, audience: Audience) -> bool:
    """Whether a fact asked for by id may be shown: the person's own, active, in this scope, and one the
    reply's audience may hear (the block's rule)."""
    return (
        fact is not None
        and fact.scope == scope
        and fact.user_id == person.user_id
        and fact.status == FactStatus.ACTIVE
        and audience.allows(fact)
    )


def community_answer(
    facts: Sequence[Fact],
    episodes: Sequence[Episode],
    *,
    shown: Collection[int] = (),
    authors: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The server's community facts (ids and short texts, as for a person; a member's word says whose,
    `shared.as_said` with `authors`' names) and the episodes of its conversations (channel, span and
    summary), within LIST_TOKEN_BUDGET together."""
    said = [replace(f, text=as_said(f, authors or {})) for f in facts]
    answer = compact_answer(Participant(COMMUNITY_ID, COMMUNITY_NAME), said, shown=shown)
    room = LIST_TOKEN_BUDGET - sum(
        estimate_tokens(e["text"]) + ENTRY_OVERHEAD_TOKENS for e in answer["facts"]
    )
    entries, left_out = budgeted(
        [
            {
                "channel": f"<#{e.origin.channel_id}>",
                "from": e.started_at[:16].replace("T", " "),
                "to": e.ended_at[:16].replace("T", " "),
                "text": e.summary,
            }
            for e in episodes
        ],
        max(room, 0),
    )
    answer["conversations"] = entries
    if entries and not answer["facts"]:
        answer.pop("hint", None)
    if left_out:
        answer["more"] = f"{left_out} more conversations matched; a narrower query or time finds them"
    return answer


def not_present(people: Sequence[Participant], person: str) -> dict[str, Any]:
    names = ", ".join(p.name for p in people) or "nobody"
    return {
        "error": f"{person or 'that person'} is not in this conversation; only its people can be looked up: {names}"
    }


def facts_by_id(store: Storage, ids: Sequence[int]) -> list[Fact | None]:
    """Runs on the store's thread: the facts of these ids (None where there is none), in one hop."""
    return [store.get_fact(i) for i in ids]
