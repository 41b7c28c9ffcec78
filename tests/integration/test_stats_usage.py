"""The bot's last run's model usage, as `Maintenance.stats` reads it on both backends: the provider and
models it ran on, and a database of an earlier version, whose counters are under `gemini_usage` whatever
the provider ran."""

from __future__ import annotations

import json
from pathlib import Path

from bot.app import open_maintenance
from bot.config import Settings


async def test_stats_read_the_run_under_model_usage_and_an_earlier_versions_gemini_usage(
    settings: Settings, database: Path | str
) -> None:
    counters = {"extract": {"calls": 2, "errors": 0}}
    memory = await open_maintenance(settings)
    try:
        assert (await memory.stats())["model_usage_last_run"] is None
        await memory.store.call(lambda s: s.set_state("gemini_usage", json.dumps(counters)))
        assert (await memory.stats())["model_usage_last_run"] == {"purposes": counters}
        run = {"provider": "OpenAI", "models": {"chat": "gpt-4o-mini"}, "purposes": counters}
        await memory.store.call(lambda s: s.set_state("model_usage", json.dumps(run)))
        assert (await memory.stats())["model_usage_last_run"] == run
    finally:
        await memory.close()
