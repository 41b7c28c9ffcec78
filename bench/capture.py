"""Capture throughput and latency, and event-loop lag while flushes talk to a slow Gemini.

The capture path as `on_message` runs it (the cog's checks, a `BufferedMessage`, `MemoryService.capture()`,
then the group-commit writer making it durable in SQLite), for 1 channel and for 50 channels at once:

- paced: messages offered at a fixed rate (default 2,000/s) for some seconds while flushes run against the
  Gemini stand-in (300 ms per request, in a child process so its own work is not counted as ours);
  per-message time on the event loop (p50/p99), the rate at which messages became durable, and the
  event-loop lag (how late a 5 ms timer fires) while flushes were running;
- burst: as many messages as the loop can take (yielding every 50), to find the ceiling.

A baseline with flushes switched off shows what the lag is without them.

`--backend sqlite|postgres|both` runs the same on either store (PostgreSQL from `pgserver`, fsync on).
`--processes 1 2` instead compares one bot process with two (two `MemoryService`s in separate OS
processes, each with its own store on the same database, as two shards would run) capturing the same
feed split by channel, flushing against the same stand-in: durable messages/s and per-message loop
time for each. Every write takes the database's one write lock (SQLite's file lock, PostgreSQL's
advisory lock), so the question is what a second process adds when both write.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import pg
from bench.common import CACHE, DOCS, machine, percentiles_ms, table, write_json
from bench.script import StandInProcess, conversation
from bot.app import open_memory
from bot.config import Settings
from bot.memory.models import BufferedMessage, iso, utcnow
from bot.memory.service import MemoryService
from bot.memory.text import worth_reading
from bot.storage.locations import is_url, open_storage
from bot.storage.sql.store import SqlStore

GUILD = "424242"
LAG_INTERVAL = 0.005


@dataclass
class Feed:
    """An endless supply of script lines spread over `channels` channels, each with a fresh id.

    With `shards` > 1 this is one shard's part of the feed: the messages of channels c with
    c % shards == shard, so two feeds of one feed's channels together carry every message once.
    """

    channels: int
    shard: int = 0
    shards: int = 1
    lines: list[tuple[str, str, str]] = field(default_factory=list)
    sent: int = 0

    def __post_init__(self) -> None:
        if self.channels < self.shards:
            raise ValueError("every shard needs at least one channel")
        self.lines = [(line.author_id, line.author_name, line.text) for line in conversation(1000)]
        self.created = iso(utcnow())

    def next(self) -> tuple[str, str, str, str, str]:
        while (self.sent % self.channels) % self.shards != self.shard:
            self.sent += 1
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
        "started_at": started,
        "durable_at": durable_at,
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
        "started_at": started,  # perf_counter: the same clock in every process on Linux
        "durable_at": durable,
        "capture_ms": percentiles_ms(latencies),
        "submit_per_second": round(count / (submitted - started)),
        "durable_per_second": round(count / (durable - started)),
        "lag_ms": percentiles_ms([s for s, _ in monitor.take()]),
    }


def bench_settings(location: Path | str, base_url: str, *, flushes: bool) -> Settings:
    """The bot's settings on `location` against the stand-in, flushes on (the default policy) or off."""
    never = 10**9
    where: dict[str, Any] = {"database_url": location} if is_url(location) else {"database_path": location}
    return Settings(
        gemini_api_key="bench-key",
        gemini_base_url=base_url,
        embedding_dimensions=768,
        memory_flush_max_messages=50 if flushes else never,
        memory_flush_quiet_seconds=60 if flushes else never,
        memory_flush_max_age_seconds=600 if flushes else never,
        **where,
    )


