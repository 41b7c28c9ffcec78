"""An endpoint's pace: deadlines that follow what its calls have taken."""

from __future__ import annotations

from bot.llm.pace import MARGIN, MAX_DEADLINE_SECONDS, Pace
from bot.memory.model_ports import Purpose


def test_the_setting_until_the_endpoint_has_shown_its_pace() -> None:
    assert Pace(60).deadline(Purpose.EXTRACT) == 60


def test_a_slow_endpoint_gets_a_margin_over_its_slowest_recent_call() -> None:
    pace = Pace(60)
    for seconds in (30, 58, 41):
        pace.took(Purpose.EXTRACT, seconds)
    assert pace.deadline(Purpose.EXTRACT) == MARGIN * 58
    assert pace.deadline(Purpose.CHAT) == 60  # each purpose by its own calls


def test_old_calls_are_forgotten() -> None:
    pace = Pace(10)
    pace.took(Purpose.EXTRACT, 100)
    for _ in range(8):
        pace.took(Purpose.EXTRACT, 1)
    assert pace.deadline(Purpose.EXTRACT) == 10


def test_zero_means_no_deadline_and_a_cap_holds_otherwise() -> None:
    assert Pace(0).deadline(Purpose.CHAT) is None
    pace = Pace(60)
    pace.took(Purpose.CHAT, 10_000)
    assert pace.deadline(Purpose.CHAT) == MAX_DEADLINE_SECONDS
