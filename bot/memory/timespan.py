"""The span of time a question is about ("yesterday", "last week", "in October", "on Tuesday"), so that
"what did we talk about yesterday?" is answered from that day's episodes whatever their topic.

English phrases only, in UTC days; a question naming no span gets None and is answered by topic.

`since_start` reads where a span starts when a person types it (the recap's `since`): stricter, since
what it cannot read is refused with examples (`SINCE_EXAMPLES`) and what it read is said back
(`said_start`), never guessed.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]  # fmt: skip
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_AGO = re.compile(r"\b(\d+|a|one|two|three|four|five|six|seven)\s+days?\s+ago\b")
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_MONTH = re.compile(r"\b(?:in|during|since|back in)\s+(" + "|".join(m[:3] for m in MONTHS) + r")[a-z]*\b")
_WEEKDAY = re.compile(r"\b(?:on|last|this past)\s+(" + "|".join(WEEKDAYS) + r")\b")

Span = tuple[datetime, datetime]
# "99999999 days ago" means long ago: as far back as a century (no memory is older), not an overflow.
MAX_DAYS_BACK = 36_500


def time_span(text: str, now: datetime) -> Span | None:
    """The [start, end) of the first time phrase in `text`, ending no later than `now`; None if none."""
    q = text.lower()
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    monday = today - timedelta(days=today.weekday())
    first = today.replace(day=1)
    if re.search(r"\byesterday\b|\blast night\b", q):
        return today - timedelta(days=1), today
    if re.search(r"\btoday\b|\bthis morning\b|\btonight\b", q):
        return today, now
    if re.search(r"\blast week(?:end)?\b", q):
        if "weekend" in q:
            return monday - timedelta(days=2), monday
        return monday - timedelta(days=7), monday
    if re.search(r"\bthis week\b|\bpast few days\b", q):
        return monday, now
    if re.search(r"\blast month\b", q):
        return (first - timedelta(days=1)).replace(day=1), first
    if re.search(r"\bthis month\b", q):
        return first, now
    if found := _AGO.search(q):
        number = found.group(1)
        days = _NUMBERS.get(number) or (MAX_DAYS_BACK if len(number) > 5 else min(int(number), MAX_DAYS_BACK))
        return today - timedelta(days=days), today - timedelta(days=days - 1)
    if found := _WEEKDAY.search(q):
        back = (today.weekday() - WEEKDAYS.index(found.group(1))) % 7 or 7
        return today - timedelta(days=back), today - timedelta(days=back - 1)
    if found := _MONTH.search(q):
        month = [m[:3] for m in MONTHS].index(found.group(1)) + 1
        year = today.year if month <= today.month else today.year - 1
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        return start, min(end, now)
    return None


# ---- Where a span starts ("since" in /memory recap) ----------------------------------------------------------
# A recap's `since` is a start, said in one of a few English forms; anything else is refused with examples
# rather than guessed, and what was read is said back ("since Wed 26 Nov, 00:00 UTC").
SINCE_EXAMPLES = (
    "3 days, 2 weeks, 36 hours, yesterday, the day before yesterday, Monday, last week, October, "
    "20 Nov, November 20 2026 or 2026-11-20"
)
_COUNT_WORDS = {"a": 1, "an": 1, "one": 1, "a couple of": 2, "two": 2, "three": 3, "four": 4, "five": 5,
                "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}  # fmt: skip
_COUNT = r"\d+|a couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_UNITS = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1),
          "week": timedelta(weeks=1)}  # fmt: skip
# "3 days", "the last 2 weeks", "past 36 hours", "a week": back from now; "3 days ago" names that day.
_DURATION = re.compile(
    rf"^(?:the )?(?:(?:last|past) )?(?P<count>{_COUNT}) ?(?P<unit>minute|min|hour|hr|day|week|month|year)s?"
    r"(?P<ago> ago)?$"
)
_LAST_UNIT = re.compile(r"^(?:the )?(?:last|past) (?P<unit>hour|day|week|month|year)$")  # "the past week"
_MONTH_ALT = "|".join(f"{m[:3]}(?:{m[3:]})?" for m in MONTHS) + "|sept"
_ORDINAL = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_WRITTEN = [
    re.compile(rf"^(?:the )?{_ORDINAL}(?: of)? (?P<month>{_MONTH_ALT})\.?(?:,? (?P<year>\d{{4}}))?$"),
    re.compile(rf"^(?P<month>{_MONTH_ALT})\.? {_ORDINAL}(?:,? (?P<year>\d{{4}}))?$"),
]
_ISO_DATE = re.compile(r"^(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})$")
_MONTH_ONLY = re.compile(
    rf"^(?:(?:in|early|the start of) )?(?P<month>{_MONTH_ALT})\.?(?: (?P<year>\d{{4}}))?$"
)
_DAY_OF_WEEK = re.compile(r"^(?P<last>last |on |this past )?(?P<day>" + "|".join(WEEKDAYS) + r")$")


def since_start(text: str, now: datetime) -> datetime | None:
    """Where a span said as `text` starts ("2 weeks", "yesterday", "Monday", "20 Nov", "2026-11-20"):
    a moment no later than `now`, in UTC; None when `text` is not one of these forms, names a day that
    does not exist, or lies in the future."""
    q = " ".join(re.sub(r"[.,!?]+$", "", text.strip().lower()).split())
    q = re.sub(r"^(?:since|from) ", "", q)
    now = now.astimezone(UTC)
    start = _since(q, now)
    return start if start is not None and start <= now else None


def _since(q: str, now: datetime) -> datetime | None:
    """`since_start` of a lower-cased phrase with single spaces and no leading "since"."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    day = timedelta(days=1)
    relative = {"today": today, "this morning": today, "yesterday": today - day, "last night": today - day,
                "the day before yesterday": today - 2 * day, "day before yesterday": today - 2 * day,
                "this week": today - today.weekday() * day, "last week": today - (today.weekday() + 7) * day,
                "this month": today.replace(day=1), "last month": _month_start(today, -1),
                "this year": today.replace(month=1, day=1), "last year": today.replace(year=today.year - 1, month=1, day=1)}  # fmt: skip
    if q in relative:
        return relative[q]
    if found := _LAST_UNIT.match(q):
        q = f"1 {found.group('unit')}"
    if found := _DURATION.match(q):
        return _back(now, today, found)
    if found := _DAY_OF_WEEK.match(q):
        back = (today.weekday() - WEEKDAYS.index(found.group("day"))) % 7
        return today - (back or (7 if found.group("last") in ("last ", "this past ") else 0)) * day
    if found := _ISO_DATE.match(q):
        return _date(int(found.group("year")), int(found.group("month")), int(found.group("day")))
    for form in _WRITTEN:
        if found := form.match(q):
            month, number = _month_number(found.group("month")), int(found.group("day"))
            if found.group("year"):
                return _date(int(found.group("year")), month, number)
            this_year = _date(today.year, month, number)
            return (
                this_year if this_year is None or this_year <= now else _date(today.year - 1, month, number)
            )
    if found := _MONTH_ONLY.match(q):
        month = _month_number(found.group("month"))
        year = int(found.group("year") or (today.year if month <= today.month else today.year - 1))
        return _date(year, month, 1)
    return None


