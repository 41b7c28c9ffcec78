"""Helpers shared by the benchmarks: paths, percentiles, machine facts, tables and JSON output."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
RESULTS = ROOT / "bench" / "results"
DOCS = ROOT / "docs"


def percentiles_ms(samples_s: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99/mean/max in milliseconds of samples given in seconds (nearest-rank percentiles)."""
    if not samples_s:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0, "max": 0.0, "samples": 0}
    ordered = sorted(samples_s)

    def rank(q: float) -> float:
        index = max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 100)) - 1))
        return ordered[index] * 1000

    return {
        "p50": round(rank(50), 4),
        "p95": round(rank(95), 4),
        "p99": round(rank(99), 4),
        "mean": round(sum(ordered) / len(ordered) * 1000, 4),
        "max": round(ordered[-1] * 1000, 4),
        "samples": len(ordered),
    }


def machine() -> dict[str, Any]:
    """Cores, memory, CPU model and the versions that matter for these figures."""
    cpu = platform.processor() or platform.machine()
    memory_gib = 0.0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory_gib = round(int(line.split()[1]) / 1024**2, 1)
                break
    except OSError:
        pass
    versions: dict[str, str] = {"python": platform.python_version()}
    try:
        from bot.storage.sqlite.connection import connect

        conn = connect(":memory:")
        versions["sqlite"], versions["sqlite_vec"] = conn.execute(
            "SELECT sqlite_version(), vec_version()"
        ).fetchone()
        conn.close()
    except Exception:
        versions["sqlite"] = sqlite3.sqlite_version
    return {
        "cores": os.cpu_count(),
        "affinity_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": memory_gib,
        "cpu": cpu,
        "os": f"{platform.system()} {platform.release()}",
        **versions,
    }


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with right-aligned columns, for printing."""
    cells = [[str(h) for h in headers], *[[_cell(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def printed_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """Print a titled table and return it as a results file keeps it: each cell as printed, so that a
    figure quoted in the docs can be checked against the run that printed it."""
    print(f"\n{title}")
    print(table(headers, rows))
    return {"title": title, "headers": list(headers), "rows": [[_cell(v) for v in row] for row in rows]}


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def write_json(name: str, data: dict[str, Any], *, partial: bool = False) -> Path:
    """Write bench/results/<name>.json (<name>.partial.json for a --quick or reduced run); return its path.

    A partial run must not overwrite the figures that docs/benchmarks.md quotes. Every file says when
    it was written and the load average then (`written`), so a figure quoted from it names its run.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}{'.partial' if partial else ''}.json"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    written = {"written": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_1_5_15": load}}
    path.write_text(json.dumps({**written, **data}, indent=2, sort_keys=False) + "\n")
    return path


def ratio(slow: float, fast: float) -> float:
    """slow / fast, or 0 when `fast` is zero."""
    return round(slow / fast, 1) if fast else 0.0
