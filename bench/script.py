"""A scripted group conversation, a rule-based Gemini "brain" that answers the memory tasks for it, and
the Gemini stand-in run in a child process (so that its work never shows up as the bot's event-loop lag).

The conversation: 8 people in 3 channels who mostly chat, and now and then state durable facts about
themselves ("I live in Porto", "I work as a nurse", later "I moved to Lyon", "I work as a nurse at the
children's hospital now", or say again what they said before); about one message in 33 is about the
group itself (a decision, a recurring event, a rule, a link, a reminder, a decision that changes). The
brain extracts one fact per such statement and consolidates like a careful model would: a move or a new
job INVALIDATES the old fact, a more detailed version MERGES, a repetition is a DUPLICATE, anything else
is KEPT; a changed decision about the group INVALIDATES the old one. When the extraction prompt asks for
the community too, it also answers the group's statements as community facts and, per channel, an
episode of a few points (what was decided or announced, questions left open), as a model would.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from typing import Any

from bot.memory.models import BufferedMessage, iso
from bot.memory.prompts.community import COMMUNITY_RULES
from bot.memory.prompts.consolidation import CONSOLIDATE_TASK
from bot.memory.prompts.extraction import EXTRACT_TASK
from standins.brain import read_chunk

SCOPE = "guild:424242"
CHANNELS = ("1001", "1002", "1003")
CHANNEL_SHARE = (0.5, 0.3, 0.2)  # a busy channel and two quieter ones; each a multiple of 50 messages
STATEMENT_SHARE = 0.096  # about one message in ten states a durable fact about its author
COMMUNITY_SHARE = 0.03  # about one message in 33 says something about the group (COMMUNITY_LINES)

PEOPLE: tuple[tuple[str, str], ...] = (
    ("2001", "Ana"),
    ("2002", "Ben"),
    ("2003", "Chloe"),
    ("2004", "Dev"),
    ("2005", "Emi"),
    ("2006", "Finn"),
    ("2007", "Gus"),
    ("2008", "Hana"),
)
CITIES = ("Porto", "Oslo", "Lyon", "Tartu", "Ghent", "Bergen", "Graz", "Cork", "Turku", "Malmo", "Bilbao")
JOBS = (
    "nurse",
    "carpenter",
    "data analyst",
    "primary school teacher",
    "sound engineer",
    "pharmacist",
    "bike mechanic",
    "translator",
    "baker",
    "civil engineer",
)
JOB_DETAILS = ("at the children's hospital", "in a small family firm", "for the city council", "part-time")
PETS = (("dog", "Rex"), ("cat", "Miso"), ("rabbit", "Biscuit"), ("dog", "Pepper"), ("cat", "Tofu"))
FOODS = ("ramen", "lasagne", "pierogi", "pho", "paella", "dal", "tacos", "bibimbap")
LANGUAGES = ("Japanese", "Finnish", "Portuguese", "Korean", "Polish", "Italian")
INSTRUMENTS = ("piano", "cello", "ukulele", "drums", "violin", "bass guitar")

CHATTER = (
    "haha that's brilliant",
    "did anyone watch the match last night?",
    "what time is the call tomorrow?",
    "sounds good to me",
    "lol",
    "same here, honestly",
    "anyone up for a game tonight?",
    "that recipe looks amazing",
    "brb, coffee",
    "can someone share the link again?",
    "wait, which channel was that in?",
    "good morning everyone",
    "that's a fair point",
    "no way, really?",
    "thanks, that helps a lot",
    "the weather is wild today",
    "who's joining on Saturday?",
    "the new episode was so good",
    "ok, I'll check it later",
    "I think so too",
    "I'm not sure about that one",
    "did you try restarting it?",
    "that meme is ancient",
    "where do you live these days, {other}?",
    "{other} lives in {city}, right?",
    "{other} told me they work as a {job}",
    "nice one {other}!",
    "what are you all cooking this weekend?",
    "happy Friday!",
    "I'll be late to the meeting",
)

# What the group says about itself, in this order (cycled): decisions, events, rules, links, reminders of
# what stands, and decisions that change ("moved to").
COMMUNITY_LINES = (
    "Game night is on Thursdays at 20:00 UTC.",
    "The Minecraft server address is play.example.org.",
    "Rule: no spoilers outside the spoilers channel.",
    "We decided the tournament will be on Saturday March 14.",
    "Reminder: game night is on Thursdays at 20:00 UTC.",
    "The raid starts at 21:00 UTC on Tuesdays.",
    "Our wiki is at https://wiki.example.org for the raid guides.",
    "Game night moved to Fridays at 20:00 UTC.",
    "Movie night is the first Sunday of the month.",
    "The tournament moved to Sunday March 15.",
    "Reminder: game night is Fridays at 20:00 UTC now.",
    "The raid moved to Wednesdays at 21:00 UTC.",
)


@dataclass(frozen=True)
class Line:
    """One message of the script; `statement` marks a durable self-statement (None for chatter)."""

    channel_id: str
    author_id: str
    author_name: str
    text: str
    statement: str | None = None


def _statements(rng: random.Random, name: str) -> list[tuple[str, str]]:
    """(kind, sentence) a person says about themselves over the conversation, in order."""
    city, job, (pet, pet_name), food = (
        rng.choice(CITIES),
        rng.choice(JOBS),
        rng.choice(PETS),
        rng.choice(FOODS),
    )
    out = [
        ("home", f"I live in {city}."),
        ("job", f"I work as a {job}."),
        ("pet", f"I have a {pet} called {pet_name}."),
        ("food", f"My favourite food is {food}."),
        ("language", f"I'm learning {rng.choice(LANGUAGES)}."),
        ("instrument", f"I play the {rng.choice(INSTRUMENTS)}."),
    ]
    later = [
        ("repeat", f"I live in {city}, by the way."),
        ("detail", f"I work as a {job} {rng.choice(JOB_DETAILS)}."),
        ("move", f"I moved to {rng.choice([c for c in CITIES if c != city])} last month."),
        ("instrument", f"I play the {rng.choice(INSTRUMENTS)}."),
        ("job_change", f"I work as a {rng.choice([j for j in JOBS if j != job])}."),
        ("food", f"My favourite food is {rng.choice([f for f in FOODS if f != food])}."),
    ]
    rng.shuffle(later)
    return out + later


def conversation(total: int = 1000, seed: int = 7) -> list[Line]:
    """The scripted conversation: `total` messages over CHANNELS in the CHANNEL_SHARE proportions."""
    rng = random.Random(seed)
    counts = [round(total * share) for share in CHANNEL_SHARE]
    counts[0] += total - sum(counts)
    channels = [c for c, n in zip(CHANNELS, counts, strict=True) for _ in range(n)]
    rng.shuffle(channels)
    regulars = {c: rng.sample(PEOPLE, 5) for c in CHANNELS}  # each channel has its own regulars
    speakers = [rng.choice(regulars[c]) for c in channels]
    said: dict[str, list[int]] = {}
    for i, (uid, _) in enumerate(speakers):
        said.setdefault(uid, []).append(i)
    statements: dict[int, tuple[str, str]] = {}
    per_person = max(1, round(total * STATEMENT_SHARE / len(PEOPLE)))
    for uid, name in PEOPLE:
        plan = _statements(rng, name)[:per_person]
        mine = said.get(uid, [])
        for index, statement in zip(sorted(rng.sample(mine, min(len(mine), len(plan)))), plan, strict=False):
            statements[index] = statement
    lines = []
    for i, (channel, (uid, name)) in enumerate(zip(channels, speakers, strict=True)):
        if i in statements:
            kind, sentence = statements[i]
            opener = rng.choice(("", "", "Oh, ", "Fun fact: ", "Btw, "))
            text = opener + (sentence[0].lower() + sentence[1:] if opener else sentence)
            lines.append(Line(channel, uid, name, text, kind))
            continue
        other = rng.choice([n for u, n in PEOPLE if u != uid])
        text = rng.choice(CHATTER).format(other=other, city=rng.choice(CITIES), job=rng.choice(JOBS))
        lines.append(Line(channel, uid, name, text))
    return _about_the_group(lines, random.Random(seed + 1), round(total * COMMUNITY_SHARE))


def _about_the_group(lines: list[Line], rng: random.Random, count: int) -> list[Line]:
    """`count` chatter lines (not self-statements) replaced by COMMUNITY_LINES, in their order, so the
    people's part of the conversation stays what it was."""
    chatter = [i for i, line in enumerate(lines) if line.statement is None]
    out = list(lines)
    for n, i in enumerate(sorted(rng.sample(chatter, min(count, len(chatter))))):
        out[i] = replace(lines[i], text=COMMUNITY_LINES[n % len(COMMUNITY_LINES)])
    return out


