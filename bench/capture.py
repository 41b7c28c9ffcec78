"""Capture throughput and latency, and event-loop lag while flushes talk to a slow Gemini.

The capture path as `on_message` runs it (the cog's checks, a `BufferedMessage`, `MemoryService.capture()`,
then the group-commit writer making it durable in SQLite), for 1 channel and for 50 channels at once:

- paced: messages offered at a fixed rate (default 2,000/s) for some seconds while flushes run against the
  Gemini stand-in (300 ms per request, in a child process so its own work is not counted as ours);
  per-message time on the event loop (p50/p99), the rate at which messages became durable, and the
  event-loop lag (how late a 5 ms timer fires) while flushes were running;
- burst: as many messages as the loop can take (yielding every 50), to find the ceiling.

A baseline with flushes switched off shows what the lag is without them.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import CACHE, DOCS, machine, percentiles_ms, table, write_json
from bench.script import StandInProcess, conversation
from bot.app import open_memory
from bot.config import Settings
from bot.memory.models import BufferedMessage, iso, utcnow
from bot.memory.service import MemoryService
from bot.memory.text import worth_reading
from bot.storage import Store

GUILD = "424242"
LAG_INTERVAL = 0.005


@dataclass
class Feed:
    """An endless supply of script lines spread over `channels` channels, each with a fresh id."""

    channels: int
    lines: list[tuple[str, str, str]] = field(default_factory=list)
    sent: int = 0

    def __post_init__(self) -> None:
        self.lines = [(line.author_id, line.author_name, line.text) for line in conversation(1000)]
        self.created = iso(utcnow())

    def next(self) -> tuple[str, str, str, str, str]:
        author_id, name, text = self.lines[self.sent % len(self.lines)]
        channel = str(5000 + self.sent % self.channels)
        message_id = str(10**17 + self.sent)
        self.sent += 1
        return message_id, channel, author_id, name, text


def capture_one(service: MemoryService, feed: Feed, latencies: list[float]) -> None:
    """What the chat cog's `capture` does with one message, timed."""
    message_id, channel, author_id, name, text = feed.next()
    started = time.perf_counter()
    if worth_reading(text):
        service.capture(
            BufferedMessage(
                message_id=message_id,
                scope=f"guild:{GUILD}",
                channel_id=channel,
                author_id=author_id,
                author_name=name,
                content=text,
                created_at=feed.created,
            ),
            guild_id=GUILD,
            parent_channel_id=None,
        )
    latencies.append(time.perf_counter() - started)


