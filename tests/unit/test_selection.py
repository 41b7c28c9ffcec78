"""Selection, then writing: the model answers line ids, the bot writes the facts (scripted answers)."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel, ValidationError

from bot.memory.clauses import own_clauses
from bot.memory.durable import sensitive
from bot.memory.extract import SELECT, extract_chunk
from bot.memory.model_ports import ModelBadAnswer, ModelCutOff, PartialCheck, Purpose, answer_budget
from bot.memory.models import COMMUNITY_ID, BufferedMessage
from bot.memory.prompts.extraction import REWRITE_TASK
from bot.memory.prompts.selection import SELECT_TASK, SelectionResult
from bot.memory.selection import select_budget, selection_check
from tests.unit.test_extract import NOW

T = TypeVar("T", bound=BaseModel)
ANA, BEN, BOT = "501", "502", "599"
NAMES = {ANA: "Ana", BEN: "Ben", BOT: "Memo"}


def said(n: int, author: str, text: str) -> BufferedMessage:
    return BufferedMessage(
        message_id=str(9000 + n),
        scope="guild:1",
        channel_id="c1",
        author_id=author,
        author_name=NAMES[author],
        content=text,
        created_at=f"2026-11-24T14:{n:02d}:00Z",
        is_bot=author == BOT,
    )


class Answers:
    """A model answering the selection call with `selection` and the rewrite call with `rewrite`,
    recording each call's task, prompt and token limit. Given `stop_early`, it streams like the
    OpenAI-compatible client: the answer's JSON is judged a few characters at a time, and a reason
    stops it there (`stopped`: the reason and the text read) with ModelCutOff."""

    def __init__(self, selection: Any, rewrite: Any = None) -> None:
        self.answers = {SELECT_TASK: selection, REWRITE_TASK: rewrite}
        self.calls: list[tuple[str, str, int | None]] = []
        self.stopped: list[tuple[str, str]] = []

    async def generate_json(
        self,
        purpose: Purpose,
        *,
        system: str,
        prompt: str,
        schema: type[T],
        max_output_tokens: int | None = None,
        stop_early: PartialCheck | None = None,
    ) -> T:
        task = system.splitlines()[0]
        self.calls.append((task, prompt, max_output_tokens))
        written = json.dumps(self.answers[task])
        for end in range(3, len(written) + 3, 3) if stop_early else ():
            if reason := stop_early(written[:end]):
                self.stopped.append((reason, written[:end]))
                raise ModelCutOff(reason, purpose=purpose)
        try:
            return schema.model_validate(self.answers[task])
        except ValidationError as exc:
            raise ModelBadAnswer(f"off the schema: {exc}", purpose=purpose, retryable=True) from exc


async def facts_of(chunk: list[BufferedMessage], model: Answers) -> dict[str, list[str]]:
    found = await extract_chunk(model, chunk, NOW, mode=SELECT)
    by_person: dict[str, list[str]] = {}
    for fact in found.facts:
        by_person.setdefault(fact.user_id, []).append(fact.text)
    return by_person


async def test_the_bot_writes_the_chosen_lines_first_person_clauses_in_one_call() -> None:
    chunk = [
        said(1, ANA, "hi all! new here, I live in Porto"),
        said(2, BEN, "welcome Ana! I'm Ben, I work as a carpenter and I play the cello."),
        said(3, ANA, "nice weather"),
        said(4, BOT, "Ben, you mentioned you're a vegan chef, right?"),
    ]
    model = Answers({"self": ["m1", "m2", 4, "m9"]})
    facts = await facts_of(chunk, model)
    assert facts == {ANA: ["Ana lives in Porto"], BEN: ["Ben works as a carpenter", "Ben plays the cello"]}
    assert [task for task, _, _ in model.calls] == [SELECT_TASK]  # nothing needed a model's writing


async def test_a_change_the_choosing_model_passed_over_is_written_all_the_same() -> None:
    chunk = [
        said(1, ANA, "I live in Porto"),
        said(2, BEN, "big news: I moved from Ghent to Bergen last week"),
        said(3, ANA, "I'm home now"),
        said(4, BEN, "I left work early today"),
        said(5, ANA, "je ne travaille plus à Porto"),  # the bot cannot write it, and no model is asked to
    ]
    model = Answers({"self": ["m1"]})
    facts = await facts_of(chunk, model)
    assert facts == {
        ANA: ["Ana lives in Porto"],
        BEN: ["Ben moved from Ghent to Bergen in the week of 2026-11-16"],
    }
    assert [task for task, _, _ in model.calls] == [SELECT_TASK]


async def test_a_passed_over_change_said_across_two_clauses_and_a_new_hobby_are_written() -> None:
    chunk = [
        said(1, ANA, "I live in Porto"),
        said(2, BEN, "left the bakery in May, I drive a taxi now, nights mostly"),
        said(3, ANA, "I also took up archery on sundays"),
        said(4, BEN, "I play chess"),  # neither a change nor an addition: the model's choice stands
    ]
    model = Answers({"self": ["m1"]})
    facts = await facts_of(chunk, model)
    assert facts == {
        ANA: ["Ana lives in Porto", "Ana also took up archery on sundays"],
        BEN: ["Ben left the bakery in May", "Ben drives a taxi now, nights mostly"],
    }


async def test_what_lasts_is_written_though_the_model_passed_it_over_and_a_moment_is_not() -> None:
    chunk = [
        said(1, ANA, "I'm a nurse, I work night shifts"),
        said(2, BEN, "I live in Lyon, right by the river"),
        said(3, ANA, "my cat Miso just turned three"),
        said(4, BEN, "I had pasta for lunch"),  # a moment: only the model's choice keeps it
    ]
    facts = await facts_of(chunk, Answers({"self": ["m1"]}))
    assert facts == {
        ANA: ["Ana is a nurse", "Ana works night shifts", "Ana's cat Miso just turned three"],
        BEN: ["Ben lives in Lyon, right by the river"],
    }


async def test_a_line_the_bot_cannot_write_goes_alone_to_a_short_rewrite_call_with_its_own_id() -> None:
    chunk = [
        said(1, ANA, "I live in Porto"),
        said(2, BEN, "cello in an orchestra these days"),
        said(3, ANA, "j'habite à Porto depuis 2019"),
        said(4, BEN, "my favourite food is pierogi"),
    ]
    rewrite = {
        "facts": [{"speaker": "Ben", "text": "Ben plays the cello in an orchestra", "sources": ["m2"]}]
    }
    model = Answers({"self": ["m1", "m2", "m4"]}, rewrite)
    facts = await facts_of(chunk, model)
    assert facts == {
        ANA: ["Ana lives in Porto"],
        BEN: ["Ben's favourite food is pierogi", "Ben plays the cello in an orchestra"],
    }
    (_, _, selection_limit), (task, prompt, limit) = model.calls
    assert task == REWRITE_TASK
    assert "m2 " in prompt and "cello" in prompt
    assert "Porto" not in prompt and "pierogi" not in prompt and "m1 " not in prompt  # only that line
    assert limit == answer_budget(1) < answer_budget(len(chunk))  # sized to the one line it writes
    assert selection_limit == select_budget(len(chunk), community=True)


async def test_what_the_rewrite_writes_is_judged_like_any_proposal() -> None:
    chunk = [said(1, ANA, "Ben told me he's moving to Canada"), said(2, BEN, "eu moro em Lisboa")]
    rewrite = {
        "facts": [
            {"speaker": "Ana", "text": "Ben is moving to Canada", "sources": ["m1"]},  # about another
            {"speaker": "Ben", "text": "Ben mora em Lisboa", "sources": ["m2"]},
        ]
    }
    facts = await facts_of(chunk, Answers({"self": ["m1", "m2"]}, rewrite))
    assert facts == {BEN: ["Ben mora em Lisboa"]}


async def test_secrets_moods_hearsay_sensitive_lines_and_questions_chosen_by_the_model_are_not_stored() -> (
    None
):
    chunk = [
        said(1, ANA, "my wifi password is Tulip-4482"),
        said(2, BEN, "I'm so tired today"),
        said(3, ANA, "I think Ben is moving to Canada"),
        said(4, BEN, "I have diabetes"),
        said(5, ANA, "a puppy just adopted us! Any tips?"),
        said(6, BEN, "I adopted a puppy. Should I get a second one?"),
        said(7, BEN, "I'm in a terrible mood this morning"),
    ]
    rewrite = {
        "facts": [{"speaker": "Ana", "text": "Ana just adopted a puppy. Any tips?", "sources": ["m5"]}]
    }
    model = Answers({"self": ["m1", "m2", "m3", "m4", "m5", "m6", "m7"], "sensitive": ["m4"]}, rewrite)
    facts = await facts_of(chunk, model)
    assert facts == {ANA: ["Ana just adopted a puppy."], BEN: ["Ben adopted a puppy"]}
    rewritten = model.calls[1][1]
    assert "puppy" in rewritten and "Tulip" not in rewritten and "diabetes" not in rewritten


@pytest.mark.parametrize(
    "answer",
    [
        {},
        {"properties": {"self": {"type": "array"}}},
        {"lines": [{"x": 1}]},
        {"self": ["Ana lives in Porto"]},
    ],
)
async def test_a_selection_off_the_schema_is_unusable_never_nothing_said(answer: Any) -> None:
    with pytest.raises(ModelBadAnswer):
        await facts_of([said(1, ANA, "I live in Porto")], Answers(answer))


def test_common_answer_shapes_read_as_line_ids() -> None:
    read = SelectionResult.model_validate({"ids": [3, "M4"], "sensitive": ["m4"], "community": ["m5"]})
    assert [(line.id, line.kind) for line in read.lines] == [
        ("m4", "sensitive"),
        ("m3", "self"),
        ("m5", "community"),
    ]
    objects = SelectionResult.model_validate({"lines": [3, {"message_id": "m5", "category": "server"}]})
    assert [(line.id, line.kind) for line in objects.lines] == [("m3", "self"), ("m5", "community")]
    assert SelectionResult.model_validate({"self": []}).lines == []  # nothing durable said: a valid answer


async def test_a_community_line_is_taken_as_said_or_written_by_the_rewrite_when_it_speaks_as_we() -> None:
    chunk = [
        said(1, ANA, "Game night is every Friday at 20:00 in the voice channel"),
        said(2, BEN, "we decided the tournament moves to Saturdays"),
    ]
    rewrite = {"facts": [], "community": [{"text": "The tournament moves to Saturdays", "sources": ["m2"]}]}
    model = Answers(
        {"lines": [{"id": "m1", "kind": "community"}, {"id": "m2", "kind": "community"}]}, rewrite
    )
    found = await extract_chunk(model, chunk, NOW, mode=SELECT)
    assert sorted(f.text for f in found.facts if f.user_id == COMMUNITY_ID) == [
        "Game night is every Friday at 20:00 in the voice channel",
        "The tournament moves to Saturdays",
    ]


@pytest.mark.parametrize(
    ("text", "clauses"),
    [
        ("hello! Dev here, I live in Tartu", ["I live in Tartu"]),
        ("I'm Ben", []),
        ("btw I live in Oslo, and my dog is Rex.", ["I live in Oslo", "my dog is Rex"]),
        ("I'm allergic to peanuts, so no satay for me", ["I'm allergic to peanuts, so no satay for me"]),
        ("Rex is my dog, by the way", None),
        ("ich wohne in Graz", None),
        ("I heard the new album is great", []),
        ("in the evenings I play the cello", ["I play the cello in the evenings"]),
        # chat words closing a statement are not part of it; "remember" said as a verb is
        ("I live in Oslo btw", ["I live in Oslo"]),
        ("I'm a pharmacist, remember", ["I'm a pharmacist"]),
        ("big news: I moved to Bergen", ["I moved to Bergen"]),
        # about something else: nothing to write, and nothing for a model to write
        ("that recipe looks amazing", []),
        ("the flat is tiny but my cat loves it", ["my cat loves it"]),
        ("I still remember my first concert", ["I still remember my first concert"]),
        ("ok, I'll check it later", []),
        ("I'm running a half marathon on April 12", ["I'm running a half marathon on April 12"]),
        ("I'm not sure about that one", []),
        ("I agree, I want a new bike", []),
        (
            "I'm in a terrible mood this morning",
            ["I'm in a terrible mood this morning"],
        ),  # accept_facts refuses it
        # a new first-person clause after "so" is judged alone ("..., so I'm always tired" is a mood)
        (
            "I work as a nurse, so my hours are all over the place",
            ["I work as a nurse", "my hours are all over the place"],
        ),
    ],
)
def test_the_clauses_the_bot_writes_itself(text: str, clauses: list[str] | None) -> None:
    names = {"dev", "ben", "ana"}
    assert own_clauses(text, "Dev", names) == clauses


async def test_a_selection_of_nearly_every_line_sends_none_to_a_model() -> None:
    chunk = [said(n, ANA if n % 2 else BEN, f"chatter number {n} about the weather") for n in range(1, 12)]
    chunk.append(said(12, ANA, "I live in Porto"))
    model = Answers({"self": [f"m{n}" for n in range(1, 13)]}, {"facts": []})
    assert await facts_of(chunk, model) == {ANA: ["Ana lives in Porto"]}
    assert [task for task, _, _ in model.calls] == [SELECT_TASK]
    fewer = Answers({"self": ["m1", "m12"]}, {"facts": []})  # a choice: the line it cannot write is asked
    await facts_of(chunk, fewer)
    assert [task for task, _, _ in fewer.calls] == [SELECT_TASK, REWRITE_TASK]


async def test_a_kind_under_which_nearly_every_line_is_chosen_is_not_followed() -> None:
    chunk = [said(n, ANA if n % 2 else BEN, f"chatter number {n} about the weather") for n in range(1, 12)]
    chunk += [said(12, ANA, "I live in Porto"), said(13, BEN, "I have diabetes")]
    every = [f"m{n}" for n in range(1, 14)]
    model = Answers({"self": every, "sensitive": every, "community": every}, {"facts": []})
    found = await extract_chunk(model, chunk, NOW, mode=SELECT)
    # Sensitive on every line marks nothing; the bot's own floor still keeps diabetes out, and no line
    # is the server's on the model's word.
    assert [(f.user_id, f.text) for f in found.facts] == [(ANA, "Ana lives in Porto")]


class CutOff(Answers):
    async def generate_json(self, purpose: Purpose, **kwargs: Any) -> Any:
        if kwargs["system"].startswith(SELECT_TASK):
            self.calls.append((SELECT_TASK, kwargs["prompt"], kwargs.get("max_output_tokens")))
            raise ModelCutOff("cut off at its limit", purpose=purpose, retryable=False)
        return await super().generate_json(purpose, **kwargs)


async def test_a_selection_cut_off_at_its_budget_is_read_as_choosing_every_line() -> None:
    chunk = [said(1, ANA, "I live in Porto"), said(2, BEN, "mudei-me para Lyon no ano passado")]
    model = CutOff({}, {"facts": [{"speaker": "Ben", "text": "Ben moved to Lyon", "sources": ["m2"]}]})
    assert await facts_of(chunk, model) == {ANA: ["Ana lives in Porto"], BEN: ["Ben moved to Lyon"]}


@pytest.mark.parametrize(
    ("text", "is_sensitive"),
    [
        ("Ben has diabetes", True),
        ("Ana voted for the Greens", True),
        ("Dev's salary is 60k", True),
        ("Chloe goes to church on Sundays", True),
        ("The Minecraft server address is play.example.org", False),
        ("Dev is allergic to peanuts", False),
        ("Ana works as a nurse", False),
    ],
)
def test_the_bots_own_floor_under_the_models_sensitive_mark(text: str, is_sensitive: bool) -> None:
    assert sensitive(text) is is_sensitive


async def test_an_answer_listing_every_line_under_one_kind_is_not_followed_under_the_others() -> None:
    chunk = [said(n, ANA if n % 2 else BEN, f"chatter number {n} about the weather") for n in range(1, 12)]
    chunk += [said(12, ANA, "I live in Porto"), said(13, BEN, "I work as a carpenter")]
    every = [f"m{n}" for n in range(1, 14)]
    model = Answers({"self": ["m12"], "community": every}, {"facts": []})  # chose m12 and "everything"
    assert await facts_of(chunk, model) == {ANA: ["Ana lives in Porto"], BEN: ["Ben works as a carpenter"]}
    assert [task for task, _, _ in model.calls] == [SELECT_TASK]


async def test_a_selection_counting_a_run_of_lines_is_not_choosing() -> None:
    chunk = [said(n, ANA if n % 2 else BEN, f"chatter number {n} about the weather") for n in range(1, 20)]
    chunk += [said(20, ANA, "I live in Porto"), said(21, BEN, "I watched the match")]
    counted = Answers({"self": ["m20"], "community": [f"m{n}" for n in range(3, 15)]}, {"facts": []})
    assert await facts_of(chunk, counted) == {ANA: ["Ana lives in Porto"], BEN: ["Ben watched the match"]}
    # a choice is followed: the evening's match it passed over is not written (what lasts would be)
    few = Answers({"self": ["m20"], "community": ["m3", "m4", "m5"]}, {"facts": []})
    assert await facts_of(chunk, few) == {ANA: ["Ana lives in Porto"]}


async def test_lines_a_choosing_model_counted_through_are_read_by_the_bot_alone() -> None:
    chunk = [*chatter(9), said(10, ANA, "I'm left-handed, which is why my handwriting looks like that")]
    chunk += [said(11, BEN, "I also started freediving on weekends"), said(12, ANA, "I have diabetes")]
    chunk += [said(13, BEN, "professeur."), said(14, ANA, "lol same"), *chatter(20)[14:]]
    chunk.append(said(21, BEN, "I work as a carpenter"))
    run = [f"m{n}" for n in range(9, 15)]  # six lines in a row, all "sensitive": a count, not a choice
    model = Answers({"self": ["m21", "m13"], "sensitive": run}, {"facts": []})
    assert await facts_of(chunk, model) == {
        ANA: ["Ana is left-handed"],
        BEN: ["Ben works as a carpenter", "Ben also started freediving on weekends"],
    }  # diabetes stays out by the bot's own floor; nothing it read alone goes to a model
    assert [task for task, _, _ in model.calls] == [SELECT_TASK]
    short = Answers({"self": ["m21"], "sensitive": ["m10", "m11", "m12"]}, {"facts": []})  # a choice
    assert await facts_of(chunk, short) == {BEN: ["Ben works as a carpenter"]}


def chatter(count: int) -> list[BufferedMessage]:
    return [
        said(n, ANA if n % 2 else BEN, f"chatter number {n} about the weather") for n in range(1, count + 1)
    ]


async def test_a_selection_counting_every_line_is_stopped_once_it_has_counted_half_the_chunk() -> None:
    chunk = [*chatter(18), said(19, ANA, "I live in Porto"), said(20, BEN, "I work as a carpenter")]
    every = [f"m{n}" for n in range(1, 21)]
    model = Answers({"self": every, "episodes": [{"channel": 1, "points": []}]}, {"facts": []})
    assert await facts_of(chunk, model) == {ANA: ["Ana lives in Porto"], BEN: ["Ben works as a carpenter"]}
    [(reason, read)] = model.stopped
    assert "self list chose" in reason and "11 in a row" in reason
    assert len(re.findall(r"m\d+", read)) == 11  # stopped at the id that sealed it, not at the end
    assert [task for task, _, _ in model.calls] == [SELECT_TASK]  # no line goes to a model after


async def test_a_choosing_selection_is_read_whole_even_when_an_episode_cites_a_run_of_lines() -> None:
    chunk = [*chatter(18), said(19, ANA, "I live in Porto"), said(20, BEN, "professeur.")]
    run = [f"m{n}" for n in range(1, 21)]
    episode = {"channel": 1, "points": [{"text": "The weather talk went on", "sources": run}]}
    model = Answers({"own": ["m19", "m20"], "episodes": [episode]}, {"facts": []})
    await facts_of(chunk, model)
    assert model.stopped == []
    assert [task for task, _, _ in model.calls] == [SELECT_TASK, REWRITE_TASK]  # "professeur." is asked


async def test_a_short_chunk_is_never_stopped_for_counting() -> None:
    chunk = [*chatter(7), said(8, ANA, "I live in Porto")]
    model = Answers({"self": [f"m{n}" for n in range(1, 9)]}, {"facts": []})
    assert await facts_of(chunk, model) == {ANA: ["Ana lives in Porto"]}
    assert model.stopped == []


async def test_the_selection_reads_lines_without_their_minute_and_the_rewrite_with_it() -> None:
    chunk = [said(1, ANA, "I live in Porto"), said(2, BEN, "professeur.")]
    model = Answers({"self": ["m1", "m2"]}, {"facts": []})
    await facts_of(chunk, model)
    [(_, selection, _), (_, rewrite, _)] = model.calls
    assert "m1 Ana: I live in Porto" in selection.splitlines() and "14:0" not in selection
    assert "m2 14:02 Ben: professeur." in rewrite.splitlines()


def test_an_id_still_being_written_does_not_count_toward_a_run() -> None:
    humans = [f"m{n}" for n in range(1, 21)]
    check = selection_check(humans)
    ten = ", ".join(f'"m{n}"' for n in range(2, 12))  # a run of 10 of 20: still a choice
    assert check('{"self": [' + ten + ', "m1') is None  # the start of "m15", not m1
    assert check('{"self": [' + ten + ', "m1"') is not None  # m1 written: 11 in a row
