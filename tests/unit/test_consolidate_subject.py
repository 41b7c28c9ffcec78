"""A model's decision on a known fact stands only when both facts are about the same subject: a MERGE,
INVALIDATE or DUPLICATE of a fact that shares no subject with the new one keeps both. Cases marked
held-out were written before the rule; a miss that only a special case would fix stays a strict xfail."""

from __future__ import annotations

import logging

import pytest

from bot.memory.consolidate import Consolidator, _Pending
from bot.memory.models import Decision, Fact, FactStatus, NewFact
from bot.memory.prompts.consolidation import ConsolidationDecision

OLD_ID = 7


def operation(new: str, old: str, decision: str, merged: str | None = None) -> tuple[Decision, int | None]:
    name = new.split()[0].removesuffix("'s")
    known = Fact(OLD_ID, "guild:1", "u1", old, FactStatus.ACTIVE, None, None, "2026-11-01", "2026-11-01", 0)
    pending = _Pending(NewFact("guild:1", "u1", name, new, ["m1"]), [(known, 0.3)])
    answer = ConsolidationDecision(
        new_fact=0,
        decision=decision,
        target_fact_id=OLD_ID,
        merged_text=merged,  # type: ignore[arg-type]
    )
    op = Consolidator._operation(pending, answer)
    return op.decision, op.target_id


@pytest.mark.parametrize(
    ("new", "old", "decision", "merged"),
    [
        # from the outside check
        (
            "Chloe eats fish again now",
            "Chloe works at the pharmacy",
            "MERGE",
            "Chloe works at the pharmacy and eats fish again now",
        ),
        (
            "Emi is basically a professional napper on Sundays",
            "Emi barely gets weekends off",
            "INVALIDATE",
            None,
        ),
        # held-out
        (
            "Ben plays the drums now",
            "Ben lives in Ghent",
            "MERGE",
            "Ben lives in Ghent and plays the drums now",
        ),
        ("Ana started learning Korean", "Ana has a cat named Miso", "INVALIDATE", None),
        ("Dev's favourite colour is green now", "Dev works nights", "DUPLICATE", None),
        ("Ana lives in Lyon now", "Ana plays the cello now", "INVALIDATE", None),
        (
            "Ben is vegan again",
            "Ben is learning Spanish again",
            "MERGE",
            "Ben is vegan and learning Spanish again",
        ),
        ("Chloe moved her desk by the window", "Chloe works at the pharmacy", "INVALIDATE", None),
        # not held-out: dates alone are no subject, however extraction writes them
        ("Ben moved to Lyon in October 2026", "Ben adopted a cat in October 2026", "INVALIDATE", None),
        ("Ben left the choir on 2026-11-23", "Ben got a dog on 2026-11-23", "DUPLICATE", None),
    ],
)
def test_a_decision_between_facts_about_different_things_keeps_both(
    new: str, old: str, decision: str, merged: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="bot.memory.consolidate"):
        assert operation(new, old, decision, merged) == (Decision.KEEP, None)
    assert "share no subject" in caplog.text


@pytest.mark.parametrize(
    ("new", "old", "decision", "merged", "applied"),
    [
        ("Alice lives in Berlin", "Alice lives in Paris", "INVALIDATE", None, Decision.INVALIDATE),
        (
            "Alice lives in Berlin now",
            "Alice lives in Paris",
            "MERGE",
            "Alice lives in Berlin",
            Decision.INVALIDATE,
        ),
        ("Alice moved to Berlin", "Alice lives in Paris", "DUPLICATE", None, Decision.INVALIDATE),
        ("Alice resides in Paris", "Alice lives in Paris", "DUPLICATE", None, Decision.DUPLICATE),
        # held-out
        ("Ben quit the bakery", "Ben works at a bakery", "INVALIDATE", None, Decision.INVALIDATE),
        ("Chloe eats meat again", "Chloe is vegan", "INVALIDATE", None, Decision.INVALIDATE),
        ("Dev works from home now", "Dev's job is at the bank", "INVALIDATE", None, Decision.INVALIDATE),
        ("Ana relocated to Madrid", "Ana is based in Seville", "INVALIDATE", None, Decision.INVALIDATE),
        (
            "Ana plays the cello in an orchestra",
            "Ana plays the cello",
            "MERGE",
            "Ana plays the cello in an orchestra",
            Decision.MERGE,
        ),
    ],
)
def test_a_decision_between_facts_about_the_same_thing_stands(
    new: str, old: str, decision: str, merged: str | None, applied: Decision
) -> None:
    assert operation(new, old, decision, merged) == (applied, OLD_ID)


@pytest.mark.xfail(
    strict=True,
    reason="a new job named only by its noun shares no word with the old one; no list of every job",
)
def test_known_miss_a_job_named_by_its_noun_alone() -> None:
    assert operation("Ben is a nurse now", "Ben works as a carpenter", "INVALIDATE") == (
        Decision.INVALIDATE,
        OLD_ID,
    )


# A second round of held-out pairs, written after the rule and run once before any change: each came out
# as the rule says. "Ben sold his car" after "Ben drives a Golf" is the rule's cost: related, but by no
# shared word, so both stay.
@pytest.mark.parametrize(
    ("new", "old", "decision", "applied"),
    [
        ("Ben sold his car", "Ben drives a Golf", "INVALIDATE", (Decision.KEEP, None)),
        ("Emi naps every Sunday", "Emi works every weekend", "INVALIDATE", (Decision.KEEP, None)),
        ("Chloe has a new puppy now", "Chloe has a cat", "INVALIDATE", (Decision.KEEP, None)),
        (
            "Ana lives with her parents again",
            "Ana lives in a flat in Leith",
            "INVALIDATE",
            (Decision.INVALIDATE, OLD_ID),
        ),
        (
            "Dev doesn't play football anymore",
            "Dev plays in a football team",
            "INVALIDATE",
            (Decision.INVALIDATE, OLD_ID),
        ),
    ],
)
def test_second_round_of_held_out_pairs(
    new: str, old: str, decision: str, applied: tuple[Decision, int | None]
) -> None:
    assert operation(new, old, decision) == applied
