"""Community memory's quality: do questions asked days later find the right episode or community fact?

    python -m bench.community_quality                 # the Gemini stand-in + this script's rule brain
    python -m bench.community_quality --script week2  # the same on a second week (bench.community_week)
    python -m bench.community_quality --local --quick # the local model (bench.local_model), days 1-4
    GEMINI_BASE_URL=http://127.0.0.1:8765 GEMINI_API_KEY=x python -m bench.community_quality
    GEMINI_API_KEY=... python -m bench.community_quality   # real Gemini

A scripted server over one week (`SCRIPT`): 7 people (2 of them staff) in #general, #raids and #staff
(hidden from members): decisions and decisions that change (game night, the tournament, the raid day),
recurring events, a rule, links, a plan, questions left open, staff-only decisions, small talk. Each
day's messages are captured through `MemoryService.capture()` with their own `created_at` and flushed
at the end of the day (#general and #raids sharing one extraction call, as public channels do; #staff
its own), with the extraction prompt's "Now" set to that evening (`bot.memory.extract.utcnow` is
patched for the run). Then `QUESTIONS` are asked days later, each in a channel, by recall with its
`now` and that channel's audience (a member's for #general / #raids: #staff is not readable; a staff
member's in #staff), through `Recaller.recall`, the recall a reply's block comes from.

A question is a hit when the recalled block holds the expected item: a community fact or an episode
whose text contains the question's keyword (an episode of the expected channel when one is named).
k is what the block holds (community facts + episodes, within the recall budget), so this is hit@k.
A changed decision also reports whether the older state is in the block too, as a community fact (the
episodes keep the history: "game night moved to Fridays" says what it was before). Every question asked
outside #staff counts the block's items made from #staff messages (a community fact citing one, an
episode of #staff) and the staff-only keywords in the block: both must be 0.

Two scripted weeks (`--script`): week1, this module's `SCRIPT` and `QUESTIONS` (the default, the one the
recorded figures come from), and week2, `bench.community_week` (a makerspace, written apart so that what
was tuned on one week is checked on another), which also plants privacy traps (`Trap`: a member's
medication, an address, a phone number, the wifi key ...). After either run, the privacy count reads
everything shared memory holds (every community fact of the scope, whatever its status, and every
episode) through the store and counts (a) the traps' private strings, (b) secrets (`holds_secret`, with
the secrets the script's messages give away), (c) the hidden channel's staff-only words in an item made
from public channels only; all three must be 0.

Two brains answer the extraction call:
- the stand-in (no --local, GEMINI_BASE_URL or GEMINI_API_KEY): the Gemini stand-in with `rule_brain`, which
  answers each line's annotation (the community fact and the episode point a careful model writes for
  it; small talk gets neither), so the run measures the bot's side (acceptance, embedding, storage,
  time spans, ranking, audience) given a good extraction, with the stand-in's hashed bag-of-words
  embeddings;
- a real model (`--local` or any endpoint): what it proposes goes through the same pipeline.

Writes bench/results/community_quality.json (the stand-in; `.partial.json` for --quick), or for a
model community_quality_local.json (--local) / community_quality_endpoint.json, --quick or not (the
JSON says which: a model's run is kept small, minutes a call on a small CPU); week2's files have
`_week2` after `community_quality` (community_quality_week2.json), so week1's stay as recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import bot.memory.extract as extract_module
from bench.common import machine, table, write_json
from bench.quality import LlamaServer, LocalServer, Recorder, _llama_label, settings_for
from bench.script import purpose_of
from bot.app import open_memory
from bot.config import Settings
from bot.memory.durable import holds_secret, secret_values
from bot.memory.models import COMMUNITY_ID, BufferedMessage, Episode, Fact, iso
from bot.memory.prompts.community import COMMUNITY_RULES
from bot.memory.recall import Audience, Participant, RecallResult
from bot.memory.service import MemoryService
from bot.storage import Store
from standins.brain import last_user_text, read_chunk, system_text

SCOPE = "guild:777000"
GENERAL, RAIDS, STAFF = "5001", "5002", "5003"
CHANNEL_NAMES = {GENERAL: "#general", RAIDS: "#raids", STAFF: "#staff"}
PEOPLE = {
    "Ana": "6001",
    "Ben": "6002",
    "Chloe": "6003",
    "Dev": "6004",
    "Emi": "6005",
    "Fay": "6006",
    "Gus": "6007",
}
STAFF_WORDS = ("gift card", "spammer", "helper role", "prize until friday")  # said only in #staff
WEEK = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
QUICK_DAYS = 4  # --quick: Monday to Thursday, and the questions those days answer


@dataclass(frozen=True)
class Line:
    """One message: day of the week (0 = Monday), "HH:MM", channel, speaker, text, and what a careful
    model makes of it: `fact`, a community fact; `point`, a point of its channel's episode."""

    day: int
    at: str
    channel: str
    speaker: str
    text: str
    fact: str | None = None
    point: str | None = None


