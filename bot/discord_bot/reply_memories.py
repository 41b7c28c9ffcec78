"""Which memories each recent reply used, so that the person it answered can ask: held in memory only,
for USED_KEPT_SECONDS and at most USED_KEPT_REPLIES replies (the oldest go first), and not across a
restart. What it holds are ids; the facts themselves are read again, under the audience rule, when shown.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

USED_KEPT_SECONDS = 24 * 3600.0
USED_KEPT_REPLIES = 10_000


@dataclass(frozen=True)
class UsedRecord:
    """One reply's memories: whom it answered, in which scope, and the ids it was given."""

    asker_id: int
    scope: str
    fact_ids: tuple[int, ...]
    episode_ids: tuple[int, ...]
    kept_at: float


class ReplyMemories:
    """The records of recent replies, by the id of the message each answered."""

    def __init__(
        self,
        *,
        seconds: float = USED_KEPT_SECONDS,
        most: int = USED_KEPT_REPLIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seconds = seconds
        self.most = most
        self.clock = clock
        self._records: OrderedDict[int, UsedRecord] = OrderedDict()

    def keep(
        self,
        trigger_id: int,
        asker_id: int,
        scope: str,
        fact_ids: tuple[int, ...],
        episode_ids: tuple[int, ...],
    ) -> None:
        self._records[trigger_id] = UsedRecord(asker_id, scope, fact_ids, episode_ids, self.clock())
        self._records.move_to_end(trigger_id)
        while len(self._records) > self.most:
            self._records.popitem(last=False)

    def get(self, trigger_id: int) -> UsedRecord | None:
        """The record of the reply to `trigger_id`; None once it is too old or was pushed out."""
        expired = self.clock() - self.seconds
        while self._records and next(iter(self._records.values())).kept_at < expired:
            self._records.popitem(last=False)
        return self._records.get(trigger_id)
