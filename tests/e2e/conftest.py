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
    """Worlds opened by this test run their bot on this model provider (on both backends, like the rest)."""
    world.model = request.param
    yield request.param
    world.model = "gemini"
