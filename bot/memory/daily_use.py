"""A server's use per UTC day, for the admins' charts: messages captured, model calls and tokens by
purpose, and recall times. Counted in memory, where counting costs a dictionary increment (capture is
the hot path), and written in batches by the upkeep round and at close (`take`, then
`Storage.add_use_per_day`, which adds to what is stored: several processes count the same day).
A crash loses the counts of at most one batch.

What each stored row counts (`what`): `messages` (human messages accepted into the buffer),
`<purpose>_calls`, `<purpose>_tokens_in`, `<purpose>_tokens_out` (the model calls made for the scope,
`usage_scope`, and the tokens their answers report) and `recall_ms_<n>`: how many recalls took at most
`LATENCY_BOUNDS_MS[n]` milliseconds and more than the bound before it (the last, `recall_ms_<len>`,
those slower than every bound). From that fixed histogram a day's p50 and p95 are read as the upper
bound of the bucket the percentile falls in (`percentile_ms`): exact to a bucket, never to the
millisecond. Counts only: no text, no user id.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.memory.model_ports import Purpose
from bot.memory.models import utcnow

MESSAGES = "messages"
SERVER = "guild:"  # the prefix of a server's scope (`guild_scope`)
# Upper bounds (ms) of the recall time buckets; a recall slower than the last falls in one more bucket.
LATENCY_BOUNDS_MS = (5, 10, 20, 35, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 2000, 5000)
# What the usage counters name (bot/llm/usage.py) -> the stored figure's suffix.
MODEL_FIGURES = {"calls": "calls", "prompt_tokens": "tokens_in", "output_tokens": "tokens_out"}

Row = tuple[str, str, str, int]  # scope, day, what, count


class Today:
    """Today's UTC date as YYYY-MM-DD, made again only when the day changes (capture asks it each message)."""

    def __init__(self) -> None:
        self._number, self._day = -1, ""

    def __call__(self) -> str:
        number = int(time.time() // 86_400)
        if number != self._number:
            self._number, self._day = number, utcnow().date().isoformat()
        return self._day


def latency_key(ms: float) -> str:
    """The figure a recall of `ms` milliseconds is counted in."""
    for n, bound in enumerate(LATENCY_BOUNDS_MS):
        if ms <= bound:
            return f"recall_ms_{n}"
    return f"recall_ms_{len(LATENCY_BOUNDS_MS)}"


def percentile_ms(buckets: Sequence[int], q: float) -> float | None:
    """The `q` percentile (0-100) of recall times counted in `buckets` (one count per bucket, the slower
    than every bound last): the upper bound of the bucket it falls in, the last bound for the slowest
    bucket (a floor, then); None without any recall."""
    total = sum(buckets)
    if not total:
        return None
    rank = max(q / 100 * total, 1)
    seen = 0
    for n, count in enumerate(buckets):
        seen += count
        if seen >= rank:
            return float(LATENCY_BOUNDS_MS[min(n, len(LATENCY_BOUNDS_MS) - 1)])
    return float(LATENCY_BOUNDS_MS[-1])


@dataclass(frozen=True)
class DayUse:
    """One UTC day of a scope, read back from the stored counts."""

    day: str
    messages: int = 0
    calls: dict[str, int] = field(default_factory=dict)  # purpose -> calls
    tokens: dict[str, int] = field(default_factory=dict)  # purpose -> tokens in and out
    recalls: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None


def day_use(day: str, counts: Mapping[str, int]) -> DayUse:
    """A day's figures from its stored counts (`Storage.use_per_day`)."""
    buckets = [counts.get(f"recall_ms_{n}", 0) for n in range(len(LATENCY_BOUNDS_MS) + 1)]
    return DayUse(
        day,
        messages=counts.get(MESSAGES, 0),
        calls={p.value: counts.get(f"{p.value}_calls", 0) for p in Purpose},
        tokens={
            p.value: counts.get(f"{p.value}_tokens_in", 0) + counts.get(f"{p.value}_tokens_out", 0)
            for p in Purpose
        },
        recalls=sum(buckets),
        p50_ms=percentile_ms(buckets, 50),
        p95_ms=percentile_ms(buckets, 95),
    )


class DailyUse:
    """The counts of this process not written yet, by (scope, day, what). Only servers' scopes are
    counted (`guild:<id>`): the charts are a server's, and DMs are nobody's to read."""

    def __init__(self, day: Callable[[], str] | None = None) -> None:
        self.day = day or Today()
        self._counts: Counter[tuple[str, str, str]] = Counter()

    def message(self, scope: str) -> None:
        """A human message accepted into the buffer (the hot path: one increment)."""
        if scope.startswith(SERVER):
            self._counts[(scope, self.day(), MESSAGES)] += 1

    def model_use(self, scope: str, purpose: Purpose, amounts: Mapping[str, int]) -> None:
        """What the usage counters add for a call made for `scope` (`Usage.listeners`)."""
        if not scope.startswith(SERVER):
            return
        day = self.day()
        for name, suffix in MODEL_FIGURES.items():
            if amounts.get(name):
                self._counts[(scope, day, f"{purpose.value}_{suffix}")] += amounts[name]

    def recall(self, scope: str, ms: float) -> None:
        if scope.startswith(SERVER):
            self._counts[(scope, self.day(), latency_key(ms))] += 1

    def take(self) -> list[Row]:
        """The counts not written yet, handed over (and forgotten here) for one batch."""
        rows = [(scope, day, what, n) for (scope, day, what), n in self._counts.items() if n]
        self._counts.clear()
        return rows

    def give_back(self, rows: Sequence[Row]) -> None:
        """Counts a batch could not write, kept for the next one."""
        for scope, day, what, n in rows:
            self._counts[(scope, day, what)] += n

    def drop(self, scope: str) -> None:
        """Forget the counts of a scope being erased."""
        for key in [k for k in self._counts if k[0] == scope]:
            del self._counts[key]
