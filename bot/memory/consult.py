"""Memory for a client outside the chat (an MCP agent): recall, read, remember and forget, bound to one
audience.

A `Reader` is fixed when a session starts and never widens: one scope; the people's facts it may read
under one `Audience` (a channel's readers, or one person's private view of their own facts); the
server's own memory (community facts, episodes) under another, or none. There is no reader that sees
everything. Every answer runs through the engine's own recall, with the same audience rule, sensitive
facts, opt-outs and the server's memory switch as a reply; remember and forget are the person's own
`/remember` and `/forget`, for a reader that is one person. Answers are JSON-ready and budgeted like the
chat model's lookups (`lookup.py`): short texts first, full texts on request.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.memory.lookup import budgeted, facts_by_id, short
from bot.memory.models import (
    COMMUNITY_ID,
    COMMUNITY_NAME,
    Decision,
    Episode,
    Fact,
    FactStatus,
    Origin,
    guild_id_of,
    is_discord_id,
    positive_number,
)
from bot.memory.recall import Audience, Participant, RecallResult
from bot.memory.remembering import RememberRequest
from bot.memory.service import MemoryService
from bot.memory.shared import as_said, point_links, served_fact
from bot.memory.switches import Reason

RECALL_LIMIT = 10  # facts per person one recall may find
RECALL_TOKEN_BUDGET = 500  # what a compact answer may cost the client's context
FULL_TOKEN_BUDGET = 1500  # ... and an answer with full texts, or a recap
MAX_IDS = 20
RECAP_LIMIT = 50
LIST_PAGE = 20  # a person's facts one page lists, unless the client asks for fewer or more
LIST_PAGE_MOST = 50
# Where a remembered fact was "said": told through MCP, never a Discord channel, so in a server it serves
# no channel's replies (only its owner's own sessions and /facts), as a fact of unknown origin.
MCP_ORIGIN = Origin("mcp")
TOLD_THROUGH_MCP = "told through MCP"
_ID = re.compile(r"^\s*(?:#|f|fact[- ]?)?(\d+)\s*$", re.IGNORECASE)
_EPISODE_ID = re.compile(r"^\s*(?:e|episode[- ]?)(\d+)\s*$", re.IGNORECASE)


class ConsultError(ValueError):
    """A request this reader cannot make (bad arguments, a tool its audience does not allow): said to
    the client in one line."""


@dataclass(frozen=True)
class Reader:
    """Who reads, fixed for a whole session.

    `audience`: the rule for people's facts. `person`: the one person a session of theirs reads (only
    their facts, sensitive ones included; remember and forget act on them), None for a channel's readers.
    `community`: the rule for the server's community facts and episodes, None when the session may read
    none. `channel_name`: how a channel id is shown ("#general" where the front-end knows it).
    """

    scope: str
    audience: Audience
    person: Participant | None = None
    community: Audience | None = None
    channel_name: Callable[[str], str] = field(default=lambda channel_id: f"<#{channel_id}>")


def parse_ids(raw: Sequence[int | str]) -> tuple[list[int], list[int]]:
    """Fact and episode ids as recall shows them ("f12", "#12", 12; "e7"), at most MAX_IDS."""
    if not raw:
        raise ConsultError("ids is empty: give the ids recall returned, such as f12 or e7")
    if len(raw) > MAX_IDS:
        raise ConsultError(f"at most {MAX_IDS} ids at a time")
    facts: list[int] = []
    episodes: list[int] = []
    for item in raw:
        text = str(item) if not isinstance(item, int) or item.bit_length() < 64 else "0"  # past 2^63: none
        match = _EPISODE_ID.match(text) or _ID.match(text)
        number = positive_number(match.group(1)) if match is not None else None
        if number is None:
            shown = text if len(text) <= 40 else text[:40] + "…"
            raise ConsultError(
                f"{shown!r} is not an id: ids are as recall returns them, f12 for a fact, e7 for a conversation"
            )
        (episodes if _EPISODE_ID.match(text) else facts).append(number)
    return facts, episodes


def not_here(service: MemoryService, reader: Reader, person: Participant | None = None) -> str | None:
    """Why nothing is read or written here (memory switched off in the server), or with `person`,
    nothing remembered of them (they opted out); None when it may be. The switch is said first."""
    guild = guild_id_of(reader.scope)
    where = None if guild is None else str(guild)
    refused = service.not_here(where)
    if refused is None and person is not None:
        refused = service.not_here(where, person=(reader.scope, person.user_id))
    return None if refused is None else _NOT_HERE[refused.reason]


_NOT_HERE = {
    Reason.MEMORY_OFF: "memory is switched off in this server: nothing is recalled or remembered",
    Reason.OPTED_OUT: "this person opted out of being remembered here (/memory optin undoes it)",
}


async def recall(
    service: MemoryService,
    reader: Reader,
    query: str,
    people: Sequence[Participant] = (),
    *,
    since: str | None = None,
) -> dict[str, Any]:
    """Compact hits for `query`: people's facts (of `people`; a person's session: theirs) and, where the
    reader may, the server's community facts and conversations; ids, short texts, where and when, best
    first within RECALL_TOKEN_BUDGET. `since` (an ISO time) keeps what was recorded or ended after it."""
    query = query.strip()
    if not query:
        raise ConsultError("query is empty: say what to look for")
    if (off := not_here(service, reader)) is not None:
        return {"facts": [], "conversations": [], "note": off}
    if reader.person is not None:
        people = [reader.person]
    [vector] = await service.embed_queries([query])
    facts: list[Fact] = []
    if people:
        found = await service.recall(
            reader.scope,
            list(people),
            query,
            audience=reader.audience,
            vector=vector,
            limit=RECALL_LIMIT,
            community=False,
            count_retrievals=False,
        )
        facts = _best_first(found)
    episodes: list[Episode] = []
    if reader.community is not None and service.policy.community:
        server = await service.recall(
            reader.scope, [], query, audience=reader.community, vector=vector, limit=RECALL_LIMIT,
            count_retrievals=False,
        )  # fmt: skip
        facts += _best_first(server)
        episodes = server.episodes
    if since is not None:
        facts = [f for f in facts if f.recorded_at >= since]
        episodes = [e for e in episodes if e.ended_at >= since]
    names = await _names(service, reader, facts)
    entries = [_fact_entry(f, names, reader, full=False) for f in facts]
    entries += [_episode_entry(e, reader, full=False) for e in episodes]
    kept, left_out = budgeted(entries, RECALL_TOKEN_BUDGET)
    answer: dict[str, Any] = {"results": kept}
    if any(str(e["text"]).endswith("…") for e in kept):
        answer["hint"] = "texts ending in … are cut: get(ids) gives the full texts with where they were said"
    if left_out:
        answer["more"] = f"{left_out} more matched; a narrower query finds them"
    if not kept:
        answer["note"] = "nothing remembered about that here" + _nothing_found_hint(reader, people)
    return answer


def _nothing_found_hint(reader: Reader, people: Sequence[Participant]) -> str:
    """Where to look instead, after a recall that found nothing."""
    if reader.person is not None:
        return "; list_my_facts lists everything remembered about this person"
    if people or reader.community is not None:
        return ""
    return "; name people to search their facts"


def _best_first(found: RecallResult) -> list[Fact]:
    """The facts of a recall, each person's best first, people in turn (as the block lists them)."""
    return [s.fact for scored in found.facts.values() for s in scored]


