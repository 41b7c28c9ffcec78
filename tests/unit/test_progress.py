"""The progress a long command shows: a bar with its total, rate and time left on a terminal, plain lines
(the first, one every few seconds, and always the last) elsewhere."""

from __future__ import annotations

import io

import pytest

from bot.cli import progress as module
from bot.cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_the_total_the_rate_and_the_time_left() -> None:
    screen = Terminal()
    with Progress("re-embedding", "texts", stream=screen) as shown:
        shown(40, 100)
        shown(100, 100)
    drawn = screen.getvalue()
    assert "re-embedding" in drawn and "100/100" in drawn and "texts/s" in drawn
    assert "00:00<00:00" in drawn  # elapsed<left


def test_elsewhere_plain_lines_with_totals_and_always_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 1.0, 1.5, 4.0, 4.5])
    monkeypatch.setattr(module.time, "monotonic", lambda: next(clock))
    log = io.StringIO()
    shown = Progress("importing", "facts", stream=log)  # started at 0 s
    for done in (100, 200, 300, 400):  # at 1, 1.5, 4 and 4.5 s
        shown(done, 400)
    assert log.getvalue().splitlines() == [
        "importing: 100 of 400 facts (25%), 100.0 facts/s, about 3 s left",
        "importing: 300 of 400 facts (75%), 75.0 facts/s, about 1 s left",
        "importing: 400 of 400 facts (100%), 88.9 facts/s",
    ]