def messages(lines: list[Line], *, start: datetime | None = None) -> Iterator[BufferedMessage]:
    """The script as the messages `on_message` hands to memory, 20 seconds apart."""
    start = start or datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    for i, line in enumerate(lines):
        yield BufferedMessage(
            message_id=str(3_000_000 + i),
            scope=SCOPE,
            channel_id=line.channel_id,
            author_id=line.author_id,
            author_name=line.author_name,
            content=line.text,
            created_at=iso(start + timedelta(seconds=20 * i)),
        )


# ---- the brain ------------------------------------------------------------------------------------------

_SENTENCE = re.compile(r"[^.!?\n]+")
_OPENERS = re.compile(r"^(?:oh|fun fact|btw)\s*[:,]?\s*", re.I)
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^i live in (\w+)", re.I), "{n} lives in {0}."),
    (re.compile(r"^i moved to (\w+)", re.I), "{n} lives in {0}, having moved there recently."),
    (re.compile(r"^i work as an? (.+)$", re.I), "{n} works as a {0}."),
    (re.compile(r"^i have an? (\w+) called (\w+)", re.I), "{n} has a {0} called {1}."),
    (re.compile(r"^my favourite food is (.+)$", re.I), "{n}'s favourite food is {0}."),
    (re.compile(r"^i'm learning (\w+)", re.I), "{n} is learning {0}."),
    (re.compile(r"^i play the (.+)$", re.I), "{n} plays the {0}."),
)
_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r" lives in "), "home"),
    (re.compile(r" works as "), "job"),
    (re.compile(r" has an? \w+ called "), "pet"),
    (re.compile(r"'s favourite food is "), "food"),
    (re.compile(r" is learning "), "language"),
    (re.compile(r" plays the "), "instrument"),
)
# The group's statements (COMMUNITY_LINES) by subject; a newer one about a subject replaces the older.
_GROUP = re.compile(
    r"^(?:reminder:\s*)?(?P<subject>game night|movie night|the tournament|we decided the tournament|the raid"
    r"|the minecraft server|our wiki|rule:)",
    re.I,
)
EXCLUSIVE = frozenset({"home", "job", "food", "game night", "the tournament", "the raid"})
POINTS_PER_EPISODE = 6  # what a careful model writes for a channel's part of a chunk
QUESTION_POINTS = 2