async def get(service: MemoryService, reader: Reader, ids: Sequence[int | str]) -> dict[str, Any]:
    """The full texts of facts and conversations by id, with where and when they were said; an id this
    reader may not read is answered as if it did not exist."""
    fact_ids, episode_ids = parse_ids(ids)
    if (off := not_here(service, reader)) is not None:
        return {"results": [], "note": off}
    facts = [f for f in await service.store.call(facts_by_id, fact_ids) if f is not None]
    facts = [f for f in facts if _readable(service, reader, f)]
    episodes = [e for i in episode_ids if (e := await service.episode(reader.scope, i)) is not None]
    episodes = [e for e in episodes if reader.community is not None and reader.community.allows(e)]
    names = await _names(service, reader, facts)
    entries = [_fact_entry(f, names, reader, full=True) for f in facts]
    entries += [_episode_entry(e, reader, full=True) for e in episodes]
    kept, left_out = budgeted(entries, FULL_TOKEN_BUDGET)
    answer: dict[str, Any] = {"results": kept}
    found = {f"f{f.id}" for f in facts} | {f"e{e.id}" for e in episodes}
    missing = [f"f{i}" for i in fact_ids if f"f{i}" not in found]
    missing += [f"e{i}" for i in episode_ids if f"e{i}" not in found]
    if missing:
        answer["not_found"] = missing
    if left_out:
        answer["more"] = f"{left_out} more did not fit; ask for fewer ids"
    return answer


