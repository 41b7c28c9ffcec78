"""What a storage backend is to the rest of the package: how to open it, and how to read its errors."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bot.memory.ports import Storage


class Opener(Protocol):
    def __call__(
        self, location: str, /, *, embedding_model: str, dimensions: int, allow_model_change: bool = False
    ) -> Storage: ...


class Describer(Protocol):
    def __call__(self, location: str, exc: BaseException, /) -> str: ...


@dataclass(frozen=True)
class Backend:
    """One storage implementation: how to open it, and how to read its driver's errors."""

    name: str
    open: Opener
    errors: tuple[type[Exception], ...]  # the driver's error bases: any database failure
    row_errors: tuple[type[Exception], ...]  # what a statement raises because of its values
    describe: Describer  # one line saying what is wrong and what to do

    def exists(self, location: str) -> bool:
        """Whether there is a database to read (a server database always is: connecting tells)."""
        return self.name != "SQLite" or Path(location).exists()
