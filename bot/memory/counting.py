"""Whether a memory model's selections are worth their call: one that only ever counts is not asked.

A selection that "chooses" every line, or counts a run of them (m3, m4 ... m31), tells nothing: the bot
reads every line by its own rules anyway (`selection.not_choosing`, `extract._select`). A small local
model did so in every flush of a chat it had not seen (issue 34), and each of those answers still cost
a call of 1,000-2,000 prompt tokens, tens of seconds on a 2-core machine. After `STOP_AFTER` counting
selections in a row the bot stops asking and reads each chunk by its rules; it asks again every
`ASK_AGAIN_EVERY` flushes, and a selection that chooses puts it back to asking every time. The state
survives a restart (the service keeps `state()` in the database), and `stats` says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

STOP_AFTER = 3
ASK_AGAIN_EVERY = 20
STATE_KEY = "selection_counting"


@dataclass
class CountingWatch:
    """Counting selections in a row, and whether the bot has stopped asking for them."""

    in_a_row: int = 0
    stopped: bool = False
    skipped: int = 0  # flushes read without asking since the bot stopped

    def ask(self) -> bool:
        """Whether this flush asks the model to select (always, unless it has stopped: then now and then)."""
        if not self.stopped:
            return True
        self.skipped += 1
        return self.skipped % ASK_AGAIN_EVERY == 0

    def answered(self, counted: bool | None) -> bool:
        """Note a selection: it `counted` every line, chose some (False), or could not tell (None: a chunk
        too small to judge). True when this changed whether the bot asks."""
        if counted is None:
            return False
        if not counted:
            was = self.stopped
            self.in_a_row, self.stopped, self.skipped = 0, False, 0
            if was:
                log.info("the memory model chose lines again: the bot asks it to select in every flush")
            return was
        self.in_a_row += 1
        if self.stopped or self.in_a_row < STOP_AFTER:
            return False
        self.stopped = True
        log.warning(
            "the memory model counted every line in %d selections in a row: the bot reads chunks by its own "
            "rules without asking it, and asks again every %d flushes",
            self.in_a_row,
            ASK_AGAIN_EVERY,
        )
        return True

    def state(self) -> dict[str, Any]:
        return {"in_a_row": self.in_a_row, "stopped": self.stopped, "skipped": self.skipped}

    @classmethod
    def of(cls, state: dict[str, Any] | None) -> CountingWatch:
        """The watch as a state saved it (anything unreadable: a fresh one)."""
        if not isinstance(state, dict):
            return cls()
        try:
            return cls(
                int(state.get("in_a_row", 0)), bool(state.get("stopped")), int(state.get("skipped", 0))
            )
        except (TypeError, ValueError):
            return cls()


def described(state: dict[str, Any] | None) -> str:
    """The watch in words, for `stats`."""
    watch = CountingWatch.of(state)
    if watch.stopped:
        return (
            f"not asked: the memory model counted every line in {watch.in_a_row} selections in a row; chunks "
            f"are read by the bot's own rules, and the model is asked again every {ASK_AGAIN_EVERY} flushes"
        )
    if watch.in_a_row:
        return f"asked (the last {watch.in_a_row} counted every line; {STOP_AFTER} in a row stop the asking)"
    return "asked in every flush"