def _readable(service: MemoryService, reader: Reader, fact: Fact) -> bool:
    """The rule of recall for a fact asked for by id: this scope, active, an owner who has not opted
    out, seen by this reader (a person's session: theirs only) under its audience."""
    if fact.scope != reader.scope or fact.status != FactStatus.ACTIVE:
        return False
    if fact.user_id == COMMUNITY_ID:  # and not made of the words of someone who opted out
        allowed = reader.community is not None and service.policy.community and reader.community.allows(fact)
        return allowed and served_fact(fact, service.withheld(fact.scope))
    if reader.person is not None and fact.user_id != reader.person.user_id:
        return False
    return not service.is_opted_out(fact.scope, fact.user_id) and reader.audience.allows(fact)


async def recap(
    service: MemoryService, reader: Reader, *, channel_ids: Sequence[str] | None, since: str
) -> dict[str, Any]:
    """The server's conversations since `since` (of `channel_ids` and their public threads), newest
    first, whole summaries within FULL_TOKEN_BUDGET, those this reader may read only."""
    if reader.community is None or guild_id_of(reader.scope) is None:
        raise ConsultError(
            "no recap here: conversations are remembered in servers, and this session reads none"
        )
    if not service.policy.community:
        return {
            "conversations": [],
            "note": "the server's memory of conversations is switched off (MEMORY_COMMUNITY)",
        }
    if (off := not_here(service, reader)) is not None:
        return {"conversations": [], "note": off}
    listed = await service.list_episodes(
        reader.scope, channel_ids=channel_ids, since=since, limit=RECAP_LIMIT
    )
    audience = reader.community
    kept, left_out = budgeted(
        [_episode_entry(e, reader, full=True) for e in listed if audience.allows(e)], FULL_TOKEN_BUDGET
    )
    answer: dict[str, Any] = {"conversations": kept}
    if left_out:
        answer["more"] = f"{left_out} more; a later `since` or one channel shows them"
    if not kept:
        answer["note"] = "no conversation remembered here since then"
    return answer


