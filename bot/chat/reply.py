"""One reply, built the same way for Discord and the terminal: the chat's use case.

A front-end reads its conversation (who is present, who will read the answer, the turns) and hands
over a sink for the text; this module does the rest for both: recall within its deadline (answering
without memory, and logging why, when it fails or is late), the system instruction (persona, memory
guide, recalled block), the turns fitted into the prompt budget, and the tool rounds, in which the
model's lookups (search_memory) are answered under the block's audience. Its calls of remember and
forget are handed back: the front-end acts on them in its own words. It speaks to the engine's ports
and memory only, never to discord or a model SDK (tests/unit/test_layering.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from bot.chat.prompts import (
    FORGET_TOOL,
    REMEMBER_TOOL,
    SEARCH_MEMORY_TOOL,
    chat_persona,
    fit_turns,
    with_recalled,
)
from bot.chat.tool_rounds import ToolHandler, answer_with_tools
from bot.memory.lookup import LookupRequest
from bot.memory.model_ports import REPLY_CUT_NOTE, ChatModel, ChatTool, ChatTurn, ToolCall
from bot.memory.models import PersonSettings, utcnow
from bot.memory.recall import Audience, Participant, RecallResult
from bot.memory.text import cut

log = logging.getLogger(__name__)
CUT_NOTE = REPLY_CUT_NOTE
CHARS_PER_TOKEN = 4  # what a reply's token limit allows in characters, a little over most models' average

RECALL_DEADLINE_SECONDS = 5.0  # past this the reply goes without memory rather than keep people waiting
QUERY_TURNS = 3  # recall searches for the message answered, with the two human turns before it as context
QUERY_MAX_CHARS = 2000
LOOKUP_FAILED = {"error": "memory cannot be searched just now; answer without it"}

T = TypeVar("T")


class ReplyMemory(Protocol):
    """What a reply needs of memory (`MemoryService` offers it): recall, the model's lookups, and
    people's own settings (whose memories may serve replies)."""

    recall_failures: int

    def person(self, scope: str, user_id: str) -> PersonSettings: ...

    async def recall(
        self,
        scope: str,
        people: list[Participant],
        query: str,
        *,
        audience: Audience,
        context: str = "",
        channels: Collection[str] = (),
    ) -> RecallResult: ...

    async def search_memory(
        self,
        scope: str,
        people: list[Participant],
        request: LookupRequest,
        *,
        audience: Audience,
        shown: Collection[int] = (),
    ) -> dict[str, Any]: ...


class ReplySink(Protocol):
    """Where a front-end shows the reply while it streams (Discord edits messages, a terminal writes)."""

    async def add(self, piece: str) -> None:
        """Show the next piece of the reply's text."""
        ...


@dataclass(frozen=True)
class ReplyRequest:
    """What a front-end read of its conversation: where, with whom, for whom, and what to answer.

    `audience` and `said` are read while recall runs (`audience` within its deadline, since Discord
    asks for permissions): who will read the reply, and the conversation's turns, oldest first.
    """

    scope: str
    people: list[Participant]  # whose memories the reply may use
    persona: str
    memory_on: bool
    query: str  # the message being answered, as recall should search for it
    audience: Callable[[], Awaitable[Audience]]
    said: Callable[[], Awaitable[list[ChatTurn]]]
    earlier: Sequence[str] = ()  # the people's turns before it, oldest first: recall's context
    channels: Sequence[str] = ()  # channels the message names ("what did I miss in #general?")


@dataclass(frozen=True)
class Used:
    """The memories a reply was given: the block's facts and episodes, and the facts the model's lookups
    returned (ids), so that its asker can see them (each front-end says how)."""

    fact_ids: tuple[int, ...] = ()
    episode_ids: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.fact_ids or self.episode_ids)


@dataclass(frozen=True)
class Reply:
    """The reply's whole text, the calls of tools the front-end answers (remember, forget), and the
    memories it used."""

    text: str
    calls: list[ToolCall] = field(default_factory=list)
    cut: bool = False  # it ran past the reply's limit and was cut, saying so
    used: Used = Used()