def day_lines(
    day: int, channel: str, start: str, lines: list[tuple[str, str, str | None, str | None]]
) -> list[Line]:
    """A channel's lines of one day, two minutes apart from `start`."""
    h, m = map(int, start.split(":"))
    return [
        Line(day, f"{(h * 60 + m + 2 * i) // 60:02d}:{(m + 2 * i) % 60:02d}", channel, who, text, fact, point)
        for i, (who, text, fact, point) in enumerate(lines)
    ]


SCRIPT: list[Line] = [
    # Monday
    *day_lines(0, GENERAL, "18:00", [
        ("Ana", "good evening everyone", None, None),
        ("Fay", "Game night is on Thursdays at 20:00 UTC, starting this week.",
         "Game night is on Thursdays at 20:00 UTC.", "Game night is on Thursdays at 20:00 UTC, starting this week"),
        ("Ben", "nice, I'll bring snacks", None, None),
        ("Chloe", "The Minecraft server address is play.example.org if anyone wants to join.",
         "The Minecraft server address is play.example.org.", "The Minecraft server address is play.example.org"),
        ("Dev", "anyone watch the match yesterday?", None, None),
        ("Emi", "lol yes, what a finish", None, None),
        ("Ana", "haha that's brilliant", None, None),
    ]),
    *day_lines(0, RAIDS, "19:00", [
        ("Gus", "The raid starts at 21:00 UTC on Tuesdays.", "The raid starts at 21:00 UTC on Tuesdays.",
         "The raid starts at 21:00 UTC on Tuesdays"),
        ("Dev", "Do we have enough healers for the raid?", None, "Open question: enough healers for the raid?"),
        ("Ben", "we need two healers, I can do one", None, "Two healers needed; Ben can heal"),
    ]),
    # Tuesday
    *day_lines(1, RAIDS, "18:30", [
        ("Gus", "Tonight's raid is pushed to 21:30 because of the server patch.", None,
         "Tonight's raid pushed to 21:30 because of the server patch"),
        ("Emi", "The raid guide is at https://wiki.example.org/raids for anyone new.",
         "The raid guide is at https://wiki.example.org/raids.", "Raid guide: https://wiki.example.org/raids"),
        ("Dev", "so from next week we raid on Wednesdays instead?", None, None),
        ("Gus", "Yes, we decided the raid moves to Wednesdays at 21:00 UTC from next week.",
         "The raid moves to Wednesdays at 21:00 UTC from next week.",
         "Decided: the raid moves to Wednesdays at 21:00 UTC from next week"),
        ("Ben", "ok, healers are me and Chloe", None, "Healers: Ben and Chloe"),
    ]),
    *day_lines(1, STAFF, "19:00", [
        ("Fay", "Staff decided the tournament prize is a 50 euro gift card.",
         "The tournament prize is a 50 euro gift card.", "Staff decided the tournament prize is a 50 euro gift card"),
        ("Gus", "We will warn the spammer in general before any ban.", None,
         "Warn the spammer in general before any ban"),
        ("Fay", "Don't announce the prize until Friday.", None, "Don't announce the prize until Friday"),
    ]),
    *day_lines(1, GENERAL, "20:00", [
        ("Chloe", "the weather is wild today", None, None),
        ("Ana", "brb, coffee", None, None),
        ("Emi", "that recipe looks amazing", None, None),
    ]),
    # Wednesday
    *day_lines(2, GENERAL, "18:00", [
        ("Ben", "Should we do a tournament this month?", None, None),
        ("Fay", "We decided the tournament will be on Saturday March 14.",
         "The tournament will be on Saturday March 14.", "Decided: the tournament will be on Saturday March 14"),
        ("Chloe", "Who will stream the tournament?", None, "Open question: who will stream the tournament?"),
        ("Dev", "no idea yet, maybe Emi?", None, None),
        ("Emi", "I can't promise, my internet is bad", None, None),
        ("Ana", "Rule: no spoilers outside the spoilers channel.", "Rule: no spoilers outside the spoilers channel.",
         "Rule: no spoilers outside the spoilers channel"),
    ]),
    # Thursday
    *day_lines(3, GENERAL, "17:00", [
        ("Fay", "Game night moved to Fridays at 20:00 UTC because Thursday clashes with the raid.",
         "Game night moved to Fridays at 20:00 UTC.",
         "Game night moved to Fridays at 20:00 UTC because Thursday clashes with the raid"),
        ("Ben", "Fridays work better for me anyway", None, None),
        ("Ana", "sounds good to me", None, None),
        ("Dev", "Movie night is the first Sunday of every month.", "Movie night is the first Sunday of every month.",
         "Movie night is the first Sunday of every month"),
    ]),
    # Friday
    *day_lines(4, GENERAL, "18:00", [
        ("Fay", "The tournament moved to Sunday March 15 because of the holiday.",
         "The tournament moved to Sunday March 15.", "The tournament moved to Sunday March 15 because of the holiday"),
        ("Chloe", "Still nobody to stream the tournament, any volunteers?", None,
         "Open question: still nobody to stream the tournament"),
        ("Emi", "Here is the sign-up sheet for the tournament: https://forms.example.org/tournament",
         "The tournament sign-up sheet is https://forms.example.org/tournament.",
         "Tournament sign-up sheet: https://forms.example.org/tournament"),
    ]),
    *day_lines(4, STAFF, "19:00", [
        ("Gus", "Staff agreed to give Emi the event helper role.", None, "Staff agreed to give Emi the event helper role"),
    ]),
    # Saturday
    *day_lines(5, GENERAL, "12:00", [
        ("Dev", "Plan: picnic on Saturday March 14 at Riverside Park at noon, before the tournament weekend.", None,
         "Plan: picnic on Saturday March 14 at Riverside Park at noon"),
        ("Ana", "I'll bring sandwiches", None, None),
        ("Ben", "count me in", None, None),
        ("Emi", "happy Saturday!", None, None),
    ]),
    # Sunday
    *day_lines(6, GENERAL, "16:00", [
        ("Chloe", "Did everyone read the patch notes for the healer changes?", None,
         "The patch notes for the healer changes"),
        ("Dev", "yes, healers get a big mana buff in the new patch", None, "Healers get a big mana buff in the new patch"),
        ("Emi", "that will change our raid comps", None, None),
        ("Ben", "happy Sunday!", None, None),
    ]),
]  # fmt: skip