def fact_of(name: str, sentence: str) -> str | None:
    """The third-person fact in one of the script's self-statements, or None."""
    s = _OPENERS.sub("", sentence.strip())
    for pattern, template in _RULES:
        match = pattern.match(s)
        if match:
            return template.format(*(g.strip() for g in match.groups()), n=name)
    return None


def kind_of(fact: str) -> str:
    if group := _GROUP.match(fact):
        return group.group("subject").lower().removeprefix("we decided ")
    return next((kind for pattern, kind in _KINDS if pattern.search(fact)), "other")


def group_fact(text: str) -> str | None:
    """The community fact in one of the script's statements about the group, or None."""
    if not _GROUP.match(text.strip()):
        return None
    fact = re.sub(r"^reminder:\s*", "", text.strip(), flags=re.I).rstrip(".")
    return fact[0].upper() + fact[1:] + "."


def _core(fact: str) -> str:
    return fact.rstrip(".").split(", having moved")[0].casefold()


def extract(payload: dict[str, Any], *, community: bool = False) -> dict[str, Any]:
    """One fact per self-statement of a human speaker, with that message as its source; asked for the
    `community` too, a community fact per statement about the group and an episode per channel."""
    facts = []
    for message in payload["messages"]:
        if message.get("bot"):
            continue
        for sentence in _SENTENCE.findall(message["text"]):
            fact = fact_of(message["author"], sentence)
            if fact:
                facts.append({"speaker": message["author"], "text": fact, "sources": [message["id"]]})
    if not community:
        return {"facts": facts}
    told = [
        {"text": fact, "sources": [m["id"]]}
        for m in payload["messages"]
        if not m.get("bot") and (fact := group_fact(m["text"]))
    ]
    channels = dict.fromkeys(m.get("channel", 1) for m in payload["messages"])
    episodes = [{"channel": n, "points": _points(payload["messages"], n)} for n in channels]
    return {"facts": facts, "community": told, "episodes": [e for e in episodes if e["points"]]}


