"""A flush: a channel's oldest buffered chunk read by the memory model and consolidated, under its lease.

When the model's answers for a chunk stay unusable, the chunk is read apart (by channel, then in
halves) to find the message at fault, within a budget of calls and time (`Isolation`), so one message
never blocks a channel and a flush ends well within its lease. Separate from the service because none
of it is on the hot path of a capture or a reply: the capture buffer's schedule calls `flush_channels`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.memory.consolidate import Consolidator
from bot.memory.counting import STATE_KEY as COUNTING_STATE
from bot.memory.counting import CountingWatch
from bot.memory.events import Learned, MemoryEvent, ModelFailed, Skipped
from bot.memory.extract import extract_chunk
from bot.memory.leases import Leases, channel_key
from bot.memory.model_ports import (
    JsonModel,
    ModelBadAnswer,
    ModelCutOff,
    ModelError,
    ModelKeyRejected,
    ModelRefusal,
    Purpose,
    usage_scope,
)
from bot.memory.models import AppliedChange, BufferedMessage, NewEpisode, NewFact
from bot.memory.policy import MemoryPolicy
from bot.memory.ports import Storage, StorageWorker

log = logging.getLogger(__name__)

# Unusable answers for a message's chunk before its parts are read apart (outages never count).
MAX_BAD_ANSWERS = 5
ISOLATION_SHARE = 0.5  # of a flush's work deadline that reading a chunk apart may take


@dataclass
class Reading:
    """What reading a chunk gave: its facts, the messages skipped (refused, or unusable even alone), and
    those left buffered because the flush spent its isolation budget."""

    facts: list[NewFact] = field(default_factory=list)
    episodes: list[NewEpisode] = field(default_factory=list)
    refused: list[BufferedMessage] = field(default_factory=list)
    unusable: list[BufferedMessage] = field(default_factory=list)
    left: list[BufferedMessage] = field(default_factory=list)
    error: str = ""  # the last unusable answer, for the admin log

    def __iadd__(self, other: Reading) -> Reading:
        self.facts += other.facts
        self.episodes += other.episodes
        self.refused += other.refused
        self.unusable += other.unusable
        self.left += other.left
        self.error = other.error or self.error
        return self


@dataclass
class Isolation:
    """What one flush may still spend reading a chunk apart: unusable answers to follow up (by reading
    smaller parts or asking again), and time, so the flush ends well within its lease."""

    spare: int
    until: float
    clock: Callable[[], float]

    @classmethod
    def for_chunk(cls, size: int, seconds: float, clock: Callable[[], float]) -> Isolation:
        """Enough to find one message at fault: the chunk, its channel's part, each halving, the second try."""
        return cls(math.ceil(math.log2(max(size, 1))) + 2, clock() + seconds, clock)

    def expired(self) -> bool:
        return self.clock() >= self.until

    def spend(self) -> bool:
        if self.spare <= 0 or self.expired():
            return False
        self.spare -= 1
        return True


def parts_of(part: list[BufferedMessage]) -> list[list[BufferedMessage]]:
    """A part to read apart: each channel's messages when it spans several channels, else its halves."""
    channels: dict[str, list[BufferedMessage]] = {}
    for message in part:
        channels.setdefault(message.channel_id, []).append(message)
    if len(channels) > 1:
        return list(channels.values())
    half = len(part) // 2
    return [part[:half], part[half:]]


