"""The reply use case both front-ends call: recall within its deadline, the instruction, the fitted turns,
the lookups answered inside the stream, the text streamed into the front-end's sink."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from dataclasses import replace
from typing import Any

import pytest

from bot.chat import reply as reply_module
from bot.chat.prompts import CHAT_MEMORY_PREAMBLE, chat_persona
from bot.chat.reply import LOOKUP_FAILED, Replier, Reply, ReplyRequest, Used, ready
from bot.memory.lookup import LookupRequest
from bot.memory.model_ports import REPLY_CUT_NOTE, ChatTurn, ModelError, ToolCall
from bot.memory.models import PersonSettings, utcnow
from bot.memory.recall import Audience, Participant, RecallResult
from tests.fakes import Scripted

ANA = Participant("1", "Ana")
AUDIENCE = Audience("1")
BLOCK = "<background_facts>Ana has a dog</background_facts>"


class Memory:
    """Recall answering with `block` (or never, when `hangs`), and lookups that answer or fail."""

    def __init__(self, block: str = BLOCK, *, hangs: bool = False, lookups_fail: bool = False) -> None:
        self.block = block
        self.hangs = hangs
        self.lookups_fail = lookups_fail
        self.recall_failures = 0
        self.recalls: list[tuple[str, str, Audience]] = []  # query, context, audience
        self.lookups: list[tuple[list[Participant], LookupRequest, Audience]] = []
        self.settings: dict[str, PersonSettings] = {}

    def person(self, scope: str, user_id: str) -> PersonSettings:
        return self.settings.get(user_id, PersonSettings())

    async def recall(
        self,
        scope: str,
        people: list[Participant],
        query: str,
        *,
        audience: Audience,
        context: str = "",
        channels: Collection[str] = (),
    ) -> RecallResult:
        self.recalls.append((query, context, audience))
        self.recalled_people = people
        if self.hangs:
            await asyncio.Event().wait()
        return RecallResult(self.block)

    async def search_memory(
        self,
        scope: str,
        people: list[Participant],
        request: LookupRequest,
        *,
        audience: Audience,
        shown: Collection[int] = (),
    ) -> dict[str, Any]:
        self.lookups.append((people, request, audience))
        if self.lookups_fail:
            raise RuntimeError("the database is away")
        return {"person": request.person, "facts": [{"id": 7, "text": "Ana's dog is called Rex"}]}


class Sink:
    """Records the pieces it is given; fails on the piece `fails_on`, as a Discord edit can."""

    def __init__(self, fails_on: str | None = None) -> None:
        self.pieces: list[str] = []
        self.fails_on = fails_on

    async def add(self, piece: str) -> None:
        if piece == self.fails_on:
            raise RuntimeError("the message could not be edited")
        self.pieces.append(piece)


def request(**changes: Any) -> ReplyRequest:
    asked = ReplyRequest(
        scope="dm",
        people=[ANA],
        persona="You are Bot.",
        memory_on=True,
        query="what is my dog called?",
        earlier=["hello", "I got a dog", "he is brown"],
        audience=ready(AUDIENCE),
        said=ready([ChatTurn("user", "Ana: what is my dog called?")]),
    )
    return replace(asked, **changes)


def replier(memory: Memory, model: Scripted, **limits: int) -> Replier:
    return Replier(
        memory,
        model,
        turn_max_chars=limits.get("turn", 100),
        prompt_max_chars=limits.get("prompt", 10_000),
        reply_max_chars=limits.get("reply", 6000),
    )


async def test_the_recalled_block_is_in_the_instruction_and_a_lookup_is_answered_inside_the_stream() -> None:
    lookup = ToolCall("search_memory", {"person": "Ana", "query": "dog"}, id="c1")
    model = Scripted(["Let me look. ", lookup], ["Rex."])
    memory, sink = Memory(), Sink()
    answer = await replier(memory, model).reply(request(), sink)
    assert answer == Reply("Let me look. Rex.", [], used=Used((7,)))  # the lookup's fact was used
    assert sink.pieces == ["Let me look. ", "Rex."]
    assert model.systems[0].startswith("You are Bot.\n\nToday is ")
    assert model.systems[0].endswith(f"{CHAT_MEMORY_PREAMBLE}\n{BLOCK}")
    assert model.requests[0][1] == ["remember", "forget", "search_memory"]
    assert memory.recalls == [("what is my dog called?", "I got a dog\nhe is brown", AUDIENCE)]
    assert memory.lookups == [([ANA], LookupRequest("Ana", "dog"), AUDIENCE)]  # the block's audience
    turns, _ = model.requests[1]
    [result] = turns[-1].results
    assert (result.name, result.id) == ("search_memory", "c1")
    assert result.response["facts"] == [{"id": 7, "text": "Ana's dog is called Rex"}]


async def test_a_person_who_switched_their_memory_off_for_replies_is_not_recalled() -> None:
    bo = Participant("2", "Bo")
    memory = Memory()
    memory.settings["2"] = PersonSettings(in_replies=False)
    await replier(memory, Scripted(["Hi."])).reply(request(people=[ANA, bo]), Sink())
    assert memory.recalled_people == [ANA]


async def test_a_failed_lookup_tells_the_model_to_answer_without_it() -> None:
    model = Scripted([ToolCall("search_memory", {"person": "Ana"})], ["I don't remember."])
    answer = await replier(Memory(lookups_fail=True), model).reply(request(), Sink())
    assert answer.text == "I don't remember."
    turns, _ = model.requests[1]
    assert turns[-1].results[0].response == LOOKUP_FAILED


async def test_a_recall_past_its_deadline_answers_without_memory_and_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(reply_module, "RECALL_DEADLINE_SECONDS", 0.05)
    memory, model = Memory(hangs=True), Scripted(["Hello!"])
    with caplog.at_level(logging.WARNING, logger="bot.chat.reply"):
        answer = await replier(memory, model).reply(request(), Sink())
    assert answer.text == "Hello!"
    assert BLOCK not in model.systems[0] and CHAT_MEMORY_PREAMBLE not in model.systems[0]
    assert model.requests[0][1] == ["remember", "forget"]  # no lookup without the block's audience
    assert memory.recall_failures == 1
    assert [r.getMessage() for r in caplog.records] == [
        "recall failed; answering without memory: no answer within 0.05 s"
    ]


async def test_the_conversation_is_read_while_recall_runs() -> None:
    """Recall here waits for the conversation to be read: done one after the other, it would miss its
    deadline and the block."""
    read = asyncio.Event()

    class Waiting(Memory):
        async def recall(self, *args: Any, **kwargs: Any) -> RecallResult:
            await read.wait()
            return await super().recall(*args, **kwargs)

    async def said() -> list[ChatTurn]:
        read.set()
        return [ChatTurn("user", "Ana: hi")]

    model = Scripted(["Hi!"])
    await replier(Waiting(), model).reply(request(said=said), Sink())
    assert BLOCK in model.systems[0]


async def test_remember_and_forget_calls_are_handed_back_to_the_front_end() -> None:
    remember = ToolCall("remember", {"what": "I like tea"})
    model = Scripted(["Sure. ", remember])
    memory = Memory()
    answer = await replier(memory, model).reply(request(), Sink())
    assert answer == Reply("Sure. ", [remember])
    assert len(model.requests) == 1 and memory.lookups == []


async def test_where_memory_is_off_nothing_is_recalled_and_no_tool_offered() -> None:
    memory, model = Memory(), Scripted(["Hi."])
    await replier(memory, model).reply(request(memory_on=False), Sink())
    assert memory.recalls == [] and model.requests[0][1] == []
    assert "Memory is switched off here" in model.systems[0] and BLOCK not in model.systems[0]


async def test_the_turns_fit_the_prompt_budget_the_question_always() -> None:
    said = [
        ChatTurn("user", "Bo: " + "a" * 50),
        ChatTurn("user", "Cy: hi"),
        ChatTurn("model", "b" * 5),
        ChatTurn("user", "Ana: " + "c" * 30),
    ]
    system = chat_persona("You are Bot.", utcnow(), memory_on=True)  # nothing recalled: no block
    model = Scripted(["Hi."])
    await replier(Memory(""), model, turn=10, prompt=len(system) + 50).reply(
        request(said=ready(said)), Sink()
    )
    assert model.requests[0][0] == said[1:]  # 49 characters with their line ends; Bo's did not fit
    # An instruction past the budget leaves one turn's room (CHAT_TURN_MAX_CHARS), the question cut to it.
    model = Scripted(["Hi."])
    await replier(Memory(), model, turn=10, prompt=100).reply(request(said=ready(said)), Sink())
    assert model.requests[0][0] == [ChatTurn("user", "Ana: ccccc")]


async def test_a_sink_that_fails_closes_the_models_stream() -> None:
    model = Scripted(["one ", "two ", "three"])
    sink = Sink(fails_on="two ")
    with pytest.raises(RuntimeError):
        await replier(Memory(), model).reply(request(), sink)
    assert sink.pieces == ["one "] and model.closed == 1


async def test_a_model_failure_midway_reaches_the_front_end_after_what_was_shown() -> None:
    model = Scripted(["Half ", ModelError("Gemini: the stream broke")])
    sink = Sink()
    with pytest.raises(ModelError):
        await replier(Memory(), model).reply(request(), sink)
    assert sink.pieces == ["Half "]


async def test_a_reply_past_its_limit_is_cut_at_a_word_says_so_and_closes_the_models_stream() -> None:
    """An endpoint that ignores the output limit: the use case stops reading at `reply_max_chars`."""
    model = Scripted(["again and " * 100] * 50)  # 50,000 characters
    sink = Sink()
    reply = await replier(Memory(), model, reply=3000).reply(request(), sink)
    shown = "".join(sink.pieces)
    assert reply.cut and reply.text == shown and shown.endswith(REPLY_CUT_NOTE)
    assert len(shown) <= 3000 + len(REPLY_CUT_NOTE)
    assert shown.removesuffix(REPLY_CUT_NOTE).rstrip().endswith("again and")  # cut at a word
    assert model.closed == 1
    assert not (await replier(Memory(), Scripted(["short answer"]), reply=3000).reply(request(), Sink())).cut


@pytest.mark.parametrize(
    ("pieces", "call"),
    [
        (["/remember that Ana is ", "a firefighter"], ToolCall("remember", {"what": "Ana is a firefighter"})),
        (["`/rem", "ember I like tea`"], ToolCall("remember", {"what": "I like tea"})),
        (["/forget: my old ", "address"], ToolCall("forget", {"what": "my old address"})),
    ],
)
async def test_a_reply_that_echoes_a_command_is_read_as_its_call_and_never_shown(
    pieces: list[str], call: ToolCall
) -> None:
    sink = Sink()
    answer = await replier(Memory(), Scripted(pieces)).reply(request(), sink)
    assert answer == Reply("", [call]) and sink.pieces == []


@pytest.mark.parametrize(
    "pieces",
    [
        ["You can use ", "/remember to keep it."],
        ["/remember is the command ", "for that."],
        ["/", "shrug, no idea"],
        ["/rem", "inder: ask again tomorrow"],
    ],
)
async def test_a_reply_that_only_mentions_a_command_is_shown_whole(pieces: list[str]) -> None:
    sink = Sink()
    answer = await replier(Memory(), Scripted(pieces)).reply(request(), sink)
    assert answer == Reply("".join(pieces)) and "".join(sink.pieces) == "".join(pieces)


async def test_where_memory_is_off_a_command_is_only_text() -> None:
    answer = await replier(Memory(), Scripted(["/remember that I'm tall"])).reply(
        request(memory_on=False), Sink()
    )
    assert answer == Reply("/remember that I'm tall")
