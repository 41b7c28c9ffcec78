"""The bot's own writing of a chat line: each first-person clause it can write, names kept with what they
name. Cases marked held-out were written before the rules they test, from no chat the rules were fitted
to; a miss that only a special case would fix stays a strict xfail."""

from __future__ import annotations

import pytest

from bot.memory.clauses import own_clauses
from bot.memory.extract import SELECT, extract_chunk
from bot.memory.third_person import third_person
from tests.unit.test_extract import NOW
from tests.unit.test_selection import ANA, BEN, Answers, said

NAMES = {"nia", "ben", "ana", "dev"}


def written(text: str) -> list[str] | None:
    """The facts the bot writes itself from `text`, said by Nia (None: only a model could write it)."""
    clauses = own_clauses(text, "Nia", NAMES)
    return None if clauses is None else [third_person(clause, "Nia") for clause in clauses]


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        # from the outside check
        ("12 hours on the ward, I work as a nurse so that's pretty normal for me", ["Nia works as a nurse"]),
        (
            "I quit the pharmacy, I work as a translator now. Japanese and English",
            ["Nia quit the pharmacy", "Nia works as a translator now"],
        ),
        # held-out
        (
            "long week at the shop - I manage a bakery in Leeds, so it's always busy",
            ["Nia manages a bakery in Leeds"],
        ),
        (
            "finally unpacked! I moved to Ghent; the flat is tiny but I love the canals",
            ["Nia moved to Ghent", "Nia loves the canals"],
        ),
        ("three kids at home and I teach piano, which keeps me busy", ["Nia teaches piano"]),
        ("no car these days, I cycle to work every day", ["Nia cycles to work every day"]),
        ("I play bass in a band — we gig most weekends", ["Nia plays bass in a band"]),
        ("I work as a nurse so I'm always tired", ["Nia works as a nurse", "Nia is always tired"]),
        ("tough shift. I'm a paramedic, that's just how it goes", ["Nia is a paramedic"]),
    ],
)
def test_each_clause_the_bot_can_write_is_written_beside_one_it_cannot(text: str, facts: list[str]) -> None:
    assert written(text) == facts


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        # a clause that belongs together: one fact, never a fragment
        ("I live in Porto and work in Braga", ["Nia lives in Porto and works in Braga"]),
        # held-out
        ("I teach maths and coach the chess club", ["Nia teaches maths and coaches the chess club"]),
        ("I have a cat and a dog", ["Nia has a cat and a dog"]),
        ("I'm a nurse and a mum of two", ["Nia is a nurse and a mum of two"]),
        ("I grew up in Lyon but moved to Paris in 2019", ["Nia grew up in Lyon but moved to Paris in 2019"]),
        ("I'm allergic to peanuts, so no satay for me", ["Nia is allergic to peanuts, so no satay for them"]),
        ("I'm a teacher", ["Nia is a teacher"]),
        ("my kids live in Rome and work in Milan", ["Nia's kids live in Rome and work in Milan"]),
    ],
)
def test_a_clause_that_belongs_together_stays_one_fact(text: str, facts: list[str]) -> None:
    assert written(text) == facts


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        # from the outside check
        ("and I got a dog! her name is Pepper", ["Nia got a dog named Pepper"]),
        # held-out
        ("I just got a kitten. His name's Biscuit", ["Nia just got a kitten named Biscuit"]),
        (
            "my sister had a baby boy last week, he's called Leo",
            ["Nia's sister had a baby boy named Leo last week"],
        ),
        (
            "I started a podcast last year - it's called Night Shift",
            ["Nia started a podcast named Night Shift last year"],
        ),
        ("I've got two cats, named Miso and Tofu", ["Nia has got two cats named Miso and Tofu"]),
        ("I joined a choir. We're called The Night Owls", ["Nia joined a choir named The Night Owls"]),
        ("I have a boyfriend, his name is Tom and he's a chef", ["Nia has a boyfriend named Tom"]),
        # a name given in the clause itself stays as it is
        ("my daughter is called Ines", ["Nia's daughter is called Ines"]),
        ("I have a dog named Rex", ["Nia has a dog named Rex"]),
        # a name of nothing written is nothing to keep
        ("her name is Pepper", []),
        ("the flat is tiny, its name is The Box", []),
        # not held-out: "called" that names nobody
        ("I got home late, called my mum", ["Nia got home late"]),
        ("I work at the zoo, called in sick though", ["Nia works at the zoo"]),
    ],
)
def test_a_name_given_next_goes_with_what_was_just_mentioned(text: str, facts: list[str]) -> None:
    assert written(text) == facts


