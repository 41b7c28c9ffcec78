"""Relative dates written as dates from the message's own time: a fact read months later must not say
"yesterday". Cases marked held-out were written before the rules they test."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.memory.dates import absolute_dates
from bot.memory.extract import ENUMERATE, SELECT, extract_chunk
from tests.unit.test_extract import NOW
from tests.unit.test_selection import ANA, BEN, Answers, said

TUESDAY = datetime(2026, 11, 24, 14, 5, tzinfo=UTC)  # the time of test_selection's lines


@pytest.mark.parametrize(
    ("text", "dated"),
    [
        # from the outside check
        (
            "Caroline went to a LGBTQ support group yesterday",
            "Caroline went to a LGBTQ support group on 2026-11-23",
        ),
        ("Nia moved to Lyon last month", "Nia moved to Lyon in October 2026"),
        # held-out
        ("Nia ran her first marathon last Sunday", "Nia ran her first marathon on 2026-11-22"),
        ("Nia started a new job 3 days ago", "Nia started a new job on 2026-11-21"),
        ("Nia adopted a greyhound this morning", "Nia adopted a greyhound on 2026-11-24"),
        ("Nia has been vegan since last year", "Nia has been vegan since 2025"),
        ("Nia got engaged two weeks ago", "Nia got engaged in the week of 2026-11-09"),
        ("Nia is flying to Tokyo tomorrow", "Nia is flying to Tokyo on 2026-11-25"),
        ("Nia will start at the new school next Monday", "Nia will start at the new school on 2026-11-30"),
        (
            "Nia went hiking in the Alps last weekend",
            "Nia went hiking in the Alps on the weekend of 2026-11-21",
        ),
        ("Nia quit smoking a month ago", "Nia quit smoking in October 2026"),
        ("Nia saw Radiohead live last night", "Nia saw Radiohead live on 2026-11-23"),
        ("Nia moved here earlier this year", "Nia moved here in 2026"),
        ("Nia finished her thesis the day before yesterday", "Nia finished her thesis on 2026-11-22"),
        ("Yesterday Nia got her licence", "On 2026-11-23 Nia got her licence"),
        (
            "Nia has worked at the bakery since last week",
            "Nia has worked at the bakery since the week of 2026-11-16",
        ),
    ],
)
def test_a_relative_date_becomes_the_date_it_meant_when_it_was_said(text: str, dated: str) -> None:
    assert absolute_dates(text, TUESDAY) == dated


@pytest.mark.parametrize(
    ("text", "dated"),
    [
        ("Nia moved to Oslo last month", "Nia moved to Oslo in December 2025"),
        ("Nia got a puppy last week", "Nia got a puppy in the week of 2025-12-29"),
        ("Nia got married last year", "Nia got married in 2025"),
    ],
)
def test_dates_across_a_new_year(text: str, dated: str) -> None:  # held-out
    assert absolute_dates(text, datetime(2026, 1, 5, 9, 0, tzinfo=UTC)) == dated


@pytest.mark.parametrize(
    "text",
    [
        "Nia works the night shift",
        "Nia does yoga every Monday",
        "Nia spent the last month in Peru",
        "Nia's last week at the job was hard",
        "Nia goes to the gym most mornings",
        "Nia moved to Lyon in 2019",
        "Nia has lived in Porto for years",
    ],
)
def test_what_names_no_relative_date_is_left_as_it_is(text: str) -> None:
    assert absolute_dates(text, TUESDAY) == text


async def test_what_the_bot_writes_and_what_a_model_writes_are_dated_from_their_lines() -> None:
    chunk = [
        said(1, ANA, "I went to a LGBTQ support group yesterday"),
        said(2, BEN, "I moved to Lyon last month"),
        said(3, ANA, "yesterday I went to my first pottery class"),
        said(4, BEN, "cello lessons started yesterday, finally"),
    ]
    rewrite = {"facts": [{"speaker": "Ben", "text": "Ben started the cello yesterday", "sources": ["m4"]}]}
    found = await extract_chunk(Answers({"self": ["m1", "m2", "m3", "m4"]}, rewrite), chunk, NOW, mode=SELECT)
    assert [(f.user_id, f.text) for f in found.facts] == [
        (ANA, "Ana went to a LGBTQ support group on 2026-11-23"),
        (BEN, "Ben moved to Lyon in October 2026"),
        (ANA, "Ana went to their first pottery class on 2026-11-23"),
        (BEN, "Ben started the cello on 2026-11-23"),
    ]


class Enumerating:
    """A model answering the enumerating extraction call with `facts`."""

    def __init__(self, facts: list[dict[str, object]]) -> None:
        self.facts = facts

    async def generate_json(self, purpose: object, *, schema: type, **kwargs: object) -> object:
        return schema.model_validate({"facts": self.facts})  # type: ignore[attr-defined]


async def test_an_enumerated_fact_is_dated_from_the_line_it_cites() -> None:
    chunk = [said(1, ANA, "hi"), said(2, BEN, "I adopted a cat last week")]
    model = Enumerating([{"speaker": "Ben", "text": "Ben adopted a cat last week", "sources": ["m2"]}])
    found = await extract_chunk(model, chunk, NOW, mode=ENUMERATE)  # type: ignore[arg-type]
    assert [f.text for f in found.facts] == ["Ben adopted a cat in the week of 2026-11-16"]


# A second round of held-out phrasings, written after the rules and run once before any change: all passed.
@pytest.mark.parametrize(
    ("text", "dated"),
    [
        ("Nia joined the gym this week", "Nia joined the gym in the week of 2026-11-23"),
        ("Nia is moving to Bristol next month", "Nia is moving to Bristol in December 2026"),
        ("Nia started knitting 2 years ago", "Nia started knitting in 2024"),
        ("since yesterday Nia has been off sugar", "since 2026-11-23 Nia has been off sugar"),
        # vague or habitual: left as said
        ("Nia got her driving licence the other day", "Nia got her driving licence the other day"),
        ("Nia had surgery on Monday", "Nia had surgery on Monday"),
    ],
)
def test_second_round_of_held_out_dates(text: str, dated: str) -> None:
    assert absolute_dates(text, TUESDAY) == dated