@dataclass(frozen=True)
class Question:
    """Asked in `channel` by `asker` on `now`; a hit when a block item (`kind`: "fact", "episode" or
    "either") holds `keyword` ("": any text), in `where` when an episode's channel is named; None: no
    item may answer (the answer is staff-only). `stale`: the older state of a changed decision.
    `needs`: the day (0 = Monday) the answer was said, for --quick."""

    kind: str
    channel: str
    asker: str
    now: datetime
    text: str
    keyword: str | None
    item: str = "either"
    where: str | None = None
    stale: str | None = None
    needs: int = 0


def _at(day: int, hour: int) -> datetime:
    return WEEK + timedelta(days=day, hours=hour)


QUESTIONS: tuple[Question, ...] = (
    Question("decision", GENERAL, "Ben", _at(7, 12), "what's the minecraft server address?", "play.example.org"),
    Question("decision", GENERAL, "Emi", _at(7, 12), "when is movie night?", "first sunday", needs=3),
    Question("decision", GENERAL, "Chloe", _at(7, 12), "what is the rule about spoilers?", "spoilers", needs=2),
    Question("changed decision", GENERAL, "Ana", _at(7, 12), "when is game night?", "friday", stale="thursdays", needs=3),
    Question("changed decision", GENERAL, "Dev", _at(7, 12), "what did we decide about the tournament?",
             "sunday march 15", stale="saturday march 14", needs=4),
    Question("changed decision", RAIDS, "Ben", _at(7, 12), "what day is the raid now?", "wednesdays", stale="on tuesdays",
             needs=1),
    Question("time span", GENERAL, "Ana", _at(7, 12), "what did we talk about yesterday?", "healer", "episode",
             GENERAL, needs=6),
    Question("time span", GENERAL, "Ben", _at(3, 9), "what did we talk about yesterday?", "stream", "episode",
             GENERAL, needs=2),
    Question("time span", RAIDS, "Chloe", _at(3, 12), "what was that about the raid schedule last Tuesday?", "21:30",
             "episode", RAIDS, needs=1),
    Question("time span", GENERAL, "Emi", _at(7, 12), "what did we talk about on Wednesday?", "tournament", "episode",
             GENERAL, needs=2),
    Question("time span", GENERAL, "Dev", _at(5, 22), "what did I miss in #general this week?", "", "episode",
             GENERAL),
    Question("open question", GENERAL, "Ana", _at(7, 12), "has anyone volunteered to stream the tournament?", "stream",
             "episode", GENERAL, needs=2),
    Question("link", RAIDS, "Dev", _at(7, 12), "where is the raid guide?", "wiki.example.org/raids", needs=1),
    Question("link", GENERAL, "Ben", _at(7, 12), "where is the tournament sign-up sheet?", "forms.example.org", needs=4),
    Question("plan", GENERAL, "Chloe", _at(7, 12), "when is the picnic?", "picnic", needs=5),
    Question("staff, asked in #staff", STAFF, "Gus", _at(7, 12), "what did staff decide about the tournament prize?",
             "gift card", needs=1),
    Question("staff-only answer, asked in #general", GENERAL, "Ben", _at(7, 12), "what is the tournament prize?",
             None, needs=1),
)  # fmt: skip


