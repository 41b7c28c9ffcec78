"""bench/recall_scale.py writes the tables it prints into its results file, so docs can be checked."""

from __future__ import annotations

from typing import Any

import pytest

from bench import recall_scale
from bench.common import table


def figures(p50: float, p99: float) -> dict[str, float]:
    return {"p50": p50, "p99": p99, "exact_pct": 100.0}


def result(n: int, *, seed: bool, postgres: bool) -> dict[str, Any]:
    store = {part: figures(0.5, 1.25) for part in recall_scale.PARTS}
    build = {"file_bytes": 3_927_000 * n // 1000, "bytes_per_fact": 3927, "inserts_per_second": 5000}
    out: dict[str, Any] = {"n": n, "store": store, "build": {"store": build}}
    if seed:
        variant = dict(zip(recall_scale.SEED_COLUMNS, (100, 5, 5, 40.0, 80.5, 12.0, 3.0, 85.0), strict=True))
        out["seed"] = {"queries": 100, "k5": variant}
        out["build"]["seed"] = build
    if postgres:
        pg_build = {"database_bytes": 6e9, "bytes_per_fact": 6000, "add_facts_per_second": 900}
        pg_build |= {"copy_per_second": 30000, "build_seconds": 90.0}
        out["postgres"] = {"store": store, "build": pg_build}
    return out


@pytest.mark.parametrize(("seed", "postgres"), [(True, False), (False, False), (False, True)])
def test_every_printed_table_is_returned_cell_for_cell(
    capsys: pytest.CaptureFixture[str], seed: bool, postgres: bool
) -> None:
    tables = recall_scale.report([result(100_000, seed=seed, postgres=postgres)])
    printed = capsys.readouterr().out
    assert tables, "a run prints at least one table"
    for t in tables:  # each as printed: its title, then the same table rendered from the stored cells
        assert f"{t['title']}\n{table(t['headers'], t['rows'])}" in printed
    builds = next(t for t in tables if "B/fact" in " ".join(t["headers"]))
    assert "3,927" in builds["rows"][0]