@pytest.mark.xfail(strict=True, reason="'our <thing> is called' names a thing the clause must find first")
def test_known_miss_a_name_given_as_our_thing_is_called() -> None:
    assert written("I sing in a choir, our choir is called Vox") == ["Nia sings in a choir named Vox"]


async def test_a_counting_model_still_gets_the_clauses_and_names_of_every_line() -> None:
    chunk = [
        said(1, ANA, "12 hours on the ward, I work as a nurse so that's pretty normal for me"),
        said(2, BEN, "and I got a dog! her name is Pepper"),
        said(3, ANA, "I quit the pharmacy, I work as a translator now. Japanese and English"),
    ]
    found = await extract_chunk(Answers({"self": ["m1", "m2", "m3"]}), chunk, NOW, mode=SELECT)
    assert [(f.user_id, f.text) for f in found.facts] == [
        (ANA, "Ana works as a nurse"),
        (BEN, "Ben got a dog named Pepper"),
        (ANA, "Ana quit the pharmacy"),
        (ANA, "Ana works as a translator now"),
    ]


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("I moved to Lyon and love it", "Nia moved to Lyon and loves it"),
        ("I'm a nurse and work nights", "Nia is a nurse and works nights"),
        ("I can swim and play chess", "Nia can swim and play chess"),
        ("I don't eat meat and drink milk", "Nia doesn't eat meat and drink milk"),
        ("I'll move to Lyon and work there", "Nia will move to Lyon and work there"),
        ("I love music and dance", "Nia loves music and dance"),
    ],
)
def test_a_verb_sharing_the_speakers_subject_takes_the_third_person_after_a_present_verb(
    text: str, fact: str
) -> None:
    assert third_person(text, "Nia") == fact


# A second round of held-out phrasings, written after the rules and run once before any change: "named
# it Rocket" and "finally" (read as the verb: "Nia finallies got") failed and were fixed by general rules
# (an object pronoun after "named", any adverb in -ly before the verb); the xfails below were left.
@pytest.mark.parametrize(
    ("text", "facts"),
    [
        (
            "after 10 years in Berlin I moved back to Dublin, I'm a sound engineer",
            ["Nia moved back to Dublin after 10 years in Berlin", "Nia is a sound engineer"],
        ),
        ("rough day lol but I just got promoted to head chef", ["Nia just got promoted to head chef"]),
        ("I teach yoga, mostly beginners", ["Nia teaches yoga, mostly beginners"]),
        ("I finally got a bike, named it Rocket", ["Nia finally got a bike named Rocket"]),
        (
            "My band just released an album!! It's called Low Tide",
            ["Nia's band just released an album named Low Tide"],
        ),
        # "we" getting a pet is the speaker's household (implied_subject)
        (
            "we adopted a rescue greyhound last month. she's called Nova",
            ["Nia adopted a rescue greyhound named Nova last month"],
        ),
        # a clause with its own subject after "so" is its own, and says nothing of Nia here
        ("night shifts all week, I'm a midwife so it's chaos", ["Nia is a midwife"]),
        # not held-out: checks of the adverb fix ("hardly ever" two adverbs, "supply" a verb)
        ("I hardly ever cook", ["Nia hardly ever cooks"]),
        ("I supply bakeries", ["Nia supplies bakeries"]),
    ],
)
def test_second_round_of_held_out_lines(text: str, facts: list[str] | None) -> None:
    assert written(text) == facts


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        pytest.param(
            "I work for a startup, the company is called Finch",
            ["Nia works for a startup named Finch"],
            marks=pytest.mark.xfail(
                strict=True, reason="'the <thing> is called' names a thing the clause must find first"
            ),
            id="the-company-is-called",
        ),
    ],
)
def test_known_misses_of_the_second_round(text: str, facts: list[str]) -> None:
    assert written(text) == facts


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("no I won't 😅", []),  # a subject and its auxiliary say nothing of their own
        ("I did!", []),
        ("I started a pottery class, my first bowl looks like a hat", ["Nia started a pottery class"]),
        ("my soup tastes weird today", []),
        ("my flat looks out over the harbour", ["Nia's flat looks out over the harbour"]),
        ("I can speak three languages", ["Nia can speak three languages"]),
    ],
)
def test_an_auxiliary_alone_and_how_a_thing_looks_now_are_not_facts(text: str, facts: list[str]) -> None:
    assert written(text) == facts