@dataclass
class UsedMemories:
    """What one reply's block and lookups put in front of the model so far, in order (ids)."""

    facts: dict[int, None] = field(default_factory=dict)
    episodes: dict[int, None] = field(default_factory=dict)

    def read(self) -> Used:
        return Used(tuple(self.facts), tuple(self.episodes))


def ready(value: T) -> Callable[[], Awaitable[T]]:
    """A value a front-end already has, given where a request wants one to await."""

    async def given() -> T:
        return value

    return given


class Replier:
    """Replies with memory through one chat model; each front-end holds one."""

    def __init__(
        self,
        memory: ReplyMemory,
        model: ChatModel,
        *,
        turn_max_chars: int,
        prompt_max_chars: int,
        reply_max_chars: int = 6000,
    ) -> None:
        """`reply_max_chars`: the longest reply shown; past it the stream is closed and the reply says it
        was cut (the model's own output limit is the first bound; this holds when an endpoint ignores it)."""
        self.memory = memory
        self.model = model
        self.turn_max_chars = turn_max_chars
        self.prompt_max_chars = prompt_max_chars
        self.reply_max_chars = reply_max_chars

    async def reply(self, request: ReplyRequest, sink: ReplySink) -> Reply:
        """Stream the reply to `request` into `sink`. The model's errors (ModelError and its kinds)
        are raised for the front-end to tell in its own way; an empty text is the front-end's to judge."""
        request = replace(request, people=self.serving(request))
        used = UsedMemories()
        (system, lookup), said = await asyncio.gather(self.instruction(request, used), request.said())
        stream = answer_with_tools(
            self.model,
            system=system,
            turns=self.fit(said, system),
            tools=offered(request.memory_on, lookup=lookup is not None),
            handlers={SEARCH_MEMORY_TOOL.name: lookup} if lookup is not None else {},
        )
        text, calls, shown = "", [], 0  # shown: how much of the text the sink has
        tools = bool(offered(request.memory_on, lookup=lookup is not None))
        async with contextlib.aclosing(stream):  # a sink that fails closes the model's request too
            async for piece in stream:
                if isinstance(piece, ToolCall):
                    calls.append(piece)
                    continue
                if len(text) + len(piece) > self.reply_max_chars:  # a runaway: cut, say so, stop asking
                    text += cut(text + piece, self.reply_max_chars)[len(text) :] + CUT_NOTE
                    await sink.add(text[shown:])
                    log.warning("a reply ran past %d characters; it was cut there", self.reply_max_chars)
                    return Reply(text, calls, cut=True, used=used.read())
                text += piece
                if not shown and tools and may_be_a_command(text):
                    continue  # not shown while it may be an echoed command
                await sink.add(text[shown:])
                shown = len(text)
        if not shown and tools and (call := echoed_command(text)) is not None:
            log.info("the chat model answered with a command of the bot (%s); read as its call", call.name)
            return Reply("", [*calls, call], used=used.read())
        if shown < len(text):
            await sink.add(text[shown:])
        return Reply(text, calls, used=used.read())

    def serving(self, request: ReplyRequest) -> list[Participant]:
        """The people whose memories may serve the reply: not those who switched that off here."""
        return [p for p in request.people if self.memory.person(request.scope, p.user_id).in_replies]

    async def instruction(
        self, request: ReplyRequest, used: UsedMemories | None = None
    ) -> tuple[str, ToolHandler | None]:
        """The persona, the memory guide and the recalled block; and the handler of the model's lookups
        under the block's audience (None when memory is off, or recall failed or was late). What the
        block holds, and what the lookups return, is noted in `used`."""
        persona = chat_persona(request.persona, utcnow(), memory_on=request.memory_on)
        if not request.memory_on:
            return persona, None
        context = "\n".join(request.earlier[-(QUERY_TURNS - 1) :])[-QUERY_MAX_CHARS:]
        try:
            async with asyncio.timeout(RECALL_DEADLINE_SECONDS):
                audience = await request.audience()
                recalled = await self.memory.recall(
                    request.scope,
                    request.people,
                    request.query[:QUERY_MAX_CHARS],
                    context=context,
                    audience=audience,
                    channels=request.channels,
                )
        except Exception as exc:
            self.memory.recall_failures += 1
            reason = (
                f"no answer within {RECALL_DEADLINE_SECONDS:g} s" if isinstance(exc, TimeoutError) else exc
            )
            log.warning("recall failed; answering without memory: %s", reason)
            return persona, None
        used = used if used is not None else UsedMemories()
        used.facts.update(dict.fromkeys(recalled.fact_ids))
        used.episodes.update(dict.fromkeys(e.id for e in recalled.episodes))
        lookup = self.lookup(request, audience, frozenset(recalled.fact_ids), used)
        return with_recalled(persona, recalled.block), lookup

    def lookup(
        self, request: ReplyRequest, audience: Audience, shown: frozenset[int], used: UsedMemories
    ) -> ToolHandler:
        """The search_memory handler of one reply: the engine's lookup among the reply's people, under
        its audience; a failure is an answer telling the model to go on without it."""

        async def search(call: ToolCall) -> dict[str, Any]:
            asked = LookupRequest.from_args(call.args)
            try:
                async with asyncio.timeout(RECALL_DEADLINE_SECONDS):
                    found = await self.memory.search_memory(
                        request.scope, request.people, asked, audience=audience, shown=shown
                    )
            except Exception as exc:
                log.warning("a memory lookup failed; the reply goes on without it: %r", exc)
                return dict(LOOKUP_FAILED)
            used.facts.update(dict.fromkeys(f["id"] for f in found.get("facts", []) if "id" in f))
            return found

        return search

    def fit(self, said: list[ChatTurn], system: str) -> list[ChatTurn]:
        """The newest turns that fit beside `system` in CHAT_PROMPT_MAX_CHARS, the question always; the
        room is never below CHAT_TURN_MAX_CHARS, so a long persona cannot crowd out the question."""
        room = max(self.prompt_max_chars - len(system), self.turn_max_chars)
        return fit_turns([replace(turn, text=turn.text[:room]) for turn in said], room)