def _points(messages: list[dict[str, Any]], channel: int) -> list[dict[str, Any]]:
    """A channel's episode as the prompt asks for it: what the group decided or announced and a couple
    of questions left open; never the small talk, nor what people say about themselves (their facts)."""
    said = [m for m in messages if m.get("channel", 1) == channel and not m.get("bot")]

    def point(m: dict[str, Any]) -> dict[str, Any]:
        return {"text": f"{m['author']}: {m['text'].rstrip('.')}", "sources": [m["id"]]}

    group = [point(m) for m in said if group_fact(m["text"])]
    asked = list({m["text"]: point(m) for m in said if m["text"].endswith("?")}.values())
    return (group + asked[:QUESTION_POINTS])[:POINTS_PER_EPISODE]


def decide(text: str, candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """The decision for one new fact against its candidates (without the new_fact index)."""
    kind = kind_of(text)
    same = [c for c in candidates if kind_of(c["text"]) == kind]
    for c in same:
        if _core(c["text"]) == _core(text):
            return {"decision": "DUPLICATE", "target_fact_id": c["id"], "reason": "says the same"}
    if kind in EXCLUSIVE:
        for c in same:
            if _core(text).startswith(_core(c["text"])):
                return {
                    "decision": "MERGE",
                    "target_fact_id": c["id"],
                    "merged_text": text,
                    "reason": "more detail",
                }
        if same:
            return {"decision": "INVALIDATE", "target_fact_id": same[0]["id"], "reason": "no longer true"}
    return {"decision": "KEEP", "reason": "new information"}


def consolidate(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "decisions": [
            {"new_fact": item["new_fact"], **decide(item["text"], item["candidates"])}
            for item in payload["new_facts"]
        ]
    }


def _system(body: dict[str, Any]) -> str:
    parts = (body.get("systemInstruction") or {}).get("parts", [])
    return "".join(p.get("text", "") for p in parts)


def _prompt(body: dict[str, Any]) -> str:
    contents = body.get("contents", [])
    return "".join(p.get("text", "") for p in contents[-1].get("parts", [])) if contents else ""


def purpose_of(kind: str | None, body: Any) -> str:
    """extract / consolidate / chat for generate requests, embed for embedding requests."""
    if kind == "embed":
        return "embed"
    system = _system(body) if isinstance(body, dict) else ""
    if system.startswith(EXTRACT_TASK):
        return "extract"
    if system.startswith(CONSOLIDATE_TASK):
        return "consolidate"
    return "chat"


def brain(body: dict[str, Any]) -> str:
    """The stand-in's generate_handler for the memory tasks (chat requests get a short reply)."""
    purpose = purpose_of("generate", body)
    if purpose == "extract":
        community = COMMUNITY_RULES in _system(body)
        return json.dumps(extract(read_chunk(_prompt(body)), community=community))
    if purpose == "consolidate":
        return json.dumps(consolidate(json.loads(_prompt(body))))
    return "Nice!"


# ---- the stand-in in a child process --------------------------------------------------------------------


def _serve(conn: Connection, latency: float) -> None:
    asyncio.run(_serve_async(conn, latency))


async def _serve_async(conn: Connection, latency: float) -> None:
    from standins.gemini import GeminiStandIn

    standin = GeminiStandIn()
    standin.latency = latency
    standin.generate_handler = brain
    conn.send(await standin.start())
    loop = asyncio.get_running_loop()
    while True:
        command = await loop.run_in_executor(None, conn.recv)
        if command == "stats":
            by_purpose: dict[str, int] = {}
            for r in standin.requests:
                if r.kind is not None:
                    key = purpose_of(r.kind, r.json)
                    by_purpose[key] = by_purpose.get(key, 0) + 1
            conn.send({"counters": standin.counters, "requests": by_purpose})
        elif command == "stop":
            break
    await standin.stop()


class StandInProcess:
    """GeminiStandIn (answering with `brain`) served from a child process; `base_url` once started."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.base_url = ""
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, latency), daemon=True)

    def __enter__(self) -> StandInProcess:
        self._process.start()
        self.base_url = self._conn.recv()
        return self

    def stats(self) -> dict[str, Any]:
        """The stand-in's counters and requests per purpose so far."""
        self._conn.send("stats")
        return self._conn.recv()

    def __exit__(self, *exc: object) -> None:
        self._conn.send("stop")
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.terminate()