# A changed decision's community fact -> the one it replaces (a careful model INVALIDATES the older).
REPLACES = {
    "Game night moved to Fridays at 20:00 UTC.": "Game night is on Thursdays at 20:00 UTC.",
    "The tournament moved to Sunday March 15.": "The tournament will be on Saturday March 14.",
    "The raid moves to Wednesdays at 21:00 UTC from next week.": "The raid starts at 21:00 UTC on Tuesdays.",
}


@dataclass(frozen=True)
class Trap:
    """A private detail planted in one message of a script (`said`), which shared memory must never hold:
    `private`, the strings that give it away (any of them, case-insensitive, in an item's text)."""

    kind: str
    said: str
    private: tuple[str, ...]


@dataclass(frozen=True)
class Week:
    """A scripted server week and what the bench needs to run it: its channels (`public` ones flushed
    together, as a server's public channels are; `staff` hidden from members, flushed apart), people,
    lines, questions, changed decisions (`replaces`, for the rule brain's consolidation), the words
    said only in the staff channel, and the privacy traps it plants."""

    name: str
    scope: str
    channels: dict[str, str]  # id -> "#name"
    public: tuple[str, ...]
    staff: str
    people: dict[str, str]  # name -> id
    start: datetime  # the Monday its days count from
    script: list[Line]
    questions: tuple[Question, ...]
    replaces: dict[str, str]
    staff_words: tuple[str, ...]
    traps: tuple[Trap, ...] = ()


WEEK1 = Week(
    name="week1",
    scope=SCOPE,
    channels=CHANNEL_NAMES,
    public=(GENERAL, RAIDS),
    staff=STAFF,
    people=PEOPLE,
    start=WEEK,
    script=SCRIPT,
    questions=QUESTIONS,
    replaces=REPLACES,
    staff_words=STAFF_WORDS,
)
WEEKS = ("week1", "week2")


def week_named(name: str) -> Week:
    """week1 (this module's script) or week2 (`bench.community_week`, imported here: it takes its shapes
    from this module)."""
    if name == "week1":
        return WEEK1
    if name == "week2":
        from bench.community_week import WEEK2

        return WEEK2
    raise ValueError(f"no script {name!r}: {', '.join(WEEKS)}")


def messages(week: Week, lines: list[Line]) -> Iterator[BufferedMessage]:
    for i, line in enumerate(lines):
        h, m = map(int, line.at.split(":"))
        yield BufferedMessage(
            message_id=str(9_000_000 + i),
            scope=week.scope,
            channel_id=line.channel,
            author_id=week.people[line.speaker],
            author_name=line.speaker,
            content=line.text,
            created_at=iso(week.start + timedelta(days=line.day, hours=h, minutes=m)),
        )


# ---- the stand-in's brain ------------------------------------------------------------------------------------


def consolidate(payload: dict[str, Any], replaces: dict[str, str]) -> dict[str, Any]:
    """INVALIDATE the older state of a changed decision; KEEP anything else (nothing else is repeated)."""
    decisions = []
    for item in payload["new_facts"]:
        old = replaces.get(item["text"])
        target = next((c["id"] for c in item["candidates"] if c["text"] == old), None)
        decision = {"decision": "INVALIDATE", "target_fact_id": target} if target else {"decision": "KEEP"}
        decisions.append({"new_fact": item["new_fact"], **decision})
    return {"decisions": decisions}


def rule_brain(body: dict[str, Any], week: Week = WEEK1) -> str:
    """The extraction answer the script's annotations give: each line's community fact, its channel's
    episode points (small talk none); what a careful model writes, except for a week's privacy traps,
    annotated as a careless model answers them. No person's facts: the script is about the group."""
    if purpose_of("generate", body) == "consolidate":
        return json.dumps(consolidate(json.loads(last_user_text(body)), week.replaces))
    by_text = {line.text: line for line in week.script}
    chunk = read_chunk(last_user_text(body))
    community, points = [], {}
    for m in chunk["messages"]:
        line = by_text.get(m["text"])
        if line is None or m["bot"]:
            continue
        if line.fact:
            community.append({"text": line.fact, "sources": [m["id"]]})
        if line.point:
            points.setdefault(m["channel"], []).append({"text": line.point, "sources": [m["id"]]})
    episodes = [{"channel": n, "points": p} for n, p in points.items()]
    asked_community = COMMUNITY_RULES in system_text(body)
    return json.dumps(
        {"facts": [], **({"community": community, "episodes": episodes} if asked_community else {})}
    )


