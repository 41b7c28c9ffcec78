"""A rule-based stand-in for Gemini's judgement, plugged into the Gemini stand-in's generate_handler.

It recognises the bot's memory tasks by their marker lines and answers in their JSON shapes:
extraction (and the rewrite of selected lines) turns first-person sentences ("I live in Oslo", "My dog
is Rex") into third-person facts of the speaker, marking health, money, belief and contact details as
sensitive; selection points at the lines extraction would take a fact from; a remember request does the
same for what one person asked to keep; consolidation invalidates a candidate that states the same kind
of thing ("lives in", "works as") and keeps the rest. Chat requests get `chat_reply` (a string or a
function of the body), except explicit requests ("remember that ...", "forget that ..."), which call the
bot's tools when the request offers them, as a real model would; and questions about someone the
background block does not answer ("do you remember what Ana's dog is called?"), which look further with
search_memory and are answered from what it found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from bot.memory.prompts.consolidation import CONSOLIDATE_TASK
from bot.memory.prompts.extraction import EXTRACT_TASK, REWRITE_TASK
from bot.memory.prompts.remembering import REMEMBER_TASK
from bot.memory.prompts.selection import SELECT_TASK

_SENTENCE = re.compile(r"[^.!?\n]+")
_SENSITIVE = re.compile(
    r"salary|diabet|depress|medication|religio|pray|muslim|christian|jewish|gay|lesbian|vote for|party member"
    r"|union member|arrested|convicted|address is|phone number|e-?mail is|\d+k\b",
    re.I,
)
_EXPLICIT = re.compile(r"\b(remember|forget) that (.+)", re.I | re.S)
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^i am (.+)$|^i'm (.+)$", re.I), "{name} is {0}"),
    (re.compile(r"^my (.+?) is (.+)$", re.I), "{name}'s {0} is {1}"),
    (re.compile(r"^i have (.+)$", re.I), "{name} has {0}"),
    (re.compile(r"^i (\w+) (.+)$", re.I), "{name} {verb} {1}"),
]


def _third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def sentence_fact(name: str, sentence: str) -> str | None:
    """The third-person fact in a first-person sentence, or None when it is not about the speaker."""
    s = sentence.strip().rstrip(",;:")
    for pattern, template in _PATTERNS:
        match = pattern.match(s)
        if match:
            groups = [g for g in match.groups() if g is not None]
            if "{verb}" in template:
                return template.format(*groups, name=name, verb=_third_person(groups[0].lower()))
            return template.format(*groups, name=name)
    return None


_LINE = re.compile(r"^(m\d+) (?:(\d\d:\d\d) )?(.+?): (.*)$")  # a selection's lines have no time
_CHANNEL = re.compile(r"^== channel (\d+) ==$")
# A sentence about the group rather than the speaker: a rule, an event, a shared resource, a decision.
_COMMUNITY = re.compile(
    r"^(?:game night|movie night|the server|the tournament|the raid|our|we|everyone|rule)\b", re.I
)


def read_chunk(prompt: str) -> dict[str, Any]:
    """An extraction prompt read back: the speakers as listed, and each message's local id, time,
    speaker name, whether it is the bot's, and text (as a model reads the compact transcript)."""
    speakers: list[str] = []
    messages: list[dict[str, Any]] = []
    channel = 1
    for line in prompt.splitlines():
        if line.startswith("Speakers: "):
            speakers = [s for s in line[len("Speakers: ") :].split(", ") if not s.startswith("BOT")]
        elif found := _CHANNEL.match(line):
            channel = int(found.group(1))
        elif match := _LINE.match(line):
            local, time, author, text = match.groups()
            messages.append(
                {
                    "id": local,
                    "time": time,
                    "author": author,
                    "bot": author == "BOT",
                    "text": text,
                    "channel": channel,
                }
            )
    return {"speakers": speakers, "messages": messages}


