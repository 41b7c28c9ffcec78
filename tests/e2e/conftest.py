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
    on_postgres = (
        "world_database" in request.fixturenames and request.getfixturevalue("backend") == "postgres"
    )
    if request.param == "openai" and on_postgres:
        pytest.skip("the OpenAI provider's flows run on SQLite (storage does not depend on the model)")
    world.model = request.param
    yield request.param
    world.model = "gemini"