class Flusher:
    """Flushes channels for the service: reads their chunk, consolidates it, tells the admin log.

    `still_captured` says whether a buffered message's guild and channel are still remembered (a switch
    made since its capture wins); `emit` hands the service's listeners what a flush learned or skipped.
    """

    def __init__(
        self,
        store: StorageWorker,
        llm: JsonModel,
        policy: MemoryPolicy,
        leases: Leases,
        consolidator: Consolidator,
        *,
        still_captured: Callable[[BufferedMessage], bool],
        emit: Callable[[MemoryEvent], None],
    ) -> None:
        self.store = store
        self.llm = llm
        self.policy = policy
        self.leases = leases
        self.consolidator = consolidator
        self._still_captured = still_captured
        self._emit = emit
        self.counting = CountingWatch()  # whether the memory model's selections are worth asking for
        self._counting_saved = self.counting.state()
        self.clock: Callable[[], float] = time.monotonic  # times the reading apart of a chunk

    async def load_counting(self) -> None:
        """Take up the counting watch where the last run left it."""
        saved = await self.store.call(Storage.get_state, COUNTING_STATE)
        self.counting = CountingWatch.of(json.loads(saved) if saved else None)
        self._counting_saved = self.counting.state()

    async def _keep_counting_state(self) -> None:
        """Save the counting watch when it changed, so a restart neither asks a counting model again at
        once nor forgets that it chose (`stats` shows it)."""
        state = self.counting.state()
        if state != self._counting_saved:
            await self.store.call(Storage.set_state, COUNTING_STATE, json.dumps(state))
            self._counting_saved = state

    async def flush_channels(self, channel_ids: list[str]) -> int:
        """One extraction over the oldest buffered messages of channels of one scope (the chunk size in
        all), each message keeping its channel; returns the number of changes.

        On a model failure nothing is written and the messages stay buffered for a later attempt, except
        when the chunk's answers stayed unusable and its parts were read apart (`_read`): what they taught
        is written, and only the parts the flush's isolation budget did not reach stay buffered.
        """
        claimed = [c for c in channel_ids if await self.leases.try_claim([channel_key(c)])]
        try:
            async with asyncio.timeout(self.leases.work_deadline):
                return await self._flush_claimed(claimed)
        finally:
            if claimed:
                await self.leases.release([channel_key(c) for c in claimed])

    async def _flush_claimed(self, channel_ids: list[str]) -> int:
        """`flush_channels` on channels this process holds the lease of (another process may flush the rest)."""
        chunk: list[BufferedMessage] = []
        for channel_id in channel_ids:
            room = self.policy.flush.max_messages - len(chunk)
            if room <= 0:
                break
            part = await self.store.call(Storage.pending_messages, channel_id, room)
            if part and chunk and part[0].scope != chunk[0].scope:
                continue  # a caller's mistake; scopes never share a call
            if part and not self._still_captured(part[0]):  # switched off or ignored meanwhile
                await self.store.call(Storage.delete_pending_messages, [m.message_id for m in part])
                continue
            chunk += part
        if not chunk:
            return 0
        scope = chunk[0].scope
        ids = [m.message_id for m in chunk]
        # Counted per message, so a message that spoils every answer reaches the limit whatever its company.
        at_limit = max(m.attempts for m in chunk) + 1 >= MAX_BAD_ANSWERS
        try:
            with usage_scope(scope):  # what this costs shows in the server's own /memory-admin stats
                reading = await self._read(chunk, isolation=self._isolation(len(chunk)) if at_limit else None)
                left = {m.message_id for m in reading.left}
                names = {(m.scope, m.author_id): m.author_name for m in chunk if not m.is_bot}
                changes = await self.consolidator.run(
                    reading.facts,
                    episodes=reading.episodes,
                    consumed_message_ids=[i for i in ids if i not in left],  # skipped ones too
                    user_names=names,
                    read_texts={m.message_id: m.content for m in chunk},
                    last_try=at_limit,
                )
        except ModelError as exc:
            if isinstance(exc, ModelBadAnswer):  # counted apart from outages, which never cost messages
                await self.store.call(Storage.mark_attempt, ids)
            self._failed(scope, exc, len(ids))
            raise
        self._tell(scope, reading, changes, len(chunk))
        if reading.left:  # what the isolation did not reach waits for the next flush, backing off
            failure = ModelBadAnswer(
                reading.error or "no time left to read the chunk apart", purpose=Purpose.EXTRACT
            )
            self._failed(scope, failure, len(reading.left))
            raise failure
        return len(changes)

    def _isolation(self, size: int) -> Isolation:
        """Reading apart may take half the flush's time; the rest is for a call under way and consolidation."""
        return Isolation.for_chunk(size, self.leases.work_deadline * ISOLATION_SHARE, self.clock)

    def _failed(self, scope: str, exc: ModelError, pending: int) -> None:
        key_rejected = isinstance(exc, ModelKeyRejected)
        self._emit(ModelFailed(scope, str(exc.purpose), str(exc), pending, key_rejected=key_rejected))

    def _tell(self, scope: str, reading: Reading, changes: list[AppliedChange], read: int) -> None:
        """Admin events of a flush: what was skipped, per channel, and what was learned."""
        for refused, skipped in ((True, reading.refused), (False, reading.unusable)):
            error = "" if refused else reading.error
            for channel_id, count in Counter(m.channel_id for m in skipped).items():
                self._emit(Skipped(scope, count, refused=refused, error=error, channel_id=channel_id))
        if changes:
            learned_from = read - len(reading.refused) - len(reading.unusable) - len(reading.left)
            self._emit(Learned(scope, changes, learned_from))

    async def _read(
        self, part: list[BufferedMessage], *, isolation: Isolation | None, alone_again: bool = False
    ) -> Reading:
        """The facts of `part`, read in smaller parts apart when the input is at fault.

        A refusal is about the text, so asking again never helps: the part is split (by channel, then in
        halves) until the message at fault is found and skipped. An answer cut off at its token limit
        (ModelCutOff) is split at once too, since the same question loops the same way; for one message
        it is an unusable answer. An unusable answer may be the model's
        flakiness, so it is split only under an `isolation` (the chunk has had its MAX_BAD_ANSWERS), and
        a message that came out of a split is asked again alone (`alone_again`) before it is given up.
        Either way everyone else's facts are learned; an outage propagates and costs nothing.
        """
        if isolation is not None and isolation.expired():
            return Reading(left=part)
        try:
            extraction = await extract_chunk(
                self.llm,
                part,
                community=self.policy.community,
                mode=self.policy.extraction,
                watch=self.counting,
            )
            await self._keep_counting_state()
            return Reading(facts=extraction.facts, episodes=extraction.episodes)
        except ModelRefusal as exc:
            if len(part) == 1:
                log.info(
                    "the memory model refused to read message %s; skipping it: %s", part[0].message_id, exc
                )
                return Reading(refused=part)
            return await self._read_apart(part, isolation)
        except ModelBadAnswer as exc:
            if isinstance(exc, ModelCutOff) and len(part) > 1:
                return await self._read_apart(part, isolation)  # asked the same way, it loops the same way
            if isolation is None:
                raise
            if len(part) == 1 and not alone_again:
                log.warning(
                    "the memory model's answers for message %s stay unusable; skipping it: %s",
                    part[0].message_id,
                    exc,
                )
                return Reading(unusable=part, error=str(exc))
            if not isolation.spend():
                return Reading(left=part, error=str(exc))
            if len(part) == 1:
                return await self._read(part, isolation=isolation)
            return await self._read_apart(part, isolation)

    async def _read_apart(self, part: list[BufferedMessage], isolation: Isolation | None) -> Reading:
        reading = Reading()
        for piece in parts_of(part):
            reading += await self._read(piece, isolation=isolation, alone_again=len(piece) == 1)
        return reading