async def list_own(service: MemoryService, reader: Reader, *, page: int, size: int) -> dict[str, Any]:
    """`/facts` for the reader's person: their active facts here, newest first, one page of `size`
    (1-based `page`), full texts, with the total and the next page while there is one."""
    person = _person(reader, "list_my_facts")
    if (off := not_here(service, reader)) is not None:
        return {"facts": [], "total": 0, "note": off}
    total = await service.count_facts(reader.scope, person.user_id)
    listed = await service.list_facts(reader.scope, person.user_id, limit=size, offset=(page - 1) * size)
    facts = [f for f in listed if _readable(service, reader, f)]
    names = await _names(service, reader, facts)
    entries = [{**_fact_entry(f, names, reader, full=False), "text": as_said(f, names)} for f in facts]
    pages = max(1, -(-total // size))
    answer: dict[str, Any] = {"facts": entries, "page": page, "pages": pages, "total": total}
    if page < pages:
        answer["next_page"] = page + 1
    if not total:
        answer["note"] = "nothing remembered about this person here yet"
    elif not entries:
        answer["note"] = f"page {page} is past the last ({pages})"
    return answer


async def remember(service: MemoryService, reader: Reader, text: str) -> dict[str, Any]:
    """`/remember` for the reader's person: their own words, kept as their facts (sensitive ones too,
    since they asked in so many words), consolidated with what is known of them."""
    person = _person(reader, "remember")
    if not text.strip():
        raise ConsultError("text is empty: say what to remember, in the person's own words")
    if (off := not_here(service, reader, person)) is not None:
        return {"stored": [], "note": off}
    result = await service.remember_now(
        RememberRequest(
            reader.scope,
            person.user_id,
            person.name,
            text,
            message_id=f"mcp-{uuid.uuid4().hex}",  # never digits: no Discord deletion can match it
            origin=MCP_ORIGIN,
        )
    )
    stored = [
        {"id": f"f{fact.id}", "text": fact.text, "outcome": _OUTCOMES[decision], "sensitive": fact.sensitive}
        for decision, fact in result.changes
    ]
    answer: dict[str, Any] = {"stored": stored}
    refused = [reason.told for reason in dict.fromkeys(result.refused)]
    if refused:
        answer["refused"] = refused
    if not stored and not refused:
        answer["note"] = "nothing in that is about this person to remember"
    return answer


_OUTCOMES = {
    Decision.ADD: "remembered",
    Decision.KEEP: "remembered",
    Decision.MERGE: "updated a known fact",
    Decision.INVALIDATE: "replaced an older fact",
    Decision.DUPLICATE: "already known",
}


async def forget(service: MemoryService, reader: Reader, ids: Sequence[int | str]) -> dict[str, Any]:
    """`/forget` for the reader's person: their own facts of these ids, deleted for good (with their
    earlier versions, sources and what was derived from them); anyone else's id is as if unknown."""
    person = _person(reader, "forget")
    fact_ids, episode_ids = parse_ids(ids)
    if episode_ids:
        raise ConsultError("forget takes fact ids (f12); a conversation is forgotten by a server admin")
    facts = [f for f in await service.store.call(facts_by_id, fact_ids) if f is not None]
    own = [
        f.id
        for f in facts
        if (f.scope, f.user_id) == (reader.scope, person.user_id) and f.status == FactStatus.ACTIVE
    ]
    count = await service.forget(reader.scope, person.user_id, own, actor=person.user_id) if own else 0
    answer: dict[str, Any] = {"forgotten": [f"f{i}" for i in own] if count else []}
    missing = [f"f{i}" for i in fact_ids if i not in own]
    if missing:
        answer["not_found"] = missing
    return answer


def _person(reader: Reader, tool: str) -> Participant:
    if reader.person is None:
        raise ConsultError(f"{tool} needs a session of one person (--user): a channel's session only reads")
    return reader.person


async def _names(service: MemoryService, reader: Reader, facts: Sequence[Fact]) -> dict[str, str]:
    """The names of the facts' owners and of the community facts' authors (whose word they are)."""
    owners = sorted({f.user_id for f in facts if f.user_id != COMMUNITY_ID})
    owners += sorted({a for f in facts if f.user_id == COMMUNITY_ID for a in f.authors} - set(owners))
    names = await service.names(reader.scope, owners) if owners else {}
    if reader.person is not None:
        names[reader.person.user_id] = reader.person.name
    names[COMMUNITY_ID] = COMMUNITY_NAME
    return names


def _fact_entry(fact: Fact, names: dict[str, str], reader: Reader, *, full: bool) -> dict[str, Any]:
    """A fact as the client sees it: id, whose, text (short unless `full`), where and when it was said."""
    said = [s for s in fact.sources if not s.confirms and s.origin is not None]
    channels = list(dict.fromkeys(s.origin.channel_id for s in said if s.origin is not None))
    shown = [reader.channel_name(c) for c in channels if is_discord_id(c)]
    shown += [TOLD_THROUGH_MCP] if MCP_ORIGIN.channel_id in channels else []
    entry: dict[str, Any] = {
        "id": f"f{fact.id}",
        "about": names.get(fact.user_id) or f"user {fact.user_id}",
        "text": as_said(fact, names) if full else short(as_said(fact, names)),
        "learned_in": ", ".join(shown) or ("a private word" if said else "not recorded"),
        "when": fact.recorded_at[:10],
    }
    if fact.sensitive:
        entry["sensitive"] = True
    if full:
        guild = guild_id_of(fact.scope)
        entry["recorded_at"] = fact.recorded_at
        entry["sources"] = [
            _source(guild, s.origin.channel_id, s.message_id) for s in said if s.origin is not None
        ]
    return entry


def _episode_entry(episode: Episode, reader: Reader, *, full: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": f"e{episode.id}",
        "about": "a conversation",
        "text": episode.summary if full else short(episode.summary),
        "learned_in": reader.channel_name(episode.origin.channel_id),
        "when": f"{episode.started_at[:16].replace('T', ' ')} to {episode.ended_at[:16].replace('T', ' ')}",
    }
    if full:
        ids = [int(m) for m in episode.source_message_ids if is_discord_id(m)]
        guild = guild_id_of(episode.scope)
        if ids and guild is not None:
            entry["began_at"] = _source(guild, episode.origin.channel_id, str(min(ids)))["link"]
        entry["participants"] = len(episode.participants)
        entry["points"] = [
            {"text": point.text, **({"link": link} if link else {})}
            for point, link in zip(episode.points, point_links(episode), strict=True)
        ]
    return entry


def _source(guild: int | None, channel_id: str, message_id: str) -> dict[str, Any]:
    """A message a fact was learned from, with a link Discord opens (where it is a Discord message)."""
    source: dict[str, Any] = {"message_id": message_id}
    if is_discord_id(message_id) and is_discord_id(channel_id):
        source["link"] = f"https://discord.com/channels/{guild or '@me'}/{channel_id}/{message_id}"
    return source