# A reply that is one of the bot's own commands ("/remember that Ana is a firefighter"): a small model
# told to point people to /remember wrote the command itself as its whole answer (issue 34).
_COMMAND = re.compile(
    r"^[\s`*_]*/(?P<name>remember|forget)\b[\s:,-]*+(?!(?:is|lets|will|can|to|command)\b)(?:that\s+)?(?P<what>.*)",
    re.I | re.S,
)
_COMMANDS = ("remember", "forget")


def may_be_a_command(text: str) -> bool:
    """Whether the beginning of a reply may still turn out to be a command of the bot (held back)."""
    start = text.lstrip(" \t\n`*_")
    if not start:
        return True
    if not start.startswith("/"):
        return False
    word = start[1:]
    if word[:1].isspace() or any(c.isspace() for c in word):
        return _COMMAND.match(text) is not None and len(text) < 200
    return any(name.startswith(word.lower()) or word.lower().startswith(name) for name in _COMMANDS)


def echoed_command(text: str) -> ToolCall | None:
    """The call a reply that is a command of the bot stands for: /remember -> remember, /forget -> forget,
    with the rest as its `what`; None for any other reply (a reply that only mentions /remember is one)."""
    match = _COMMAND.match(text)
    if match is None:
        return None
    tool = REMEMBER_TOOL if match["name"].lower() == "remember" else FORGET_TOOL
    return ToolCall(tool.name, {"what": match["what"].strip().strip("`*_").strip()})


def offered(memory_on: bool, *, lookup: bool) -> tuple[ChatTool, ...]:
    """What the model may ask the bot to do where memory is on: remember or forget for the person
    answered, and look further into the memories of the people present (`lookup`: recall worked)."""
    if not memory_on:
        return ()
    return (REMEMBER_TOOL, FORGET_TOOL, SEARCH_MEMORY_TOOL) if lookup else (REMEMBER_TOOL, FORGET_TOOL)
