"""Rate limits of the dashboard, in memory: how many sign-in steps and form posts a client address and a
session may make in a window of time; past it, a 429 with Retry-After.

A sliding log per key (the times of its last requests), kept in this process only: a restart forgets it,
and two dashboards on one database count apart. The address is the one uvicorn reports, which behind a
reverse proxy on the same machine is the client's (uvicorn trusts X-Forwarded-For from 127.0.0.1 and ::1
unless FORWARDED_ALLOW_IPS says otherwise).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

MAX_KEYS = 10_000  # past it, keys with no request in their window are dropped, then the oldest


@dataclass(frozen=True)
class Limit:
    """At most `requests` in any `seconds`."""

    requests: int
    seconds: float


@dataclass(frozen=True)
class Limits:
    """The dashboard's limits: sign-in steps (`/auth/login` and the callback, two a sign-in) per address;
    form posts (every POST) per address and per session."""

    sign_in_per_address: Limit = Limit(20, 300.0)
    forms_per_address: Limit = Limit(120, 60.0)
    forms_per_session: Limit = Limit(60, 60.0)


class RateLimiter:
    """Counts requests per key; `hit` says how long to wait (seconds, rounded up), or 0 when allowed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._times: dict[tuple[str, str], deque[float]] = {}
        self._longest = 0.0  # the longest window counted: a key idle that long counts nothing

    def hit(self, checks: list[tuple[str, str, Limit]]) -> int:
        """Count a request against each (kind, key, limit) unless one of them is over its limit (a refused
        request counts against none); the seconds to wait, or 0."""
        now = self.clock()
        logs = []
        for kind, key, limit in checks:
            self._longest = max(self._longest, limit.seconds)
            times = self._times.get((kind, key))
            if times is None:
                self._make_room(now)
                times = self._times.setdefault((kind, key), deque())
            while times and times[0] <= now - limit.seconds:
                times.popleft()
            logs.append(times)
        wait = max(
            (
                math.ceil(times[0] + limit.seconds - now)
                for times, (_, _, limit) in zip(logs, checks, strict=True)
                if len(times) >= limit.requests
            ),
            default=0,
        )
        if wait:
            return max(1, wait)
        for times in logs:
            times.append(now)
        return 0

    def __len__(self) -> int:
        """How many keys it holds."""
        return len(self._times)

    def _make_room(self, now: float) -> None:
        """Bound the memory a flood of new addresses takes: idle keys go first, then the oldest."""
        if len(self._times) < MAX_KEYS:
            return
        for key in [k for k, times in self._times.items() if not times or times[-1] <= now - self._longest]:
            del self._times[key]
        while len(self._times) >= MAX_KEYS:
            del self._times[next(iter(self._times))]