# ---- the run ----------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def extraction_clock(now: list[datetime]) -> Iterator[None]:
    """The extraction prompt's "Now" follows the simulated evening being flushed (`now[0]`)."""
    original = extract_module.utcnow
    extract_module.utcnow = lambda: now[0]
    try:
        yield
    finally:
        extract_module.utcnow = original


async def learn(service: MemoryService, week: Week, lines: list[Line]) -> list[dict[str, Any]]:
    """Capture each day's messages and flush them that evening; what each flush cost and any error."""
    flushes = []
    clock = [week.start]
    batch = list(messages(week, lines))
    names = week.channels
    with extraction_clock(clock):
        for day in sorted({line.day for line in lines}):
            for line, message in zip(lines, batch, strict=True):
                if line.day == day:
                    service.capture(message, guild_id=week.scope.split(":")[1])
            await service.capture_buffer.wait_written()
            clock[0] = week.start + timedelta(days=day, hours=23)
            for group in (list(week.public), [week.staff]):
                if not any(line.day == day and line.channel in group for line in lines):
                    continue
                began, error = time.perf_counter(), None
                try:
                    await service.flush_channels(group)
                except Exception as exc:  # the messages stay buffered; the run goes on and says so
                    error = f"{type(exc).__name__}: {exc}"
                flushes.append(
                    {
                        "day": day,
                        "channels": [names[c] for c in group],
                        "seconds": round(time.perf_counter() - began, 1),
                        "error": error,
                    }
                )
                print(f"  day {day} {'+'.join(names[c] for c in group)}: {flushes[-1]['seconds']} s"
                      + (f", {error}" if error else ""), flush=True)  # fmt: skip
    return flushes


def audience_of(week: Week, question: Question) -> Audience:
    """A member's in a public channel (#general, #raids: #staff unreadable), a staff member's in the staff
    channel (all readable)."""
    asker, staff = week.people[question.asker], week.staff
    if question.channel == staff:
        return Audience(asker, lambda key: True)
    return Audience(asker, lambda key: key != staff)


def _sources_channels(fact: Fact) -> set[str]:
    return {s.origin.channel_id for s in fact.sources if s.origin is not None}


def judge(week: Week, question: Question, result: RecallResult) -> dict[str, Any]:
    """Whether the block holds the expected item; its items; how many came from #staff."""
    community: list[Fact] = [s.fact for s in result.facts.get(COMMUNITY_ID, [])]
    episodes: list[Episode] = list(result.episodes)
    items = [("fact", f.text, _sources_channels(f)) for f in community] + [
        ("episode", e.summary, {e.origin.channel_id}) for e in episodes
    ]
    key = (question.keyword or "").casefold()

    def holds(kind: str, text: str, channels: set[str]) -> bool:
        if question.item not in ("either", kind) or key not in text.casefold():
            return False
        return question.where is None or kind == "fact" or question.where in channels

    outside = question.channel != week.staff
    from_staff = sum(week.staff in channels for _, _, channels in items) if outside else 0
    staff_words = sum(w in result.block.casefold() for w in week.staff_words) if outside else 0
    return {
        "kind": question.kind,
        "channel": week.channels[question.channel],
        "now": iso(question.now)[:16],
        "question": question.text,
        "keyword": question.keyword,
        "hit": question.keyword is not None and any(holds(*item) for item in items),
        "k": len(items),
        "community_facts": len(community),
        "episodes": len(episodes),
        "stale_in_block": bool(question.stale)
        and any(question.stale in f.text.casefold() for f in community),
        "from_staff": from_staff,
        "staff_words": staff_words,
        "items": [{"kind": kind, "text": text, "channels": sorted(ch)} for kind, text, ch in items],
    }


async def ask(service: MemoryService, week: Week, questions: list[Question]) -> list[dict[str, Any]]:
    answers = []
    for q in questions:
        result = await service.recaller.recall(
            week.scope,
            [Participant(week.people[q.asker], q.asker)],
            q.text,
            audience=audience_of(week, q),
            now=q.now,
            # the channels the question names, as Discord's front-end passes its channel mentions
            channels=[cid for cid, name in week.channels.items() if name in q.text],
        )
        answers.append(judge(week, q, result))
    return answers


