"""What lasts about a person (`lasting.lasting`), written even when a choosing model passed it over."""

from __future__ import annotations

import pytest

from bot.memory.lasting import lasting


@pytest.mark.parametrize(
    "clause",
    [
        "I live in Leeds, near the canal",
        "I'm based in Cork",
        "I grew up in Recife",
        "I work as a welder",
        "I work at the library on weekends",
        "I'm a data analyst at a shipping company",
        "I'm a nurse",
        "my cat Biscuit is nine",
        "my old dog sleeps all day",
        "I have a parrot called Mango",
        "I have two rescue dogs",
        "I speak Welsh and English",
        "I'm learning Japanese",
        "I'm vegetarian",
        "I'm allergic to shellfish",
        "I can't eat gluten",
    ],
)
def test_what_lasts_is_told_apart(clause: str) -> None:
    assert lasting(clause)


@pytest.mark.parametrize(
    "clause",
    [
        "I had pasta for lunch",
        "I'm home now",
        "I'm so tired",
        "I'm a bit lost with this update",  # "I'm a ..." that is no occupation
        "my mum insisted",
        "I watched the match",
        "I went to the cinema",
        "I think Leeds will win",
    ],
)
def test_a_moment_or_a_view_is_not(clause: str) -> None:
    assert not lasting(clause)