def extract(payload: dict[str, Any]) -> dict[str, Any]:
    """People's facts from first-person sentences, community facts from sentences about the group, and
    an episode per channel whose points are its people's sentences (sensitive ones marked)."""
    facts, community = [], []
    episodes: dict[int, list[dict[str, Any]]] = {}
    for message in payload["messages"]:
        if message["bot"]:
            continue
        for sentence in _SENTENCE.findall(message["text"]):
            sensitive = bool(_SENSITIVE.search(sentence))
            fact = sentence_fact(message["author"], sentence)
            if fact:
                facts.append(
                    {
                        "speaker": message["author"],
                        "text": fact,
                        "sources": [message["id"]],
                        "sensitive": sensitive,
                    }
                )
            elif _COMMUNITY.match(sentence.strip()):
                text = sentence.strip()
                community.append({"text": text[0].upper() + text[1:], "sources": [message["id"]]})
            if len(sentence.split()) >= 3:
                point = {"text": f"{message['author']}: {sentence.strip()}", "sources": [message["id"]]}
                episodes.setdefault(message.get("channel", 1), []).append({**point, "sensitive": sensitive})
    return {
        "facts": facts,
        "community": community,
        "episodes": [{"channel": n, "points": points} for n, points in episodes.items()],
    }


def select(payload: dict[str, Any]) -> dict[str, Any]:
    """The selection answer for the same judgement: the ids of the lines `extract` takes a fact from
    (under sensitive or community as it marks them), and the same episodes."""
    found = extract(payload)
    chosen: dict[str, list[str]] = {"self": [], "sensitive": [], "community": []}
    for fact in found["facts"]:
        chosen["sensitive" if fact["sensitive"] else "self"].append(fact["sources"][0])
    chosen["community"] = [fact["sources"][0] for fact in found["community"]]
    return {**{kind: list(dict.fromkeys(ids)) for kind, ids in chosen.items()}, "episodes": found["episodes"]}


_REQUEST = re.compile(r"^.*?\b(?:remember|note) that\s+", re.I)


def remember(payload: dict[str, Any]) -> dict[str, Any]:
    facts = []
    for sentence in _SENTENCE.findall(payload["asked_to_remember"]):
        fact = sentence_fact(payload["person"], _REQUEST.sub("", sentence.strip()))
        if fact:
            facts.append({"text": fact, "sensitive": bool(_SENSITIVE.search(fact))})
    return {"facts": facts}


# A gullible model: an instruction anywhere in the conversation (another member's message, a file) to
# call remember with some text is obeyed, as the attack on the remember tool needs.
_PLANTED = re.compile(r'call remember with "([^"]+)"', re.I)


def tool_call(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A call of the bot's remember/forget tool for an explicit request, when the request offers it."""
    offered = offered_tools(body)
    match = _EXPLICIT.search(last_user_text(body))
    if match is None or match.group(1).lower() not in offered:
        said = "\n".join(p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []))
        planted = _PLANTED.search(said)
        if planted is None or "remember" not in offered:
            return None
        return [{"functionCall": {"name": "remember", "args": {"what": planted.group(1)}}}]
    return [{"functionCall": {"name": match.group(1).lower(), "args": {"what": match.group(2).strip()}}}]


_ASKED = re.compile(r"\bdo you (?:still )?(?:remember|recall)\b(?P<topic>[^?]*)\?", re.I)
_ABOUT = re.compile(r"\babout (?P<name>[\w-]+)|\b(?P<owner>[\w-]+)'s\b", re.I)
_SELF = frozenset({"me", "my", "i", "myself"})
_FILLER = frozenset(
    "what which who anything something about remember recall know called named again tell me is are was were "
    "the a an of do does did you your has have had my me i".split()
)


_WE = re.compile(r"\b(?:we|us|our)\b", re.I)
_WE_WORDS = frozenset("we us our decided decide said talked discussed".split())


def offered_tools(body: dict[str, Any]) -> set[str]:
    return {f["name"] for tool in body.get("tools") or [] for f in tool.get("functionDeclarations") or []}


