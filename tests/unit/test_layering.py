"""The engine owns its ports and imports no adapter; the storage package is layered without cycles."""

from __future__ import annotations

import ast
import inspect
from graphlib import TopologicalSorter
from pathlib import Path

import pytest

from bot.discord_bot.client import COGS
from bot.memory.ports import Storage
from bot.storage.postgres import Store as PostgresStore
from bot.storage.sqlite import Store as SqliteStore

ROOT = Path(__file__).resolve().parents[2]


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)  # and what may be submodules (`from bot.storage.sqlite import backend`)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_the_engine_imports_no_storage_model_client_discord_or_settings() -> None:
    forbidden = (
        "bot.storage",
        "bot.llm",
        "bot.config",
        "sqlite3",
        "sqlean",
        "sqlite_vec",
        "psycopg",
        "google",
        "discord",
    )
    for path in sorted((ROOT / "bot" / "memory").glob("*.py")):
        wrong = {m for m in imports_of(path) if m.startswith(forbidden)}
        assert wrong == set(), path.name


ADAPTERS = {"gemini.py": "google", "openai_compat.py": "openai"}  # provider adapter -> its SDK


def test_the_chats_use_case_speaks_to_ports_and_memory_only() -> None:
    """The reply both front-ends call, its prompts and tool rounds, and what the providers share: no
    discord, no model SDK (only the provider adapters speak to theirs), no settings, no storage."""
    adapters = tuple(f"bot.llm.{name.removesuffix('.py')}" for name in ADAPTERS)
    forbidden = (
        "bot.storage",
        "bot.config",
        *adapters,
        "bot.discord_bot",
        "bot.mcp",
        "bot.terminal",
        "bot.cli",
        *ADAPTERS.values(),
        "discord",
    )
    chat = [p for p in sorted((ROOT / "bot" / "llm").glob("*.py")) if p.name not in ADAPTERS]
    assert {p.name for p in chat} >= {"reply.py", "tool_rounds.py", "prompts.py", "retry.py", "answers.py"}
    for path in chat:
        wrong = {m for m in imports_of(path) if m.startswith(forbidden)}
        assert wrong == set(), path.name


def test_each_provider_adapter_is_the_only_user_of_its_sdk() -> None:
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for adapter, sdk in ADAPTERS.items():
            if path.name != adapter:
                assert not any(m == sdk or m.startswith(sdk + ".") for m in imports_of(path)), (path, sdk)


def test_storage_knows_only_the_engines_models_ports_and_text() -> None:
    allowed = ("bot.memory.models", "bot.memory.ports", "bot.memory.text")
    for path in sorted((ROOT / "bot" / "storage").rglob("*.py")):
        wrong = {
            m
            for m in imports_of(path)
            if m.startswith("bot.") and not m.startswith(("bot.storage", *allowed))
        }
        assert wrong == set(), path.name


def test_the_storage_modules_import_each_other_without_a_cycle() -> None:
    base = ROOT / "bot" / "storage"

    def name(path: Path) -> str:
        return ".".join(path.relative_to(base).with_suffix("").parts)

    modules = {name(path): path for path in base.rglob("*.py") if path.stem != "__init__"}
    graph = {
        module: {m.removeprefix("bot.storage.") for m in imports_of(path)} & modules.keys()
        for module, path in modules.items()
    }
    order = list(TopologicalSorter(graph).static_order())  # raises CycleError on a cycle
    for backend in ("sqlite", "postgres"):
        assert order.index("sql.store") < order.index(f"{backend}.store")
        assert order.index(f"{backend}.connection") < order.index(f"{backend}.store")
        assert order.index(f"{backend}.store") < order.index(f"{backend}.backend") < order.index("locations")
    assert order.index("locations") < order.index("worker")


def test_the_backends_share_their_sql_and_import_nothing_of_each_other() -> None:
    base = ROOT / "bot" / "storage"
    for path in (base / "sql").rglob("*.py"):
        assert not any(m.startswith(("bot.storage.sqlite", "bot.storage.postgres")) for m in imports_of(path))
    for ours, theirs in (("sqlite", "postgres"), ("postgres", "sqlite")):
        for path in (base / ours).rglob("*.py"):
            assert not any(m.startswith(f"bot.storage.{theirs}") for m in imports_of(path)), path


def test_sqlite_users_never_import_the_postgresql_driver() -> None:
    """bot.storage and the SQLite backend import psycopg nowhere; locations imports it only for a URL."""
    base = ROOT / "bot" / "storage"
    for path in [*base.glob("*.py"), *(base / "sql").rglob("*.py"), *(base / "sqlite").rglob("*.py")]:
        top = {m for m in imports_of(path) if not m.startswith("bot.storage.postgres")}
        assert not any(m.startswith("psycopg") for m in top), path.name


@pytest.mark.parametrize("store", [SqliteStore, PostgresStore], ids=["sqlite", "postgres"])
def test_the_store_has_every_method_of_the_storage_port_with_the_same_signature(store: type) -> None:
    methods = [
        n for n, member in vars(Storage).items() if inspect.isfunction(member) and not n.startswith("_")
    ]
    assert "apply_flush" in methods and "knn" in methods
    for name in methods:
        assert inspect.signature(getattr(Storage, name)) == inspect.signature(getattr(store, name)), name


def test_only_the_composition_root_opens_storage() -> None:
    """The CLI, the Discord client, its cogs and widgets reach memory through the engine's use cases."""
    outside = [
        p
        for p in sorted((ROOT / "bot").rglob("*.py"))
        if p.parts[-2] in ("bot", "cli", "discord_bot", "cogs", "ui", "mcp")
    ]
    assert len(outside) > 20
    for path in outside:
        if path.name != "app.py":
            assert not any(m.startswith("bot.storage") for m in imports_of(path)), path.name