class LagMonitor:
    """How late a 5 ms sleep wakes up, sampled continuously, tagged with whether a flush was running."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self.samples: list[tuple[float, bool]] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(LAG_INTERVAL)
            lag = time.perf_counter() - started - LAG_INTERVAL
            self.samples.append((lag, bool(self.service.capture_buffer.flushes_running)))

    def take(self) -> list[tuple[float, bool]]:
        samples, self.samples = self.samples, []
        return samples

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def paced(
    service: MemoryService, feed: Feed, monitor: LagMonitor, rate: float, seconds: float
) -> dict[str, Any]:
    """Offer `rate` messages/s for `seconds`; returns latency, durable rate and lag figures."""
    latencies: list[float] = []
    monitor.take()
    backlog = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        due = int(elapsed * rate)
        while len(latencies) < due:
            capture_one(service, feed, latencies)
        backlog = max(backlog, service.capture_buffer.pending_in_memory())
        await asyncio.sleep(0.002)
    offered = len(latencies)
    submitted_at = time.perf_counter()
    await service.capture_buffer.wait_written()
    durable_at = time.perf_counter()
    lag = monitor.take()
    during_flush = [s for s, flushing in lag if flushing]
    return {
        "offered_per_second": rate,
        "messages": offered,
        "capture_ms": percentiles_ms(latencies),
        "durable_per_second": round(offered / (durable_at - started)),
        "drain_after_last_ms": round((durable_at - submitted_at) * 1000, 1),
        "max_queue": backlog,
        "lag_ms": percentiles_ms([s for s, _ in lag]),
        "lag_during_flush_ms": percentiles_ms(during_flush),
        "flush_time_pct": round(100 * len(during_flush) / max(1, len(lag)), 1),
    }


async def burst(service: MemoryService, feed: Feed, monitor: LagMonitor, count: int) -> dict[str, Any]:
    """Submit `count` messages as fast as the loop allows (yielding every 50) until all are durable."""
    latencies: list[float] = []
    monitor.take()
    started = time.perf_counter()
    for i in range(count):
        capture_one(service, feed, latencies)
        if i % 50 == 49:
            await asyncio.sleep(0)
    submitted = time.perf_counter()
    await service.capture_buffer.wait_written()
    durable = time.perf_counter()
    return {
        "messages": count,
        "capture_ms": percentiles_ms(latencies),
        "submit_per_second": round(count / (submitted - started)),
        "durable_per_second": round(count / (durable - started)),
        "lag_ms": percentiles_ms([s for s, _ in monitor.take()]),
    }


async def scenario(
    channels: int, *, rate: float, seconds: float, burst_count: int, latency: float, flushes: bool
) -> dict[str, Any]:
    """One fresh database and stand-in; a paced phase then a burst, flushes running throughout."""
    path = CACHE / "capture" / f"capture_{channels}{'' if flushes else '_noflush'}.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with StandInProcess(latency) as standin:
        never = 10**9
        settings = Settings(
            gemini_api_key="bench-key",
            gemini_base_url=standin.base_url,
            database_path=path,
            embedding_dimensions=768,
            memory_flush_max_messages=50 if flushes else never,
            memory_flush_quiet_seconds=60 if flushes else never,
            memory_flush_max_age_seconds=600 if flushes else never,
        )
        service = await open_memory(settings)
        await service.start()
        flush_times: list[float] = []
        outcomes: Counter[str] = Counter()
        original = service.capture_buffer.flush_fn

        async def timed_flush(channel_ids: list[str]) -> int:
            started = time.perf_counter()
            try:
                changes = await original(channel_ids)
            except asyncio.CancelledError:
                outcomes["cancelled at shutdown"] += 1
                raise
            except Exception as exc:
                outcomes[f"failed: {type(exc).__name__}: {exc}"[:120]] += 1
                raise
            flush_times.append(time.perf_counter() - started)
            outcomes["completed"] += 1
            return changes

        service.capture_buffer.flush_fn = timed_flush
        monitor = LagMonitor(service)
        monitor.start()
        feed = Feed(channels)
        await asyncio.sleep(0.5)
        idle_lag = percentiles_ms([s for s, _ in monitor.take()])
        steady = await paced(service, feed, monitor, rate, seconds)
        peak = await burst(service, feed, monitor, burst_count)
        await monitor.stop()
        calls = standin.stats()
        pending = await service.store.call(Store.count_pending)
        done, done_outcomes = list(flush_times), dict(outcomes)  # before shutdown drains more
        await service.close(timeout=5)
    return {
        "channels": channels,
        "flushes_enabled": flushes,
        "gemini_latency_s": latency,
        "idle_lag_ms": idle_lag,
        "paced": steady,
        "burst": peak,
        "flushes": {
            "completed": len(done),
            "outcomes": done_outcomes,
            "duration_ms": percentiles_ms(done),
        },
        "gemini_requests": calls["requests"],
        "pending_at_end": pending,
    }


def report(results: list[dict[str, Any]]) -> None:
    rows = []
    for r in results:
        p, b = r["paced"], r["burst"]
        rows.append(
            [
                r["channels"],
                "on" if r["flushes_enabled"] else "off",
                p["messages"],
                p["capture_ms"]["p50"],
                p["capture_ms"]["p99"],
                p["durable_per_second"],
                p["lag_ms"]["p99"],
                p["lag_during_flush_ms"]["p99"],
                p["lag_ms"]["max"],
                r["flushes"]["completed"],
                b["durable_per_second"],
                b["capture_ms"]["p99"],
            ]
        )
    print(f"\nCapture path, Gemini stand-in at {results[0]['gemini_latency_s'] * 1000:.0f} ms per request")
    print(
        table(
            [
                "channels",
                "flushes",
                "msgs (paced)",
                "capture p50 ms",
                "capture p99 ms",
                "durable msg/s",
                "lag p99 ms",
                "lag p99 in flush",
                "lag max ms",
                "flushes done",
                "burst msg/s",
                "burst p99 ms",
            ],
            rows,
        )
    )


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [f"{r['channels']} ch, flushes {'on' if r['flushes_enabled'] else 'off'}" for r in results]
    for offset, (key, name) in enumerate((("p50", "p50"), ("p99", "p99"), ("max", "max"))):
        values = [r["paced"]["lag_ms"][key] for r in results]
        bars = ax.bar(
            [i + (offset - 1) * 0.26 for i in range(len(results))], values, 0.26, label=f"lag {name}"
        )
        ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.axhline(20, color="grey", linestyle=":", label="target p99 20 ms")
    ax.set_xticks(range(len(results)), labels)
    ax.set_ylabel("event-loop lag, ms")
    ax.set_title("Event-loop lag while capturing (paced) with flushes against a 300 ms Gemini")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    cases = [(1, True), (50, True), (50, False)]
    results = []
    for channels, flushes in cases:
        print(f"{channels} channel(s), flushes {'on' if flushes else 'off'} ...", flush=True)
        results.append(
            await scenario(
                channels,
                rate=args.rate,
                seconds=args.seconds,
                burst_count=args.burst,
                latency=args.latency,
                flushes=flushes,
            )
        )
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 s paced, 5,000-message burst")
    parser.add_argument("--rate", type=float, default=2000.0, help="offered messages per second")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of the paced phase")
    parser.add_argument("--burst", type=int, default=20_000, help="messages in the burst phase")
    parser.add_argument("--latency", type=float, default=0.3, help="Gemini stand-in latency, seconds")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.burst = 3.0, 5000
    results = asyncio.run(main_async(args))
    report(results)
    data = {"benchmark": "capture", "machine": machine(), "results": results}
    print(f"\nwrote {write_json('capture', data, partial=args.quick)}")
    if not args.quick:
        plot(results, DOCS / "capture.png")
        print(f"wrote {DOCS / 'capture.png'}")


if __name__ == "__main__":
    main()
