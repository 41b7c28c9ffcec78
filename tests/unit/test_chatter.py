"""Chatter is no fact: feelings of the moment, hyperbole and jokes, talk about the talk. Cases marked
held-out were written before the rules they test; a miss that only a special case would fix stays a
strict xfail."""

from __future__ import annotations

import pytest

from bot.memory.durable import chatter, of_the_moment
from bot.memory.extract import SELECT, accept_facts, extract_chunk, render_chunk
from bot.memory.prompts.extraction import ExtractionResult
from tests.unit.test_extract import NOW
from tests.unit.test_selection import ANA, BEN, Answers, said

FROM_THE_OUTSIDE_CHECK = [
    "Chloe doesn't remember telling you that",
    "Dev keeps forgetting",
    "Emi is dying 😂",
    "Chloe is jealous",
    "Emi is basically a professional napper on Sundays",
    "Chloe is so done",
    "Ben is annoyed",
]
HELD_OUT = [
    # feelings of the moment
    "Ana is so over it",
    "Ben is furious with his landlord",
    "I'm sooo excited",
    "Dev is nervous about tomorrow",
    "Ana is kinda salty about it",
    "Ben is gutted",
    # hyperbole and jokes
    "Ana literally lives at the gym",
    "I'm practically a local at that cafe",
    "Dev is dead 💀",
    "I'm pretty much a vampire at this point",
    "my cat runs this house 🤣",
    "Ben is a certified couch potato lol",
    "I'm screaming",
    "Ana has 400 houseplants lmao",
    "I live on coffee haha",
    # talk about the talk
    "as I said, I'm not a morning person",
    "I told you about my new job",
    "Ana forgot to mention it",
    "I can't remember where I put it",
    "Dev is in Berlin, like I mentioned",
    "I remember when I lived in Rome",
]
FACTS = [
    "I'm a teacher",
    "I'm allergic to peanuts",
    "I still remember my first concert",
    "I'm a professional photographer",
    "Ana never forgets a face",
    "I moved to Lyon last month",
    "my daughter is called Ines",
    "Ben is scared of spiders",
    "I work as a nurse",
    "Dev is done with uni",
    "Emi is dying her hair red",
    "I told my boss I'm leaving in May",
    "Ben tells stories for a living",
    "I'm basically vegetarian",
]


@pytest.mark.parametrize("text", FROM_THE_OUTSIDE_CHECK + HELD_OUT)
def test_chatter_is_refused(text: str) -> None:
    assert chatter(text) or of_the_moment(text)


@pytest.mark.parametrize("text", FACTS)
def test_a_fact_is_not_chatter(text: str) -> None:
    assert not chatter(text) and not of_the_moment(text)


async def test_a_counting_model_stores_no_chatter_and_every_fact() -> None:
    lines = [
        "I don't remember telling you that",
        "I keep forgetting",
        "I'm dying 😂",
        "I'm jealous",
        "I'm basically a professional napper on Sundays",
        "I'm a teacher",
        "I'm allergic to peanuts",
        "my daughter is called Ines",
    ]
    chunk = [said(n, ANA, text) for n, text in enumerate(lines, 1)]
    found = await extract_chunk(Answers({"self": [f"m{n}" for n in range(1, 9)]}), chunk, NOW, mode=SELECT)
    assert [f.text for f in found.facts] == [
        "Ana is a teacher",
        "Ana is allergic to peanuts",
        "Ana's daughter is called Ines",
    ]


def test_a_model_written_chatter_fact_is_refused_too() -> None:
    chunk = [said(1, ANA, "lol I'm dying 😂 I'm a nurse btw"), said(2, BEN, "I keep forgetting, I'm in Oslo")]
    view = render_chunk(chunk, NOW)
    answer = ExtractionResult.model_validate(
        {
            "facts": [
                {"speaker": "Ana", "text": "Ana is dying 😂", "sources": ["m1"]},
                {"speaker": "Ana", "text": "Ana is a nurse", "sources": ["m1"]},
                {"speaker": "Ben", "text": "Ben keeps forgetting", "sources": ["m2"]},
                {"speaker": "Ben", "text": "Ben is in Oslo", "sources": ["m2"]},
            ]
        }
    )
    assert [f.text for f in accept_facts(answer, chunk, view)] == ["Ana is a nurse", "Ben is in Oslo"]


# A second round of held-out phrasings, written after the rules and run once before any change: "never
# said that" and "mentioned that earlier" failed and were fixed by a general rule (a clause closed by a
# verb of saying and "that"); the xfails below were left.
@pytest.mark.parametrize(
    "text",
    [
        "Ben is hyped for the match",
        "I'm the queen of procrastination lol",
        "Dev swears he never said that",
        "Chloe mentioned that earlier",
    ],
)
def test_second_round_of_held_out_chatter(text: str) -> None:
    assert chatter(text) or of_the_moment(text)


@pytest.mark.parametrize("text", ["I remember names easily", "Ana tells jokes at open mics"])
def test_second_round_of_held_out_facts(text: str) -> None:
    assert not chatter(text) and not of_the_moment(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            "I'm lowkey obsessed with this song",
            marks=pytest.mark.xfail(
                strict=True,
                reason='"obsessed with" is a lasting interest as often ("obsessed with knitting")',
            ),
        ),
        pytest.param(
            "Ana is crying at this video 😭",
            marks=pytest.mark.xfail(
                strict=True, reason="😭 is laughter or tears; crying with an object is no hyperbole"
            ),
        ),
    ],
)
def test_known_misses_of_the_second_round(text: str) -> None:
    assert chatter(text) or of_the_moment(text)
