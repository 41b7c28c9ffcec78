"""A recap's `since`: each accepted form read as the start it names, said back as read, and what cannot
be read (or lies ahead) refused rather than guessed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.memory.timespan import said_start, since_start

NOW = datetime(2026, 11, 28, 15, 30, tzinfo=UTC)  # a Saturday


@pytest.mark.parametrize(
    ("since", "start"),
    [
        # durations: back from now, to the minute
        ("2 weeks", "Sat 14 Nov, 15:30 UTC"),
        ("3 days", "Wed 25 Nov, 15:30 UTC"),
        ("36 hours", "Fri 27 Nov, 03:30 UTC"),
        ("a week", "Sat 21 Nov, 15:30 UTC"),
        ("the past week", "Sat 21 Nov, 15:30 UTC"),
        ("the last 3 days", "Wed 25 Nov, 15:30 UTC"),
        ("a couple of days", "Thu 26 Nov, 15:30 UTC"),
        ("90 mins", "Sat 28 Nov, 14:00 UTC"),
        ("2 months", "Mon 28 Sep, 15:30 UTC"),
        ("a year", "Fri 28 Nov 2025, 15:30 UTC"),
        # "ago" names a day: from its midnight
        ("3 days ago", "Wed 25 Nov, 00:00 UTC"),
        # relative days and weeks
        ("today", "Sat 28 Nov, 00:00 UTC"),
        ("yesterday", "Fri 27 Nov, 00:00 UTC"),
        ("the day before yesterday", "Thu 26 Nov, 00:00 UTC"),
        ("Since the day before yesterday.", "Thu 26 Nov, 00:00 UTC"),
        ("this week", "Mon 23 Nov, 00:00 UTC"),
        ("last week", "Mon 16 Nov, 00:00 UTC"),
        ("last month", "Thu 1 Oct, 00:00 UTC"),
        # weekdays: the latest one, today included; "last" one before today
        ("Monday", "Mon 23 Nov, 00:00 UTC"),
        ("since Monday", "Mon 23 Nov, 00:00 UTC"),
        ("saturday", "Sat 28 Nov, 00:00 UTC"),
        ("last Saturday", "Sat 21 Nov, 00:00 UTC"),
        # dates, ISO and written; without a year, the latest that is not ahead
        ("2026-11-20", "Fri 20 Nov, 00:00 UTC"),
        ("20 Nov", "Fri 20 Nov, 00:00 UTC"),
        ("November 20", "Fri 20 Nov, 00:00 UTC"),
        ("Nov 20 2026", "Fri 20 Nov, 00:00 UTC"),
        ("Nov 20, 2026", "Fri 20 Nov, 00:00 UTC"),
        ("the 20th of November", "Fri 20 Nov, 00:00 UTC"),
        ("December 5", "Fri 5 Dec 2025, 00:00 UTC"),
        ("October", "Thu 1 Oct, 00:00 UTC"),
        ("in March 2025", "Sat 1 Mar 2025, 00:00 UTC"),
    ],
)
def test_each_form_is_read_as_the_start_it_names_and_said_back(since: str, start: str) -> None:
    found = since_start(since, NOW)
    assert found is not None and said_start(found, NOW) == start


@pytest.mark.parametrize(
    "since",
    [
        "when the moon was blue",
        "hier",  # other languages are refused, not guessed
        "il y a 2 semaines",
        "30 Feb",  # no such day
        "2027-01-01",  # ahead: a recap looks back
        "tomorrow",
        "11/20",  # May or November: not read
        "",
    ],
)
def test_what_cannot_be_read_is_refused(since: str) -> None:
    assert since_start(since, NOW) is None


def test_a_huge_count_reaches_back_a_century_instead_of_overflowing() -> None:
    found = since_start("9" * 96 + " days ago", NOW)
    assert found is not None and 99 <= NOW.year - found.year <= 100