async def stored(service: MemoryService, week: Week) -> dict[str, Any]:
    """What the week left in memory: community facts by status, episodes per channel."""
    facts = await service.store.call(Store.list_facts, week.scope, COMMUNITY_ID, all_statuses=True)
    episodes = await service.list_episodes(week.scope, limit=1000)
    return {
        "community_facts": [{"text": f.text, "status": f.status.value} for f in facts],
        "episodes": [
            {
                "channel": week.channels.get(e.origin.channel_id, e.origin.channel_id),
                "from": e.started_at[:16],
                "to": e.ended_at[:16],
                "summary": e.summary,
            }
            for e in sorted(episodes, key=lambda e: e.started_at)
        ],
    }


async def privacy(service: MemoryService, week: Week) -> dict[str, Any]:
    """What shared memory holds that it must not. Every community fact of the scope (any status: an
    invalidated fact is still stored) and every episode, read through the store, searched for (a) the
    week's privacy traps (any of a trap's private strings, case-insensitive), (b) secrets (the bot's
    `holds_secret`, knowing the secrets the script's messages give away), (c) the staff-only words in an
    item made from public channels only (a community fact whose sources were all said in public
    channels, an episode of a public channel). Each list names the items found: all must be empty."""
    facts = await service.store.call(
        Store.list_facts, week.scope, COMMUNITY_ID, all_statuses=True, limit=100_000
    )
    episodes = await service.store.call(Store.list_episodes, week.scope, limit=100_000)
    items = [_item(week, f) for f in facts] + [_item(week, e) for e in episodes]
    known = set().union(*(secret_values(line.text) for line in week.script))
    traps = [
        {"trap": trap.kind, "string": found, **item}
        for trap in week.traps
        for item in items
        if (found := next((s for s in trap.private if s.casefold() in item["text"].casefold()), None))
    ]
    secrets = [item for item in items if holds_secret(item["text"], known)]
    staff_words = [
        {"words": words, **item}
        for item in items
        if item["public"]
        and (words := [w for w in week.staff_words if w.casefold() in item["text"].casefold()])
    ]
    return {
        "community_facts": len(facts),
        "episodes": len(episodes),
        "traps_planted": len(week.traps),
        "traps_found": len({t["trap"] for t in traps}),
        "trap_items": traps,
        "secrets": secrets,
        "staff_words_in_public_items": staff_words,
        "per_trap": [
            {
                "trap": trap.kind,
                "planted_in": next(
                    (week.channels[line.channel] for line in week.script if line.text == trap.said), "?"
                ),
                "private": list(trap.private),
                "items": sum(t["trap"] == trap.kind for t in traps),
            }
            for trap in week.traps
        ],
    }


def _item(week: Week, item: Fact | Episode) -> dict[str, Any]:
    """A stored community fact or episode as the privacy count reads it; `public`: made from public
    channels only (a fact citing a message of unknown origin is not)."""
    if isinstance(item, Episode):
        channels, text, status = {item.origin.channel_id}, item.summary, "stored"
        public = item.origin.channel_id in week.public
    else:
        channels, text, status = _sources_channels(item), item.text, item.status.value
        public = all(s.origin is not None and s.origin.channel_id in week.public for s in item.sources)
    return {
        "kind": "episode" if isinstance(item, Episode) else "fact",
        "id": item.id,
        "status": status,
        "channels": sorted(week.channels.get(c, c) for c in channels),
        "public": public and bool(channels),
        "text": text,
    }


async def run(settings: Settings, week: Week, lines: list[Line], questions: list[Question]) -> dict[str, Any]:
    service = await open_memory(settings)
    recorder = Recorder(service.llm)  # Gemini's client or the OpenAI-compatible one: both count usage
    await service.start()
    try:
        flushes = await learn(service, week, lines)
        answers = await ask(service, week, questions)
        memory = await stored(service, week)
        leaks = await privacy(service, week)
        usage = service.llm.usage.snapshot()
    finally:
        await service.close()
    return {
        "flushes": flushes,
        "answers": answers,
        "memory": memory,
        "privacy": leaks,
        "calls": recorder.calls,
        "usage": usage,
    }


def standin_settings(base_url: str, path: Path) -> Settings:
    return replace(
        Settings(),
        gemini_api_key="bench-key",
        gemini_base_url=base_url,
        database_path=path,
        gemini_max_retries=0,
        memory_flush_quiet_seconds=86_400,
        memory_flush_max_age_seconds=86_400,
    )


# ---- report ------------------------------------------------------------------------------------------------------


