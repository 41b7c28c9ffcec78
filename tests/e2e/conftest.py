"""The end-to-end worlds run on both backends: `world_database` hands each world test its database; the
main flows also run on both model providers (`world_model`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import world


@pytest.fixture
def world_database(database: Path | str) -> Iterator[Path | str]:
    """Worlds opened by this test use `database` (SQLite file or PostgreSQL URL, by the `backend` param)."""
    world.database = database
    yield database
    world.database = None


@pytest.fixture(params=["gemini", "openai"])
def world_model(request: pytest.FixtureRequest) -> Iterator[str]:
    """Worlds opened by this test run their bot on this model provider. The OpenAI variant runs on
    SQLite only: storage is the same code whichever model answers, and the suite's time stays in check."""
    world.model = request.param
    yield request.param
    world.model = "gemini"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The OpenAI variant of a world test is not collected on PostgreSQL (see `world_model`): never
    generated, rather than skipped."""
    kept, dropped = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        on_both = params.get("world_model") == "openai" and params.get("backend") == "postgres"
        (dropped if on_both else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
