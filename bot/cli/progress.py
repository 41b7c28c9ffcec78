"""How far a long command is (`reembed`, `migrate`, `facts import`), on stderr: a tqdm bar with the total,
the rate and the time left on a terminal; plain lines where nobody watches a bar redraw (a log, a pipe,
the tests), at most one every PLAIN_EVERY seconds and always the last.

The engine reports `(done, total)` through a callback and prints nothing; this is what the CLI hands it.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

from tqdm import tqdm

PLAIN_EVERY = 2.0  # seconds between two plain lines


class Progress:
    """A callback `(done, total)` that shows progress while the command runs; a context manager, so the
    bar is closed (and its line ended) whatever happens."""

    def __init__(self, doing: str, unit: str, *, stream: TextIO | None = None) -> None:
        self.doing = doing
        self.unit = unit
        self.stream = stream or sys.stderr
        self.bar: tqdm[None] | None = None
        self.started = time.monotonic()
        self._said_at = float("-inf")

    def __call__(self, done: int, total: int) -> None:
        if self.stream.isatty():
            self._draw(done, total)
        else:
            self._say(done, total)

    def _draw(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = tqdm(
                total=total, desc=self.doing, unit=f" {self.unit}", file=self.stream, dynamic_ncols=True
            )
        self.bar.total = max(total, done)
        self.bar.update(done - self.bar.n)

    def _say(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._said_at < PLAIN_EVERY and done < total:
            return
        self._said_at = now
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        line = f"{self.doing}: {done:,} of {total:,} {self.unit}"
        if total:
            line += f" ({100 * done // total}%)"
        if rate > 0:
            line += f", {rate:,.1f} {self.unit}/s"
            if done < total:
                line += f", about {_duration((total - done) / rate)} left"
        print(line, file=self.stream, flush=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.bar is not None:
            self.bar.close()


def _duration(seconds: float) -> str:
    """'45 s', '3 min 20 s', '2 h 5 min': time left as a person reads it."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