FRONT_ENDS = {"discord_bot", "mcp", "terminal", "cli", "__main__"}  # the rooms a person or an agent enters by
SHARED_WITH_MCP = {"bot.discord_bot.audience", "bot.discord_bot.adminlog", "bot.discord_bot.client"}


def rooms_and_arrows() -> tuple[set[str], set[tuple[str, str]]]:
    """The house drawn from the imports: a room is a module or package directly under bot/, an arrow an
    import (at the top of a file or inside a function) from one room into another."""
    base = ROOT / "bot"
    rooms = {p.stem for p in base.glob("*.py")} | {p.parent.name for p in base.glob("*/__init__.py")}
    rooms.discard("__init__")
    arrows = set()
    for path in base.rglob("*.py"):
        source = path.relative_to(base).parts[0].removesuffix(".py")
        for module in imports_of(path):
            parts = module.split(".")
            if parts[0] == "bot" and len(parts) > 1 and parts[1] in rooms and parts[1] != source:
                arrows.add((source, parts[1]))
    return rooms, arrows


def test_the_house_has_its_front_ends_in_rooms_of_their_own_and_no_arrow_points_back() -> None:
    """Four front-ends over one engine: on 2026-11-26 (`rooms_and_arrows()`) 12 rooms and
    32 arrows, 11 and 31 without __main__ (the door); before the Discord front-end had a package, 18 and 54."""
    rooms, arrows = rooms_and_arrows()
    assert rooms >= FRONT_ENDS | {"app", "config", "llm", "memory", "storage"}
    assert not {"client", "runner", "cogs", "adminlog", "audience", "attachments", "discord_text"} & rooms
    graph = {room: {to for source, to in arrows if source == room} for room in rooms}
    TopologicalSorter(
        graph
    ).prepare()  # raises CycleError when two rooms import each other, however far round
    for below in ("memory", "storage", "llm", "app", "config"):
        assert not graph[below] & FRONT_ENDS, below
    assert graph["discord_bot"] & FRONT_ENDS == set()  # the Discord bot runs alone; the CLI starts it
    assert graph["mcp"] & FRONT_ENDS <= {"discord_bot", "terminal"}


# The CLI's modules that import another front-end, and which: each command module registers its own
# commands, so the one that starts a front-end is the one that imports it.
CLI_STARTS = {
    "run.py": {"bot.discord_bot", "bot.terminal"},  # `run` starts the Discord bot, `chat` the terminal chat
    "mcp.py": {"bot.mcp", "bot.terminal"},  # `mcp` serves bot/mcp/; --terminal: the chat's person, by name
    # `check --online` logs in as the bot does (the stand-in's API address, the words for a rejected
    # token) and starts nothing.
    "check.py": {"bot.discord_bot"},
}


def test_the_cli_imports_another_front_end_only_in_the_module_of_the_command_that_starts_it() -> None:
    others = ("bot.discord_bot", "bot.mcp", "bot.terminal")
    modules = sorted((ROOT / "bot" / "cli").glob("*.py"))
    assert {p.name for p in modules} >= {"__init__.py", "common.py", *CLI_STARTS}
    for path in modules:
        used = {
            front for front in others for m in imports_of(path) if m == front or m.startswith(front + ".")
        }
        assert used == CLI_STARTS.get(path.name, set()), path.name


def test_mcp_borrows_of_the_discord_front_end_only_the_audience_rule_the_admin_log_and_the_api_url() -> None:
    """An MCP session in a server judges readers by the bot's own rule and writes to the bot's admin log."""
    borrowed = set()
    for path in (ROOT / "bot" / "mcp").rglob("*.py"):
        borrowed |= {".".join(m.split(".")[:3]) for m in imports_of(path) if m.startswith("bot.discord_bot.")}
    assert borrowed == SHARED_WITH_MCP


def is_cog(path: Path) -> bool:
    """A cog module is one discord.py can load as an extension: it has a top-level `async def setup`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.AsyncFunctionDef) and node.name == "setup" for node in tree.body)


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_cogs_holds_only_cogs_and_the_client_loads_every_one() -> None:
    """Every module in cogs/ is a cog the client loads as an extension; what is not a cog (a helper, a
    view) lives beside cogs/."""
    modules = [
        p for p in sorted((ROOT / "bot" / "discord_bot" / "cogs").glob("*.py")) if p.stem != "__init__"
    ]
    assert [p.name for p in modules if not is_cog(p)] == []
    assert sorted(COGS) == sorted(module_name(p) for p in modules)


def test_no_cog_imports_another_cog_and_the_widgets_import_none() -> None:
    """A cog is loaded as an extension, which executes its module afresh: a module importing it would hold
    another copy (a constant patched in one is not the other's). So no module of bot/ imports a cog, not
    another cog and not ui/; what cogs share lives in discord_bot/ and its widgets in ui/."""
    cogs = {module_name(p) for p in (ROOT / "bot" / "discord_bot").rglob("*.py") if is_cog(p)}
    assert cogs >= {"bot.discord_bot.cogs.memory_commands", "bot.discord_bot.cogs.admin"}
    widgets = sorted((ROOT / "bot" / "discord_bot" / "ui").glob("*.py"))
    assert len(widgets) > 5 and not any(is_cog(p) for p in widgets)
    for path in sorted((ROOT / "bot").rglob("*.py")):
        assert imports_of(path) & cogs == set(), module_name(path)