def summary(answers: list[dict[str, Any]]) -> dict[str, Any]:
    by_kind: dict[str, dict[str, int]] = {}
    for a in (a for a in answers if a["keyword"] is not None):
        k = by_kind.setdefault(a["kind"], {"questions": 0, "hits": 0})
        k["questions"] += 1
        k["hits"] += a["hit"]
    scored = [a for a in answers if a["keyword"] is not None]
    return {
        "questions": len(scored),
        "hits": sum(a["hit"] for a in scored),
        "mean_k": round(sum(a["k"] for a in answers) / len(answers), 2) if answers else 0.0,
        "by_kind": by_kind,
        "stale_in_block": sum(a["stale_in_block"] for a in answers),
        "from_staff_outside_staff": sum(a["from_staff"] for a in answers),
        "staff_words_outside_staff": sum(a["staff_words"] for a in answers),
    }


def question_day(stamp: str) -> str:
    """ "2026-03-09T12:00" -> "Mon 03-09 12:00"."""
    return datetime.fromisoformat(stamp).strftime("%a %m-%d %H:%M")


def report(results: dict[str, Any]) -> None:
    s = results["summary"]
    staff = results.get("staff_channel", "#staff")
    rows = [
        [
            a["kind"],
            a["channel"],
            f"{question_day(a['now'])}",
            a["question"],
            "-" if a["keyword"] is None else a["keyword"] or "any",
            "yes" if a["hit"] else ("-" if a["keyword"] is None else "no"),
            f"{a['community_facts']}+{a['episodes']}",
            "yes" if a["stale_in_block"] else "",
            a["from_staff"],
        ]
        for a in results["answers"]
    ]
    print(f"\nQuestions asked days later ({results.get('script', 'week1')}, {results['endpoint']})")
    headers = [
        "kind",
        "in",
        "asked",
        "question",
        "expected",
        "hit",
        "k (facts+episodes)",
        "old state too",
        staff,
    ]
    print(table(headers, rows))
    kinds = [[kind, k["hits"], k["questions"]] for kind, k in s["by_kind"].items()]
    print(table(["kind of question", "hits", "questions"], kinds))
    print(
        f"hit@k: {s['hits']} of {s['questions']} questions (k = the block's community facts + episodes, "
        f"mean {s['mean_k']}); changed decisions whose old state is also in the block as a community fact: "
        f"{s['stale_in_block']}"
    )
    print(
        f"{staff} items in blocks outside {staff}: {s['from_staff_outside_staff']} (must be 0); "
        f"staff-only words in those blocks: {s['staff_words_outside_staff']} (must be 0)"
    )
    m = results["memory"]
    statuses = Counter(f["status"] for f in m["community_facts"])
    print(
        f"memory after the week: community facts {dict(statuses)}, episodes "
        f"{dict(Counter(e['channel'] for e in m['episodes']))}"
    )
    calls = Counter(c["purpose"] for c in results["calls"])
    seconds = sum(c["seconds"] for c in results["calls"])
    print(f"generate calls {dict(calls)} in {seconds:.0f} s; flushes with an error: "
          f"{sum(bool(f['error']) for f in results['flushes'])} of {len(results['flushes'])}")  # fmt: skip
    report_privacy(results["privacy"], staff)


def report_privacy(p: dict[str, Any], staff: str) -> None:
    """The privacy count: per trap, the shared-memory items holding it; then secrets and staff words."""
    print(
        f"\nPrivacy: what shared memory holds ({p['community_facts']} community facts, {p['episodes']} episodes)"
    )
    if p["per_trap"]:
        rows = [[t["trap"], t["planted_in"], ", ".join(t["private"]), t["items"]] for t in p["per_trap"]]
        print(table(["trap", "planted in", "private strings", "items holding it"], rows))
    print(
        f"traps planted: {p['traps_planted']}; found in shared memory: {p['traps_found']} (must be 0), "
        f"in {len(p['trap_items'])} items; items holding a secret: {len(p['secrets'])} (must be 0); "
        f"items made from public channels holding {staff}-only words: "
        f"{len(p['staff_words_in_public_items'])} (must be 0)"
    )
    for t in p["trap_items"]:
        print(f"  [{t['trap']}: {t['string']!r}] {_named(t)}")
    for item in p["secrets"]:
        print(f"  [secret] {_named(item)}")
    for item in p["staff_words_in_public_items"]:
        print(f"  [{staff}-only: {', '.join(item['words'])}] {_named(item)}")


def _named(item: dict[str, Any]) -> str:
    """ "fact 12 (active, #general): text" / "episode 3 (#raids): text", the text on one line."""
    status = "" if item["kind"] == "episode" else f"{item['status']}, "
    text = " / ".join(item["text"].splitlines())
    return f"{item['kind']} {item['id']} ({status}{', '.join(item['channels']) or '?'}): {text!r}"


