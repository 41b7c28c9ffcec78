"""The keyword index's upkeep round (`upkeep.tidy_word_index`), against a store that counts its calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bot.memory.upkeep import INDEX_UPKEEP_PAGES, INDEX_UPKEEP_PIECES, INDEX_UPKEEP_STEPS, tidy_word_index


class CountingStore:
    """`pieces` pieces; each step folds one while more than one is left, or forever with `endless`
    (facts written as fast as the steps fold them)."""

    def __init__(self, pieces: int, *, endless: bool = False) -> None:
        self.pieces = pieces
        self.endless = endless
        self.steps: list[int] = []

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if fn.__name__ == "word_index_pieces":
            return self.pieces
        assert fn.__name__ == "tidy_word_index"
        self.steps.append(args[0])
        if self.endless:
            return True
        if self.pieces > 1:
            self.pieces -= 1
            return True
        return False


async def test_an_index_in_few_pieces_is_left_alone() -> None:
    store = CountingStore(INDEX_UPKEEP_PIECES - 1)
    assert await tidy_word_index(store) == 0  # type: ignore[arg-type]
    assert store.steps == []


@pytest.mark.parametrize("pieces", [INDEX_UPKEEP_PIECES, 9])
async def test_an_index_in_many_pieces_is_folded_into_one_step_by_step(pieces: int) -> None:
    store = CountingStore(pieces)
    assert await tidy_word_index(store) == pieces - 1  # type: ignore[arg-type]
    assert store.pieces == 1 and store.steps == [INDEX_UPKEEP_PAGES] * pieces  # the last step finds nothing


async def test_a_round_ends_after_its_steps_even_while_writes_keep_adding_pieces() -> None:
    store = CountingStore(INDEX_UPKEEP_PIECES, endless=True)
    assert await tidy_word_index(store) == INDEX_UPKEEP_STEPS  # type: ignore[arg-type]
    assert len(store.steps) == INDEX_UPKEEP_STEPS
