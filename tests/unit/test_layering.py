"""The engine owns its ports and imports no adapter; the storage package is layered without cycles."""

from __future__ import annotations

import ast
import inspect
from graphlib import TopologicalSorter
from pathlib import Path

from bot.memory.ports import Storage
from bot.storage import Store

ROOT = Path(__file__).resolve().parents[2]


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_the_engine_imports_no_storage_model_client_discord_or_settings() -> None:
    forbidden = (
        "bot.storage",
        "bot.llm",
        "bot.config",
        "sqlite3",
        "sqlean",
        "sqlite_vec",
        "google",
        "discord",
    )
    for path in sorted((ROOT / "bot" / "memory").glob("*.py")):
        wrong = {m for m in imports_of(path) if m.startswith(forbidden)}
        assert wrong == set(), path.name


def test_storage_knows_only_the_engines_models_ports_and_text() -> None:
    allowed = {"bot.memory.models", "bot.memory.ports", "bot.memory.text"}
    for path in sorted((ROOT / "bot" / "storage").glob("*.py")):
        wrong = {m for m in imports_of(path) if m.startswith("bot.") and not m.startswith("bot.storage")}
        assert wrong <= allowed, path.name


def test_the_storage_modules_import_each_other_without_a_cycle() -> None:
    graph = {
        path.stem: {m.split(".")[2] for m in imports_of(path) if m.startswith("bot.storage.")}
        for path in (ROOT / "bot" / "storage").glob("*.py")
        if path.stem != "__init__"
    }
    order = list(TopologicalSorter(graph).static_order())  # raises CycleError on a cycle
    assert order.index("connection") < order.index("store") < order.index("worker")


def test_the_store_has_every_method_of_the_storage_port_with_the_same_signature() -> None:
    methods = [
        n for n, member in vars(Storage).items() if inspect.isfunction(member) and not n.startswith("_")
    ]
    assert "apply_flush" in methods and "knn" in methods
    for name in methods:
        assert inspect.signature(getattr(Storage, name)) == inspect.signature(getattr(Store, name)), name
