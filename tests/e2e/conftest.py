"""The end-to-end worlds run on both backends: `world_database` hands each world test its database."""

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