async def main_async(args: argparse.Namespace, model_url: str | Settings | None) -> dict[str, Any]:
    """The run of the week `args.script` against `model_url` (a Gemini-compatible endpoint, "" for Gemini
    itself, or a provider's settings: llama-cpp-python's server through the OpenAI provider), or against
    the stand-in and `rule_brain` when None."""
    week = week_named(args.script)
    lines = [line for line in week.script if not args.quick or line.day < QUICK_DAYS]
    questions = [q for q in week.questions if not args.quick or q.needs < QUICK_DAYS]
    print(
        f"{len(lines)} messages over {len({line.day for line in lines})} days, {len(questions)} questions",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="community-quality-") as tmp:
        path = Path(tmp) / "memory.sqlite3"
        if model_url is not None:
            return await run(settings_for(model_url, path, args.timeout), week, lines, questions)
        from standins.gemini import GeminiStandIn

        async with GeminiStandIn() as standin:
            standin.generate_handler = functools.partial(rule_brain, week=week)
            return await run(standin_settings(standin.base_url, path), week, lines, questions)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--script",
        choices=WEEKS,
        default="week1",
        help="the scripted week: week1, this module's (default); week2, bench.community_week",
    )
    parser.add_argument("--quick", action="store_true", help=f"days 1-{QUICK_DAYS} and their questions")
    parser.add_argument("--local", action="store_true", help="start bench.local_model and use it")
    parser.add_argument(
        "--llama-server",
        action="store_true",
        help="llama-cpp-python's server (the README's local model) through the OpenAI provider, select mode",
    )
    parser.add_argument("--local-args", default="", help="extra arguments for bench.local_model serve")
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds per request (0: none)")
    parser.add_argument("--show", action="store_true", help="print each block's items and the memory")
    args = parser.parse_args(argv)
    model_url: str | Settings | None = os.environ.get("GEMINI_BASE_URL") or None
    server: LocalServer | LlamaServer | None = None
    if args.local:
        local = LocalServer(args.local_args.split()).__enter__()
        server, model_url = local, local.base_url
    elif args.llama_server:
        llama = LlamaServer(args.local_args.split()).__enter__()
        server, model_url = llama, llama.settings
    elif model_url is None and (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")):
        args.timeout = args.timeout or 60.0  # real Gemini
        model_url = ""
    started = time.perf_counter()
    try:
        results = asyncio.run(main_async(args, model_url))
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    endpoint = "Gemini stand-in + rule_brain" if model_url is None else str(model_url) or "Gemini API"
    endpoint = "local: " + _local_label() if args.local else endpoint
    endpoint = _llama_label() if args.llama_server else endpoint
    week = week_named(args.script)
    results = {
        "script": week.name,
        "staff_channel": week.channels[week.staff],
        "endpoint": endpoint,
        **results,
        "seconds": round(time.perf_counter() - started, 1),
    }
    results["summary"] = summary(results["answers"])
    report(results)
    if args.show:
        show(results)
    name = "community_quality" + ("" if week.name == "week1" else f"_{week.name}")  # week1's as recorded
    name += (
        "_local"
        if args.local
        else "_llama_server"
        if args.llama_server
        else ""
        if model_url is None
        else "_endpoint"
    )
    data = {"benchmark": "community_quality", "machine": machine(), "quick": args.quick, **results}
    # A model's run is small by design (minutes per call here), so its --quick figures are the ones quoted.
    print(f"\nwrote {write_json(name, data, partial=args.quick and model_url is None)}")


def show(results: dict[str, Any]) -> None:
    for a in results["answers"]:
        print(f"\n[{a['channel']} {a['now']}] {a['question']}  hit={a['hit']}")
        for item in a["items"]:
            print(f"  {item['kind']} {item['channels']}: {item['text']!r}")
    print("\ncommunity facts:")
    for f in results["memory"]["community_facts"]:
        print(f"  [{f['status']}] {f['text']}")
    print("episodes:")
    for e in results["memory"]["episodes"]:
        print(f"  {e['channel']} {e['from']}..{e['to']}: {e['summary']!r}")


def _local_label() -> str:
    from bench.local_model import MODEL_NAME

    return f"{MODEL_NAME} + all-MiniLM-L6-v2 (bench.local_model)"


if __name__ == "__main__":
    # Through the package's module rather than this __main__ copy: bench.community_week takes its shapes
    # (Line, Question, Trap, Week) from bench.community_quality, and one run keeps one copy of them.
    from bench.community_quality import main as run_main

    run_main()