async def run_capture(
    settings: Settings,
    feed: Feed,
    *,
    rate: float,
    seconds: float,
    burst_count: int,
    sync: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """One bot's memory service on the settings' database: a paced phase, then a burst, flushes throughout.

    `sync` (a barrier's wait) lines the phases up with other processes doing the same.
    """
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
    await asyncio.sleep(0.5)
    idle_lag = percentiles_ms([s for s, _ in monitor.take()])
    if sync is not None:
        await asyncio.to_thread(sync)
    steady = await paced(service, feed, monitor, rate, seconds)
    if sync is not None:
        await asyncio.to_thread(sync)
    peak = await burst(service, feed, monitor, burst_count)
    await monitor.stop()
    pending = await service.store.call(SqlStore.count_pending)
    done, done_outcomes = list(flush_times), dict(outcomes)  # before shutdown drains more
    await service.close(timeout=5)
    return {
        "idle_lag_ms": idle_lag,
        "paced": steady,
        "burst": peak,
        "flushes": {"completed": len(done), "outcomes": done_outcomes, "duration_ms": percentiles_ms(done)},
        "pending_at_end": pending,
    }


class Databases:
    """A fresh database per scenario: an SQLite file, or a database on a PostgreSQL server kept for the run."""

    def __init__(self) -> None:
        self.folder = CACHE / "capture"
        self.folder.mkdir(parents=True, exist_ok=True)
        self._server: pg.PgServer | None = None

    def fresh(self, backend: str, name: str) -> Path | str:
        """An empty, migrated database (opened once here, so no process times the migration)."""
        location: Path | str
        if backend == "postgres":
            if self._server is None:
                self._server = pg.PgServer(self.folder / "pgdata")
            location = self._server.create(name, replace=True)
        else:
            location = self.folder / f"{name}.sqlite3"
            for suffix in ("", "-wal", "-shm"):
                Path(str(location) + suffix).unlink(missing_ok=True)
        open_storage(location, embedding_model="gemini-embedding-001", dimensions=768).close()
        return location

    def server_settings(self) -> dict[str, Any] | None:
        return self._server.settings() if self._server else None

    def close(self) -> None:
        if self._server is not None:
            self._server.close()


async def scenario(
    databases: Databases,
    backend: str,
    channels: int,
    *,
    rate: float,
    seconds: float,
    burst_count: int,
    latency: float,
    flushes: bool,
) -> dict[str, Any]:
    """One fresh database and stand-in; a paced phase then a burst, flushes running throughout."""
    location = databases.fresh(backend, f"capture_{channels}{'' if flushes else '_noflush'}")
    with StandInProcess(latency) as standin:
        settings = bench_settings(location, standin.base_url, flushes=flushes)
        figures = await run_capture(
            settings, Feed(channels), rate=rate, seconds=seconds, burst_count=burst_count
        )
        calls = standin.stats()
    return {
        "backend": backend,
        "channels": channels,
        "flushes_enabled": flushes,
        "gemini_latency_s": latency,
        **figures,
        "gemini_requests": calls["requests"],
    }


def _worker(conn: Any, settings: Settings, feed: Feed, kwargs: dict[str, Any], barrier: Any) -> None:
    """One bot process: its own memory service and store on the shared database, its shard of the feed."""
    result = asyncio.run(run_capture(settings, feed, sync=barrier.wait, **kwargs))
    conn.send(result)
    conn.close()


def processes_scenario(
    databases: Databases,
    backend: str,
    processes: int,
    channels: int,
    *,
    rate: float,
    seconds: float,
    burst_count: int,
    latency: float,
) -> dict[str, Any]:
    """`processes` bot processes on one fresh database, each capturing its channels' share of the feed.

    Each process is offered rate / processes and bursts burst_count / processes messages, so the
    database sees the same total load whatever the number of processes; one process also runs in a
    child, so both cases pay the same for being one.
    """
    location = databases.fresh(backend, f"capture_p{processes}")
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    kwargs = {"rate": rate / processes, "seconds": seconds, "burst_count": burst_count // processes}
    with StandInProcess(latency) as standin:
        settings = bench_settings(location, standin.base_url, flushes=True)
        pipes, children = [], []
        for shard in range(processes):
            parent, child = context.Pipe()
            feed = Feed(channels, shard=shard, shards=processes)
            children.append(context.Process(target=_worker, args=(child, settings, feed, kwargs, barrier)))
            pipes.append(parent)
        for process in children:
            process.start()
        each = [pipe.recv() for pipe in pipes]
        for process in children:
            process.join(timeout=30)
        calls = standin.stats()

    def combined(phase: str) -> int:
        messages = sum(r[phase]["messages"] for r in each)
        span = max(r[phase]["durable_at"] for r in each) - min(r[phase]["started_at"] for r in each)
        return round(messages / span)

    return {
        "backend": backend,
        "processes": processes,
        "channels": channels,
        "gemini_latency_s": latency,
        "offered_per_second": rate,
        "paced_messages": sum(r["paced"]["messages"] for r in each),
        "paced_durable_per_second": combined("paced"),
        "burst_messages": sum(r["burst"]["messages"] for r in each),
        "burst_durable_per_second": combined("burst"),
        "flushes_completed": sum(r["flushes"]["completed"] for r in each),
        "pending_at_end": max(r["pending_at_end"] for r in each),
        "gemini_requests": calls["requests"],
        "each": each,
    }


def report(results: list[dict[str, Any]]) -> None:
    rows = []
    for r in results:
        p, b = r["paced"], r["burst"]
        rows.append(
            [
                r.get("backend", "sqlite"),
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
                "backend",
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

    fig, ax = plt.subplots(figsize=(4 + 1.4 * len(results), 4))
    labels = [
        f"{r.get('backend', 'sqlite')}\n{r['channels']} ch, flushes {'on' if r['flushes_enabled'] else 'off'}"
        for r in results
    ]
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


def report_processes(results: list[dict[str, Any]]) -> None:
    """One row per backend and number of processes: combined durable rates and the worst process's loop time."""
    rows = []
    for r in results:
        each = r["each"]
        rows.append(
            [
                r["backend"],
                r["processes"],
                r["paced_messages"],
                r["paced_durable_per_second"],
                max(e["paced"]["capture_ms"]["p50"] for e in each),
                max(e["paced"]["capture_ms"]["p99"] for e in each),
                max(e["paced"]["lag_ms"]["p99"] for e in each),
                r["burst_messages"],
                r["burst_durable_per_second"],
                max(e["burst"]["capture_ms"]["p99"] for e in each),
                r["flushes_completed"],
            ]
        )
    first = results[0]
    print(
        f"\nOne bot process against two on one database ({first['channels']} channels split between them, "
        f"{first['offered_per_second']:,.0f} msgs/s offered in all, Gemini stand-in at "
        f"{first['gemini_latency_s'] * 1000:.0f} ms); loop times are the slower process's"
    )
    print(
        table(
            [
                "backend",
                "processes",
                "msgs (paced)",
                "durable msg/s",
                "capture p50 ms",
                "capture p99 ms",
                "lag p99 ms",
                "msgs (burst)",
                "burst durable msg/s",
                "burst capture p99 ms",
                "flushes done",
            ],
            rows,
        )
    )


async def main_async(
    args: argparse.Namespace, backends: Sequence[str], databases: Databases
) -> list[dict[str, Any]]:
    cases = [(1, True), (50, True), (50, False)]
    results = []
    for backend in backends:
        for channels, flushes in cases:
            print(f"{backend}: {channels} channel(s), flushes {'on' if flushes else 'off'} ...", flush=True)
            results.append(
                await scenario(
                    databases,
                    backend,
                    channels,
                    rate=args.rate,
                    seconds=args.seconds,
                    burst_count=args.burst,
                    latency=args.latency,
                    flushes=flushes,
                )
            )
    return results


def run_processes(
    args: argparse.Namespace, backends: Sequence[str], databases: Databases
) -> list[dict[str, Any]]:
    results = []
    for backend in backends:
        for processes in args.processes:
            print(f"{backend}: {processes} process(es), {args.channels} channels ...", flush=True)
            results.append(
                processes_scenario(
                    databases,
                    backend,
                    processes,
                    args.channels,
                    rate=args.rate,
                    seconds=args.seconds,
                    burst_count=args.burst,
                    latency=args.latency,
                )
            )
    return results


@contextmanager
def opened() -> Iterator[Databases]:
    databases = Databases()
    try:
        yield databases
    finally:
        databases.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 s paced, 5,000-message burst")
    parser.add_argument("--rate", type=float, default=2000.0, help="offered messages per second (in all)")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of the paced phase")
    parser.add_argument("--burst", type=int, default=20_000, help="messages in the burst phase (in all)")
    parser.add_argument("--latency", type=float, default=0.3, help="Gemini stand-in latency, seconds")
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgres", "both"),
        default="both" if pg.available() else "sqlite",
        help="where the memory is stored (default: both when pgserver is installed)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        nargs="+",
        choices=(1, 2),
        help="compare bot processes on one database instead (e.g. --processes 1 2)",
    )
    parser.add_argument("--channels", type=int, default=50, help="channels of the --processes feed")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.burst = 3.0, 5000
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    with opened() as databases:
        if args.processes:
            results = run_processes(args, backends, databases)
        else:
            results = asyncio.run(main_async(args, backends, databases))
        server = databases.server_settings()
    data = {"benchmark": "capture", "machine": machine(), "postgres": server, "results": results}
    if args.processes:
        report_processes(results)
        print(f"\nwrote {write_json('capture_processes', data, partial=args.quick)}")
        return
    report(results)
    print(f"\nwrote {write_json('capture', data, partial=args.quick)}")
    if not args.quick:
        plot(results, DOCS / "capture.png")
        print(f"wrote {DOCS / 'capture.png'}")


if __name__ == "__main__":
    main()
