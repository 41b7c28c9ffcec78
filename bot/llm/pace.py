"""How long an endpoint has been taking, and so how long its next call may take before it is given up.

A fixed deadline fits a hosted API, not a CPU: a selection on a 2-core machine took 29-58 s quiet and
86-134 s under load, so `OPENAI_TIMEOUT_SECONDS=60` threw away answers the server went on to finish, and
the retry then waited behind the abandoned request (issue 34). The deadline of a call is therefore the
setting or `MARGIN` times the slowest of the endpoint's recent calls of the same purpose, whichever is
longer; a call that ran out of time counts as having taken its whole deadline, so the next one of its
purpose gets `MARGIN` times as long. A stream is timed to its first piece (a local server reads the whole
prompt before it writes a word); its later pieces keep the plain setting, since a stall there is a fault.
"""

from __future__ import annotations

from collections import defaultdict, deque

from bot.memory.model_ports import Purpose

MARGIN = 3.0
KEEP = 8  # recent calls remembered per purpose
MAX_DEADLINE_SECONDS = 1800.0  # however slow it has been: a call past half an hour is not coming back


class Pace:
    """Recent call times of one endpoint, per purpose; `floor_seconds` is the setting (0: no deadline)."""

    def __init__(self, floor_seconds: float) -> None:
        self.floor_seconds = floor_seconds
        self._took: defaultdict[Purpose, deque[float]] = defaultdict(lambda: deque(maxlen=KEEP))

    def deadline(self, purpose: Purpose) -> float | None:
        """Seconds the next call of `purpose` may take; None: no deadline."""
        if self.floor_seconds <= 0:
            return None
        slowest = max(self._took[purpose], default=0.0)
        return min(max(self.floor_seconds, MARGIN * slowest), max(self.floor_seconds, MAX_DEADLINE_SECONDS))

    def took(self, purpose: Purpose, seconds: float) -> None:
        """A call of `purpose` answered (or ran out of its deadline) after `seconds`."""
        self._took[purpose].append(seconds)

    def slowest(self, purpose: Purpose) -> float | None:
        """The slowest recent call of `purpose`, for check and stats; None before the first."""
        return max(self._took[purpose], default=None)
