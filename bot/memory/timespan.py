"""The span of time a question is about ("yesterday", "last week", "in October", "on Tuesday"), so that
"what did we talk about yesterday?" is answered from that day's episodes whatever their topic.

English phrases only, in UTC days; a question naming no span gets None and is answered by topic.
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
