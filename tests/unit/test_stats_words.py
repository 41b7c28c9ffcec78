"""`stats` in sentences: nothing to count yet is said, an earlier version's usage is still read, and the
models that ran are named; never a `null` or raw JSON."""

from __future__ import annotations

from typing import Any

from bot.cli.maintenance import stats_lines

USED = {"extract": {"calls": 3, "prompt_tokens": 1200, "output_tokens": 40, "errors": 1, "retries": 2}}


def stats(usage: dict[str, Any] | None, active: int = 0) -> dict[str, Any]:
    return {
        "facts": {"active": active, "merged": 0, "invalidated": 0},
        "people": 1 if active else 0,
        "scopes": 1 if active else 0,
        "pending_messages": 0,
        "model_usage_last_run": usage,
        "selection": "asked in every flush",
    }


def test_an_empty_database_is_said_in_sentences() -> None:
    assert stats_lines(stats(None), selects=False) == [
        "No facts yet: the bot has learned nothing in this database.",
        "No messages waiting to be read.",
        "Model use: no run of the bot recorded yet (the bot records its model use when it stops).",
    ]


def test_the_last_run_names_its_models_and_an_earlier_versions_counters_are_still_read() -> None:
    run = {
        "provider": "OpenAI",
        "embeddings_provider": "OpenAI",
        "models": {"chat": "gpt-4o-mini", "memory": "gpt-4o-mini", "embeddings": "text-embedding-3-small"},
        "purposes": USED,
    }
    lines = stats_lines(stats(run, active=2), selects=True)
    assert lines == [
        "Facts: 2 active, 0 merged, 0 invalidated, about 1 person in 1 scope.",
        "No messages waiting to be read.",
        "Model use in the bot's last run: Models: gpt-4o-mini (chat and memory) and "
        "text-embedding-3-small (embeddings), on OpenAI.",
        "  extract: 3 calls, 1,200 tokens in, 40 out, 1 error, 2 retries",
        "Line selection (EXTRACTION_MODE=select): asked in every flush.",
    ]
    legacy = stats_lines(stats({"purposes": USED}), selects=False)
    assert (
        legacy[2] == "Model use in the bot's last run: (recorded by an earlier version, without its models)"
    )
    assert legacy[3].startswith("  extract: 3 calls")
    assert not any("null" in line or "{" in line for line in lines + legacy)