def _back(now: datetime, today: datetime, found: re.Match[str]) -> datetime:
    """The start of a duration back from `now` ("36 hours"), or of the day it names with "ago"; as far
    back as MAX_DAYS_BACK at most."""
    unit = {"min": "minute", "hr": "hour"}.get(found.group("unit"), found.group("unit"))
    count = _COUNT_WORDS.get(found.group("count")) or int(found.group("count"))
    base = today if found.group("ago") and unit in ("day", "week", "month", "year") else now
    if unit in ("month", "year"):
        months = min(count * (12 if unit == "year" else 1), MAX_DAYS_BACK // 31)
        start = _month_start(base, -months)
        return start.replace(day=min(base.day, _days_in(start)), hour=base.hour, minute=base.minute,
                             second=base.second, microsecond=base.microsecond)  # fmt: skip
    step = _UNITS[unit]
    return base - step * min(count, timedelta(days=MAX_DAYS_BACK) // step)


def _month_number(name: str) -> int:
    return [m[:3] for m in MONTHS].index(name[:3]) + 1


def _month_start(moment: datetime, months: int) -> datetime:
    """Midnight on the first of the month `months` away from `moment`'s."""
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(
        year=index // 12, month=index % 12 + 1, day=1, hour=0, minute=0, second=0, microsecond=0
    )


def _days_in(month_start: datetime) -> int:
    return ((month_start.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)).day


def _date(year: int, month: int, day: int) -> datetime | None:
    """Midnight UTC on that day; None when there is no such day (30 February)."""
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def said_start(start: datetime, now: datetime) -> str:
    """A start said back as read: "Wed 26 Nov, 00:00 UTC" (with the year when it is not `now`'s)."""
    start = start.astimezone(UTC)
    year = f" {start.year}" if start.year != now.astimezone(UTC).year else ""
    return f"{start:%a} {start.day} {start:%b}{year}, {start:%H:%M} UTC"
