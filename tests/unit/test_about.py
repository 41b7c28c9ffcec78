"""Telling a general question about a person from a question of its own (bot/memory/about.py)."""

from __future__ import annotations

import pytest

from bot.memory.about import asked_about, asks_in_general

PEOPLE = {"1": "alice", "2": "Carol", "3": "Bob Stone"}


@pytest.mark.parametrize(
    ("message", "about"),
    [
        ("what do you know about Carol?", ["2"]),
        ("tell me about Bob", ["3"]),
        ("Tell me everything you remember about @Carol", ["2"]),
        ("who is Carol?", ["2"]),
        ("what can you tell me about <@2>?", ["2"]),  # a raw mention names her by id
        ("what do you know about Carol and Bob?", ["2", "3"]),
        ("anything on Stone?", ["3"]),
        ("que sais-tu de Carol ?", ["2"]),  # French
        ("parle-moi de Carol", ["2"]),
        ("was weißt du über Carol?", ["2"]),  # German
        ("erzähl mir etwas von Carol", ["2"]),
        ("¿qué sabes de Carol?", ["2"]),  # Spanish
        ("háblame de Carol", ["2"]),
        ("o que você sabe sobre a Carol?", ["2"]),  # Portuguese
        ("cosa sai di Carol?", ["2"]),  # Italian
        ("wat weet je over Carol?", ["2"]),  # Dutch
    ],
)
def test_a_question_about_someone_in_general_names_them(message: str, about: list[str]) -> None:
    assert asked_about(message, PEOPLE) == about


@pytest.mark.parametrize(
    "message",
    [
        "what do you know about soup?",  # names nobody
        "Carol, what's your favourite soup?",  # names Carol, asks about soup
        "where does Carol live?",
        "what does Carol think of the 2024 budget?",
        "was isst Carol gern?",  # German: what does Carol like to eat
        "¿dónde vive Carol?",  # Spanish: where does Carol live
        "what do you know about Dave?",  # not in the conversation
        "",
    ],
)
def test_a_question_of_its_own_stays_led_by_its_words(message: str) -> None:
    assert asked_about(message, PEOPLE) == []


@pytest.mark.parametrize(
    ("query", "general"),
    [
        ("", True),
        ("everything about Bob", True),
        ("anything", True),
        ("tout sur Bob", True),
        ("Bob Stone", True),
        ("dog", False),
        ("Bob's favourite soup", False),
    ],
)
def test_a_lookup_asks_in_general_when_it_names_nothing_but_the_person(query: str, general: bool) -> None:
    assert asks_in_general(query, "Bob Stone") is general
