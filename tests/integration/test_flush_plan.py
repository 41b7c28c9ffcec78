"""Consolidation decides, storage applies: a resolved plan, and what only the write can see."""

from __future__ import annotations

import pytest

from bot.memory.consolidate import resolved
from bot.memory.models import Decision, NewFact, Operation
from bot.storage import Store
from tests.fakes import unit


def new(text: str, source: str = "m9") -> NewFact:
    return NewFact("guild:1", "alice", "Alice", text, [source], embedding=unit(1.0, 0.2))


def test_resolving_settles_every_fallback_before_the_write() -> None:
    fact = new("Alice lives in Rome")
    assert resolved(Operation(Decision.INVALIDATE, fact, 7)).fallback is Decision.ADD
    assert resolved(Operation(Decision.DUPLICATE, fact, 7)).fallback is Decision.ADD
    assert resolved(Operation(Decision.INVALIDATE, fact)).decision is Decision.ADD
    textless = resolved(Operation(Decision.MERGE, fact, 7))
    assert (textless.decision, textless.target_id) == (Decision.KEEP, None)
    assert resolved(Operation(Decision.ADD, fact)) == Operation(Decision.ADD, fact)


def test_an_incomplete_plan_is_refused_and_nothing_is_written(store: Store) -> None:
    [paris] = store.add_facts([new("Alice lives in Paris", "m1")])
    with pytest.raises(ValueError, match="no merged text"):
        store.apply_flush(
            [Operation(Decision.ADD, new("Alice keeps bees")), Operation(Decision.MERGE, new("x"), paris)]
        )
    no_vector = NewFact("guild:1", "alice", "Alice", "Alice sings", ["m2"])
    with pytest.raises(ValueError, match="no embedding"):
        store.apply_flush([Operation(Decision.ADD, no_vector)])
    with pytest.raises(ValueError, match="names no fact"):
        store.apply_flush([Operation(Decision.INVALIDATE, new("Alice lives in Rome"))])
    assert [f.text for f in store.list_facts("guild:1", "alice")] == ["Alice lives in Paris"]


def test_a_target_forgotten_meanwhile_gets_the_plans_fallback_or_nothing(store: Store) -> None:
    [paris] = store.add_facts([new("Alice lives in Paris", "m1")])
    store.forget("guild:1", "alice", [paris])
    assert store.apply_flush([Operation(Decision.INVALIDATE, new("Alice lives in Oslo"), paris)]) == []
    rome = resolved(Operation(Decision.INVALIDATE, new("Alice lives in Rome"), paris))
    [change] = store.apply_flush([rome])
    assert (change.decision, change.target_id) == (Decision.ADD, None)
    assert [f.text for f in store.list_facts("guild:1", "alice")] == ["Alice lives in Rome"]
