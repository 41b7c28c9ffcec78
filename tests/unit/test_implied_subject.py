"""What a chat clause says of its unsaid speaker (`implied_subject.with_subject`), and what it leaves.

The lines are written here, apart from the quality scripts: each form once as a statement and once as
the look-alike that is not one (an imperative, an evening's event, something of the server)."""

from __future__ import annotations

import pytest

from bot.memory.clauses import own_clauses
from bot.memory.implied_subject import with_subject


@pytest.mark.parametrize(
    ("clause", "written"),
    [
        ("moved to Leeds in the spring", "I moved to Leeds in the spring"),
        ("quit smoking last year", "I quit smoking last year"),
        ("finally gave up on running", "I finally gave up on running"),
        ("just got a job at the port", "I just got a job at the port"),
        ("sold my car", "I sold my car"),
        ("lost my job as a welder in May", "I lost my job as a welder in May"),
        ("been a nurse for ten years", "I've been a nurse for ten years"),
        ("been learning welsh since june", "I've been learning welsh since june"),
        ("work at a bakery on weekends", "I work at a bakery on weekends"),
        ("speak four languages", "I speak four languages"),
        ("running a small bakery since 2019", "I'm running a small bakery since 2019"),
        ("coaching a team that is top of the league", "I'm coaching a team that is top of the league"),
        ("swimming every morning before work", "I do swimming every morning before work"),
        ("running and cycling 3x a week", "I'm running and cycling 3x a week"),
        ("teacher here", "I'm a teacher"),
        ("dental hygienist now", "dental hygienist now"),  # not an occupation the bot knows: as it is
        ("electrician for 6 yrs now", "I've been an electrician for 6 yrs now"),
        ("a plumber by trade", "I'm a plumber by trade"),
        ("greetings from Leeds", "I'm based in Leeds"),
        ("we adopted a kitten on saturday", "I adopted a kitten on saturday"),
        ("we got a second rabbit", "I got a second rabbit"),
    ],
)
def test_a_statement_without_its_subject_gets_the_speakers(clause: str, written: str) -> None:
    assert with_subject(clause) == written


@pytest.mark.parametrize(
    "clause",
    [
        "live your life",  # an imperative
        "read the rules first",
        "have a good one",
        "had a nap",  # an afternoon, not a change
        "lost my keys again",
        "got home late",
        "moved the meeting to friday",
        "played it again yesterday",
        "started it already",
        "been there done that",
        "working from home today",  # the moment, not a job
        "driving to work now",
        "running late",
        "meeting every tuesday at 7",
        "the teacher was late",
        "we got a new channel for memes",  # the server's, not a household's
        "I live in Leeds",  # said already
        "Dancing brings me joy",  # the activity is the subject: nothing said of the speaker's doing
        "painting with friends is the best",
        "swimming every day keeps me sane",
        "cooking can wait",
        "Dancing lets us be ourselves",  # LOCOMO: "Gina is Dancing lets us ..."
        "painting reminds me of my grandmother",
        "Dancing and running the studio need hard work",
    ],
)
def test_a_look_alike_keeps_its_words(clause: str) -> None:
    assert with_subject(clause) == clause


def test_such_clauses_become_the_speakers_facts_in_a_line() -> None:
    line = "hey all, nurse here 🙋 moved to Cork last spring, we adopted a greyhound, his name is Biscuit"
    assert own_clauses(line, "Aoife", {"aoife"}) == [
        "I'm a nurse",
        "I moved to Cork last spring",
        "I adopted a greyhound named Biscuit",
    ]


def test_an_aside_about_something_else_does_not_cost_the_statement() -> None:
    # the aside's hyperbole ("literally") is its own clause now, not the whole line's
    clauses = own_clauses("my horse Juno is 19, she's literally older than my car", "Aoife", {"aoife"})
    assert clauses == ["my horse Juno is 19"]


def test_a_lead_phrase_before_the_statement_is_dropped() -> None:
    assert own_clauses("to be honest I'm a night porter at a hotel", "Aoife", {"aoife"}) == [
        "I'm a night porter at a hotel"
    ]