def search_call(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A search_memory call, as a model makes one when asked "do you remember ...?" about someone and the
    background block does not answer it: the person named ("about Ana", "Ana's"; else the speaker), the
    question's topic words as the query (none: their newest facts). After an answer whose texts are
    cut, one more call asks for those facts in full."""
    if "search_memory" not in offered_tools(body):
        return None
    contents = body.get("contents") or []
    answers = [p["functionResponse"] for p in (contents[-1].get("parts") or []) if "functionResponse" in p]
    if answers:
        asked_full = any("ids" in (c.get("args") or {}) for c in function_calls(body))
        answer = answers[-1].get("response") or {}
        cut = [str(f["id"]) for f in answer.get("facts", []) if str(f.get("text", "")).endswith("…")]
        if not cut or asked_full:
            return None
        args = {"person": answer.get("person", ""), "query": "", "ids": ", ".join(cut)}
        return [{"functionCall": {"name": "search_memory", "args": args}}]
    said = last_user_text(body)
    asked = _ASKED.search(said)
    if asked is None:
        return None
    if _WE.search(asked.group("topic")):  # "do you remember what we decided about the raid?"
        topic = [
            w for w in re.findall(r"[\w']+", asked.group("topic").lower()) if w not in _FILLER | _WE_WORDS
        ]
        args = {"person": "the server", "query": " ".join(topic)}
        return [{"functionCall": {"name": "search_memory", "args": args}}]
    named = _ABOUT.search(asked.group("topic")) or _ABOUT.search(said)
    speaker = said.rsplit("\n", 1)[-1].split(":", 1)[0].strip()
    person = (named.group("name") or named.group("owner")) if named else speaker
    person = speaker if person.lower() in _SELF else person
    topic = [
        w
        for w in re.findall(r"[\w']+", asked.group("topic").lower())
        if w not in _FILLER and w != person.lower()
    ]
    topic = [w.removesuffix("'s") for w in topic if w.removesuffix("'s") != person.lower()]
    block = system_text(body).lower()
    if topic and all(w in block for w in topic):
        return None  # the block answers it
    args = {"person": person, "query": " ".join(topic)}
    return [{"functionCall": {"name": "search_memory", "args": args}}]


def function_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        p["functionCall"]
        for c in body.get("contents") or []
        for p in c.get("parts") or []
        if "functionCall" in p
    ]


def remembered_reply(body: dict[str, Any]) -> str | None:
    """The answer after lookups: what they found, in full where it was asked for, or that nothing was."""
    contents = body.get("contents") or []
    answers = [
        p["functionResponse"].get("response") or {}
        for p in (contents[-1].get("parts") or [])
        if "functionResponse" in p
    ]
    if not answers:
        return None
    texts = [str(f.get("text", "")) for answer in answers for f in answer.get("facts", [])]
    texts += [str(c.get("text", "")) for answer in answers for c in answer.get("conversations", [])]
    return "From memory: " + "; ".join(texts) if texts else "I don't remember anything about that."


def _predicate(text: str) -> str:
    """The kind of statement: the two words after the name ("lives in", "works as")."""
    words = text.split()
    return " ".join(words[1:3]).lower()


def consolidate(payload: dict[str, Any]) -> dict[str, Any]:
    decisions = []
    for item in payload["new_facts"]:
        same_kind = [c for c in item["candidates"] if _predicate(c["text"]) == _predicate(item["text"])]
        if same_kind:
            decisions.append(
                {"new_fact": item["new_fact"], "decision": "INVALIDATE", "target_fact_id": same_kind[0]["id"]}
            )
        else:
            decisions.append({"new_fact": item["new_fact"], "decision": "KEEP"})
    return {"decisions": decisions}


def system_text(body: dict[str, Any]) -> str:
    parts = (body.get("systemInstruction") or body.get("system_instruction") or {}).get("parts", [])
    return "".join(p.get("text", "") for p in parts)


def last_user_text(body: dict[str, Any]) -> str:
    contents = body.get("contents", [])
    return "".join(p.get("text", "") for p in contents[-1].get("parts", [])) if contents else ""


class FakeBrain:
    """Callable generate_handler: memory tasks by rule, chat by `chat_reply`; records chat requests."""

    def __init__(self, chat_reply: str | Callable[[dict[str, Any]], str] = "Nice to hear from you!") -> None:
        self.chat_reply = chat_reply
        self.chat_requests: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> str | list[dict[str, Any]]:
        system = system_text(body)
        if system.startswith((EXTRACT_TASK, REWRITE_TASK)):
            return json.dumps(extract(read_chunk(last_user_text(body))))
        if system.startswith(SELECT_TASK):
            return json.dumps(select(read_chunk(last_user_text(body))))
        if system.startswith(CONSOLIDATE_TASK):
            return json.dumps(consolidate(json.loads(last_user_text(body))))
        if system.startswith(REMEMBER_TASK):
            return json.dumps(remember(json.loads(last_user_text(body))))
        self.chat_requests.append(body)
        call = tool_call(body) or search_call(body)
        if call is not None:
            return call
        found = remembered_reply(body)
        if found is not None:
            return found
        return self.chat_reply(body) if callable(self.chat_reply) else self.chat_reply
