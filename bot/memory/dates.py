"""Relative dates ("yesterday", "last month", "3 days ago") written as the dates they meant when said.

A fact outlives the day it was said: "Ana went to a support group yesterday", read in a reply a month
later, names the wrong day. Extraction therefore writes what a relative date meant at the message's own
time, whoever wrote the fact (the bot's own writing or a model that left the word as said).

One form per span, everywhere: a day "on 2026-05-07", a week "in the week of 2026-05-04" (its Monday),
a weekend "on the weekend of 2026-05-09" (its Saturday), a month "in May 2026", a year "in 2026"; after
"since", "until", "before" ... the same without "on"/"in" ("since May 2026"). ISO dates for days and
weeks, because they read the same in every locale (05/07 is May or July) and are what the transcript's
day lines show a model; a month or a year has no day to misread and is written as people write it.
Times are UTC, as messages are stamped: said near midnight, "yesterday" may be a day off for its speaker.
English only; vague spans ("a few days ago", "recently", "last summer") are left as said.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "a couple of": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_COUNT = r"\d{1,2}|a couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_PART_OF_DAY = r"(?:\s+(?:morning|afternoon|evening|night))?"
# A relative date as said; a word that owns it ("my last week", "the last month") makes it no date.
RELATIVE_DATE = (
    r"(?:(?:earlier|later)\s+)?(?:the day before yesterday|the day after tomorrow"
    rf"|(?:yesterday|today|tomorrow){_PART_OF_DAY}|tonight|last night|this (?:morning|afternoon|evening)"
    rf"|(?:last|this|next) (?:week|weekend|month|year|{'|'.join(_WEEKDAYS)})"
    rf"|(?:{_COUNT}) (?:days?|weeks?|months?|years?) ago)"
)
_BEFORE = r"since|until|till|from|by|before|after|as of"
_RELATIVE = re.compile(
    rf"(?<![\w'’-])(?<!['’]s )(?<!\bthe )(?<!\bmy )(?<!\bour )(?<!\bhis )(?<!\bher )(?<!\btheir )(?<!\byour )"
    rf"(?:(?P<before>{_BEFORE})\s+)?(?P<when>{RELATIVE_DATE})(?![\w'’-])",
    re.I,
)
_AGO = re.compile(rf"^({_COUNT}) (day|week|month|year)s? ago$")


def absolute_dates(text: str, said_at: datetime) -> str:
    """`text` with each relative date written as the date it meant at `said_at` (see the module)."""

    def dated(match: re.Match[str]) -> str:
        before, when = match.group("before"), match.group("when")
        span, start = _span(" ".join(when.lower().split()), said_at.date())
        written = _written(span, start, bare=before is not None)
        written = f"{before} {written}" if before else written
        return written[:1].upper() + written[1:] if match.group(0)[:1].isupper() else written

    return _RELATIVE.sub(dated, text)


def _span(when: str, today: date) -> tuple[str, date]:
    """What a relative date (lower case, single spaces) names: its span (day, week, weekend, month,
    year) and a day within it."""
    when = re.sub(r"^(?:earlier|later) ", "", when)
    day = timedelta(days=1)
    if when == "the day before yesterday":
        return "day", today - 2 * day
    if when == "the day after tomorrow":
        return "day", today + 2 * day
    if when.startswith(("yesterday", "last night")):
        return "day", today - day
    if when.startswith(("today", "tonight", "this morning", "this afternoon", "this evening")):
        return "day", today
    if when.startswith("tomorrow"):
        return "day", today + day
    if ago := _AGO.match(when):
        count, unit = _COUNTS.get(ago.group(1)) or int(ago.group(1)), ago.group(2)
        if unit in ("day", "week"):
            return unit, today - count * (7 if unit == "week" else 1) * day
        if unit == "month":
            return "month", _months_from(today, -count)
        return "year", today.replace(year=today.year - count, day=1)
    which, unit = when.split(" ")
    step = {"last": -1, "this": 0, "next": 1}[which]
    if unit in _WEEKDAYS:
        return "day", _weekday(today, _WEEKDAYS.index(unit), step)
    if unit in ("week", "weekend"):
        return unit, today + 7 * step * day
    if unit == "month":
        return "month", _months_from(today, step)
    return "year", today.replace(year=today.year + step, day=1)


def _weekday(today: date, weekday: int, step: int) -> date:
    """The `weekday` (0 Monday) last (`step` -1: the latest before today), next (1: the first after
    today) or this week (0)."""
    if step < 0:
        return today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)
    if step > 0:
        return today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1)
    return today + timedelta(days=weekday - today.weekday())


def _months_from(today: date, months: int) -> date:
    """The first day of the month `months` away from `today`'s."""
    index = today.year * 12 + today.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _written(span: str, day: date, *, bare: bool) -> str:
    """A span in the module's forms; `bare`: without "on"/"in", after "since" and the like."""
    if span == "week":
        monday = day - timedelta(days=day.weekday())
        return f"{'' if bare else 'in '}the week of {monday.isoformat()}"
    if span == "weekend":
        saturday = day + timedelta(days=5 - day.weekday())
        return f"{'' if bare else 'on '}the weekend of {saturday.isoformat()}"
    if span == "month":
        written = f"{calendar.month_name[day.month]} {day.year}"
    elif span == "year":
        written = str(day.year)
    else:
        return day.isoformat() if bare else f"on {day.isoformat()}"
    return written if bare else f"in {written}"


# A single day in the form above: what a fact says happened on one day (`of_one_day`).
_ONE_DAY = re.compile(r"\bon (?:the weekend of )?\d{4}-\d{2}-\d{2}\b")


def of_one_day(text: str) -> bool:
    """Whether `text` dates itself to one day in this module's form ("Ben left work early on 2026-11-24"):
    an event of that day, which says less of a change in someone's life than its words may suggest."""
    return bool(_ONE_DAY.search(text))


# What `absolute_dates` writes, and a year or a month with its year however written: no subject of a fact.
_WRITTEN_DATE = re.compile(
    r"\b(?:the (?:week|weekend) of )?\d{4}-\d{2}-\d{2}\b"
    rf"|\b(?:{'|'.join(calendar.month_name[1:])})(?:\s+\d{{4}})?\b|\b\d{{4}}\b",
    re.I,
)


def undated(text: str) -> str:
    """`text` without its dates: what it is about, for comparing two facts."""
    return _WRITTEN_DATE.sub(" ", text)
