"""The package declares what the bot imports, no more, with upper bounds where a major version may break it."""

from __future__ import annotations

import ast
import re
import tomllib
from fnmatch import fnmatch
from importlib.metadata import packages_distributions, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPENDENCIES: list[str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def name_of(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower()


def imported_top_level_modules() -> set[str]:
    modules: set[str] = set()
    for path in (ROOT / "bot").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules


def test_every_declared_dependency_is_imported_by_the_bot() -> None:
    distributions = packages_distributions()
    used = {d.lower() for m in imported_top_level_modules() for d in distributions.get(m, [])}
    assert {name_of(d) for d in DEPENDENCIES} - used == set()


def test_the_discord_and_gemini_clients_stop_below_their_next_major_version() -> None:
    for name in ("discord.py", "google-genai"):
        [requirement] = [d for d in DEPENDENCIES if name_of(d) == name]
        next_major = int(version(name).split(".")[0]) + 1
        assert f"<{next_major}" in requirement.replace(" ", ""), requirement


def test_every_file_the_bot_reads_from_its_package_is_declared_package_data() -> None:
    """The migrations' .sql files ship in the wheel only if pyproject.toml names them."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    data = [
        path for path in (ROOT / "bot").rglob("*") if path.is_file() and path.suffix not in {".py", ".pyc"}
    ]
    assert data, "the migrations folders hold .sql files"
    for path in data:
        package = path.parent
        while not (package / "__init__.py").exists():
            package = package.parent
        name = ".".join(package.relative_to(ROOT).parts)
        inside = path.relative_to(package).as_posix()
        assert any(fnmatch(inside, pattern) for pattern in declared.get(name, [])), (
            f"{path} is not package data"
        )
