"""Durable per-channel buffers of captured messages, and deciding when each one flushes.

`submit()` is what `on_message` calls: it only appends to an in-memory queue (microseconds of event
loop time). A writer task commits everything queued so far in one transaction (group commit), so a
busy server costs one SQLite commit per batch, not per message. Edits and deletions travel through
the same queue, so they apply in order even to messages not yet written.

A channel flushes when it grows past a size, gets old, or goes quiet with enough said in its server
(or DMs) to be worth a call: a quiet flush of two messages costs as much as one of fifty. When a
channel flushes, the other channels of its scope with buffered messages join it in one extraction
call, up to the chunk size, where the bot says their readers are the same (`shareable`), so a server
whose talk is spread over quiet channels pays for one call where it paid for one per channel. Failed flushes leave the messages in the buffer and back off; on
start-up whatever is overdue flushes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.gist import first_line
from bot.memory.models import BufferedMessage
from bot.memory.ports import Storage, StorageWorker

log = logging.getLogger(__name__)

MAX_RETRY_DELAY_SECONDS = 600.0


@dataclass(frozen=True)
class FlushPolicy:
    quiet_seconds: float = 60.0
    max_messages: int = 50
    max_age_seconds: float = 600.0
    concurrency: int = 2
    tick_seconds: float = 0.5
    min_messages: int = 1  # a quiet flush waits for this many human messages in the scope
    claim_seconds: float = 300.0  # a flush's lease on its channels; it gives up within 80% of it


@dataclass
class _ChannelState:
    scope: str = ""
    count: int = 0
    first_at: float = 0.0
    last_at: float = 0.0
    failures: int = 0
    retry_at: float = 0.0


@dataclass(frozen=True)
class _Op:
    kind: str  # "add" | "edit" | "delete"
    message: BufferedMessage | None = None
    message_id: str = ""
    content: str = ""
    at: float = 0.0


FlushFn = Callable[[list[str]], Awaitable[int]]


class CaptureBuffer:
    """Owns the write queue and the flush schedule; `flush_fn(channel_ids)` does the actual work: one
    extraction over those channels' oldest buffered messages (all of one scope)."""

    def __init__(
        self,
        store: StorageWorker,
        policy: FlushPolicy,
        flush_fn: FlushFn,
        *,
        clock: Callable[[], float] = time.time,
        accept: Callable[[BufferedMessage], bool] = lambda message: True,
        shareable: Callable[[str], bool] = lambda channel_id: False,
    ) -> None:
        self.store = store
        self.policy = policy
        self.flush_fn = flush_fn
        self._failing = (
            False  # writes fail (the database is down): logged once, and once when they work again
        )
        self.clock = clock
        self.accept = accept  # asked again as each queued message is written: later switches win
        # Whether a channel's messages may be read in one call with other such channels of its scope:
        # the bot says yes for channels every member can read, so no call mixes words of different readers.
        self.shareable = shareable
        self._queue: list[_Op] = []
        self._wakeup = asyncio.Event()
        self._written = asyncio.Event()
        self._channels: dict[str, _ChannelState] = {}
        self._flushing: dict[str, asyncio.Task[None]] = {}
        self._semaphore = asyncio.Semaphore(policy.concurrency)
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._writing = False

    # ---- the hot path --------------------------------------------------------------------------------

    def submit(self, message: BufferedMessage) -> None:
        self._enqueue(_Op("add", message=message, at=self.clock()))

    def edit(self, message_id: str, content: str) -> None:
        self._enqueue(_Op("edit", message_id=message_id, content=content))

    def delete(self, message_id: str) -> None:
        self._enqueue(_Op("delete", message_id=message_id))

    def _enqueue(self, op: _Op) -> None:
        if self._stopping:
            log.warning("capture is shutting down; a %s arriving now is not recorded", op.kind)
            return
        self._queue.append(op)
        self._wakeup.set()

    # ---- lifecycle -----------------------------------------------------------------------------------

    async def start(self, scope: str | None = None) -> None:
        """Load what a previous run left in the buffer (of `scope` only, when given: the channels this
        process flushes), then start writing and scheduling."""
        for pending in await self.store.call(Storage.pending_channels):
            if scope is not None and pending.scope != scope:
                continue
            self._channels[pending.channel_id] = _ChannelState(
                pending.scope, pending.count, pending.first_captured_at, pending.last_captured_at
            )
        if self._channels:
            log.info("%d channels have buffered messages from a previous run", len(self._channels))
        self._tasks = [
            asyncio.create_task(self._writer(), name="capture-writer"),
            asyncio.create_task(self._scheduler(), name="capture-scheduler"),
        ]

    async def stop(self, timeout: float = 10.0) -> None:
        """Persist everything queued, let running flushes finish within `timeout`, then stop.

        Messages whose flush did not run stay in the durable buffer for the next start.
        """
        self._stopping = True
        deadline = time.monotonic() + timeout
        for task in self._tasks:  # no new flush may start while we wait for the running ones
            if task.get_name() == "capture-scheduler":
                task.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wait_written(), timeout=max(0.1, deadline - time.monotonic()))
        running = list(self._flushing.values())
        if running:
            _, late = await asyncio.wait(running, timeout=max(0.1, deadline - time.monotonic()))
            for task in late:
                task.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._flushing.values(), return_exceptions=True)
        if self._queue:
            log.error("%d captured messages could not be written before shutdown", len(self._queue))

    async def wait_written(self) -> None:
        """Return once everything submitted so far is committed to the database."""
        while self._queue or self._writing:
            self._written.clear()
            await self._written.wait()

    # ---- writing ---------------------------------------------------------------------------------------

    async def _writer(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            ops, self._queue = self._queue, []
            if not ops:
                continue
            self._writing = True
            try:
                done = await self._write(ops)
            finally:
                self._writing = False
            if done < len(ops):  # only what did not commit is tried again (a replay could revive a message)
                self._queue[:0] = ops[done:]
                await asyncio.sleep(1.0)
                self._wakeup.set()
                continue
            self._written.set()

    async def _write(self, ops: list[_Op]) -> int:
        """Apply a run of operations in order, consecutive adds in one transaction; returns how many are done.

        A failure of the database itself (locked, full, closed) stops there and is logged; the caller queues
        the rest again. A failure caused by the data (text SQLite cannot store) is found by writing that run
        one operation at a time, and the operation at fault is dropped with a log line: no single input may
        stop capture for everyone.
        """
        done = 0
        alone_until = 0  # operations before this index are written one at a time
        while done < len(ops):
            end = done + 1
            if done >= alone_until and ops[done].kind == "add":
                while end < len(ops) and ops[end].kind == "add":
                    end += 1
            try:
                await self._apply(ops[done:end])
            except self.store.row_errors as exc:  # a value the database cannot take, not a locked or full one
                if end - done > 1:
                    alone_until = end
                    continue
                op = ops[done]
                log.error(
                    "captured %s of message %s cannot be written (%s: %s); dropped so capture goes on",
                    op.kind,
                    op.message.message_id if op.message is not None else op.message_id,
                    type(exc).__name__,
                    exc,
                )
            except Exception as exc:  # the database is down or busy: said once, not every retry
                if not self._failing:
                    log.warning(
                        "writing %d captured operations failed (%s: %s); retrying until the database is back",
                        len(ops) - done,
                        type(exc).__name__,
                        first_line(exc),
                        exc_info=log.isEnabledFor(logging.DEBUG),
                    )
                self._failing = True
                return done
            done = end
        if self._failing:
            log.warning("writing captured messages works again; nothing was lost")
            self._failing = False
        return len(ops)

    async def _apply(self, ops: list[_Op]) -> None:
        """One transaction: a run of adds, or a single edit or deletion."""
        if ops[0].kind == "add":
            await self._write_adds(ops)
        elif ops[0].kind == "edit":
            await self.store.call(Storage.update_pending_message, ops[0].message_id, ops[0].content)
        else:
            await self.store.call(Storage.delete_pending_messages, [ops[0].message_id])

    async def _write_adds(self, ops: list[_Op]) -> None:
        adds = [(op.message, op.at) for op in ops if op.message is not None and self.accept(op.message)]
        if not adds:
            return
        await self.store.call(Storage.buffer_messages, adds)
        for message, at in adds:
            if message.is_bot:
                continue
            state = self._channels.setdefault(message.channel_id, _ChannelState(message.scope, first_at=at))
            if state.count == 0:
                state.first_at = at
            state.count += 1
            state.last_at = at

    # ---- scheduling --------------------------------------------------------------------------------------

    def due(self, channel_id: str, now: float) -> list[str] | None:
        """The channels to flush together if `channel_id` is due, else None.

        Due: full, old, or quiet with at least `min_messages` human messages in the chunk it would
        make together with the channels that may share its call.
        """
        state = self._channels[channel_id]
        if state.count == 0 or now < state.retry_at:
            return None
        p = self.policy
        if state.count >= p.max_messages or now - state.first_at >= p.max_age_seconds:
            return self.companions(channel_id, now)
        if now - state.last_at < p.quiet_seconds:
            return None
        group = self.companions(channel_id, now)
        return group if sum(self._channels[c].count for c in group) >= p.min_messages else None

    def companions(self, channel_id: str, now: float) -> list[str]:
        """`channel_id` and the channels that may share its flush: others of its scope, both `shareable`,
        with buffered messages, oldest first, as long as they fit in one chunk. Channels flushing or
        backing off after a failure stay out."""
        lead = self._channels[channel_id]
        group = [channel_id]
        if not self.shareable(channel_id):
            return group
        room = self.policy.max_messages - lead.count
        others = sorted(
            (s.first_at, cid)
            for cid, s in self._channels.items()
            if cid != channel_id
            and s.scope == lead.scope
            and s.count
            and cid not in self._flushing
            and now >= s.retry_at
        )
        for _, cid in others:
            count = self._channels[cid].count
            if count <= room and self.shareable(cid):
                group.append(cid)
                room -= count
        return group

    async def _scheduler(self) -> None:
        while True:
            now = self.clock()
            for channel_id in list(self._channels):
                if channel_id not in self._flushing and (group := self.due(channel_id, now)):
                    self._start_flush(group)
            await asyncio.sleep(self.policy.tick_seconds)

    def _start_flush(self, channel_ids: list[str]) -> asyncio.Task[None]:
        task = asyncio.create_task(self._run_flush(channel_ids), name=f"flush-{'+'.join(channel_ids)}")
        for cid in channel_ids:
            self._flushing[cid] = task

        def done(_: asyncio.Task[None]) -> None:
            for cid in channel_ids:
                if self._flushing.get(cid) is task:
                    del self._flushing[cid]

        task.add_done_callback(done)
        return task

    async def _run_flush(self, channel_ids: list[str]) -> None:
        async with self._semaphore:
            states = {cid: s for cid in channel_ids if (s := self._channels.get(cid)) is not None}
            if not states or self._stopping:  # a flush still waiting for its turn stays buffered
                return
            taken = sum(s.count for s in states.values())
            try:
                await self.flush_fn(list(states))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                for state in states.values():
                    state.failures += 1
                    delay = min(
                        MAX_RETRY_DELAY_SECONDS,
                        max(self.policy.quiet_seconds, 5.0) * 2 ** (state.failures - 1),
                    )
                    state.retry_at = self.clock() + delay
                log.warning(
                    "flush of channels %s failed (%s); messages stay buffered, retry in %.0fs",
                    ", ".join(states),
                    exc,
                    delay,
                )
                return
            # Messages captured while the flush ran stay counted for the next one.
            remaining = {p.channel_id: p for p in await self.store.call(Storage.pending_channels)}
            for cid, state in states.items():
                state.failures = 0
                state.retry_at = 0.0
                left = remaining.get(cid)
                if left is None:
                    self._channels.pop(cid, None)
                else:
                    state.count, state.first_at = left.count, left.first_captured_at
                    state.last_at = max(state.last_at, left.last_captured_at)
            log.debug("flushed channels %s (%d messages were buffered)", ", ".join(states), taken)

    async def flush_now(self, channel_id: str | None = None) -> None:
        """Flush one channel (or all) until its buffer is empty, ignoring the schedule; errors propagate.

        Runs like a scheduled flush (a concurrency slot, marked as running so the scheduler leaves the
        channel alone), for operators' tools, benchmarks and tests that cannot wait for a quiet period.
        """
        await self.wait_written()
        targets = [channel_id] if channel_id else [c for c, s in self._channels.items() if s.count]
        for cid in targets:
            running = self._flushing.get(cid)
            if running is not None:
                await asyncio.gather(running, return_exceptions=True)
            async with self._semaphore:
                current = asyncio.current_task()
                assert current is not None
                self._flushing[cid] = current
                try:
                    await self._flush_until_empty(cid)
                finally:
                    self._flushing.pop(cid, None)

    async def _flush_until_empty(self, channel_id: str) -> None:
        before = None
        while True:
            remaining = {p.channel_id: p for p in await self.store.call(Storage.pending_channels)}
            left = remaining.get(channel_id)
            if left is None:
                self._channels.pop(channel_id, None)
                return
            state = self._channels.setdefault(channel_id, _ChannelState(left.scope))
            state.count, state.retry_at = left.count, 0.0
            if before is not None and left.count >= before:  # nothing consumed: leave the rest for later
                return
            before = left.count
            await self.flush_fn([channel_id])

    @property
    def flushes_running(self) -> int:
        """Flushes started and not finished (including those waiting for a concurrency slot)."""
        return len(self._flushing)

    def pending_in_memory(self, scope: str | None = None) -> int:
        """Messages submitted but not yet committed (in one scope, or all)."""
        return sum(
            1 for op in self._queue if op.message is not None and (scope is None or op.message.scope == scope)
        )
