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


def test_the_engine_imports_no_storage_model_client_chat_discord_or_settings() -> None:
    forbidden = (
        "bot.storage",
        "bot.llm",
        "bot.chat",
        "bot.config",
        "sqlite3",
        "sqlean",
        "sqlite_vec",
        "psycopg",
        *MODEL_SDKS,
        "discord",
    )
    for path in sorted((ROOT / "bot" / "memory").rglob("*.py")):  # its prompts/ too
        wrong = {m for m in imports_of(path) if m.startswith(forbidden)}
        assert wrong == set(), path.name


MODEL_SDKS = ("google", "openai")  # google-genai is imported as google.genai
ADAPTERS = {"gemini": "google", "openai_compat": "openai"}  # provider adapter (module or package) -> its SDK
FRONT_END_MODULES = ("bot.discord_bot", "bot.mcp", "bot.terminal", "bot.cli")


def uses(module: str, sdk: str) -> bool:
    return module == sdk or module.startswith(sdk + ".")


def adapter_of(path: Path) -> str | None:
    """The provider adapter a file of bot/llm/ belongs to (its module, or its package), None when shared."""
    inside = path.relative_to(ROOT / "bot" / "llm").with_suffix("").parts
    return inside[0] if inside[0] in ADAPTERS else None


def test_the_chat_speaks_to_ports_and_memory_only() -> None:
    """The reply every front-end calls, its prompts and its tool rounds: no discord, no model SDK and no
    model adapter (it is handed the one app.py opens), no settings, no storage."""
    forbidden = (
        "bot.storage",
        "bot.config",
        "bot.llm",
        "bot.app",
        *FRONT_END_MODULES,
        *MODEL_SDKS,
        "discord",
    )
    chat = sorted((ROOT / "bot" / "chat").glob("*.py"))
    assert {p.name for p in chat} >= {"reply.py", "tool_rounds.py", "prompts.py"}
    for path in chat:
        wrong = {m for m in imports_of(path) if m.startswith(forbidden)}
        assert wrong == set(), path.name


def test_what_the_providers_share_speaks_to_no_sdk_and_no_adapter() -> None:
    """Retries, pace, turns, usage and reading answers: the same for every provider, so no SDK, no
    adapter, and nothing above the model side (the chat, settings, storage, front-ends)."""
    adapters = tuple(f"bot.llm.{name}" for name in ADAPTERS)
    forbidden = (
        "bot.storage",
        "bot.config",
        "bot.chat",
        "bot.app",
        *adapters,
        *FRONT_END_MODULES,
        *MODEL_SDKS,
        "discord",
    )
    shared = [p for p in sorted((ROOT / "bot" / "llm").rglob("*.py")) if adapter_of(p) is None]
    assert {p.name for p in shared} >= {"retry.py", "answers.py", "usage.py", "schedule.py", "pace.py"}
    for path in shared:
        wrong = {m for m in imports_of(path) if m.startswith(forbidden)}
        assert wrong == set(), path.name


def test_only_the_model_adapters_import_a_model_sdk() -> None:
    """google-genai and openai are imported in bot/llm/ only, each by its own adapter."""
    llm = ROOT / "bot" / "llm"
    checked = 0
    for path in sorted((ROOT / "bot").rglob("*.py")):
        own = adapter_of(path) if path.is_relative_to(llm) else None
        for sdk in MODEL_SDKS:
            if own is None or ADAPTERS[own] != sdk:
                assert not any(uses(m, sdk) for m in imports_of(path)), (path, sdk)
        checked += 1
    assert checked > 100


def test_the_settings_know_the_providers_only_through_their_records() -> None:
    """config.py reads bot/llm/providers.py, which imports no adapter, no SDK and not the settings (an
    adapter is imported by name when its client opens): choosing a provider never loads an SDK, and a
    third provider needs no edit here."""
    from_llm = {m for m in imports_of(ROOT / "bot" / "config.py") if m.startswith("bot.llm")}
    # `from bot.llm import providers` reads as the package and its module
    assert {".".join(m.split(".")[:3]) for m in from_llm} - {"bot.llm"} == {"bot.llm.providers"}
    records = imports_of(ROOT / "bot" / "llm" / "providers.py")
    assert not {m for m in records if m.startswith(("bot.", *MODEL_SDKS))}


def test_each_provider_adapter_imports_its_sdk() -> None:
    """The check above would pass with an adapter that lost its SDK; each one speaks to its own."""
    for name, sdk in ADAPTERS.items():
        paths = [*(ROOT / "bot" / "llm").glob(f"{name}.py"), *(ROOT / "bot" / "llm" / name).glob("*.py")]
        assert any(uses(m, sdk) for path in paths for m in imports_of(path)), name


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
SHARED_WITH_MCP = {"bot.discord_bot.audience", "bot.discord_bot.adminlog"}
# What bot/discord_rest.py (a server's permissions over REST, for mcp and web) borrows of the Discord
# front-end: the audience rule and the API address (point_discord_at)
SHARED_WITH_DISCORD_REST = {"bot.discord_bot.audience", "bot.discord_bot.client"}


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
    """Four front-ends over one engine: on 2026-11-28 (`rooms_and_arrows()`) 13 rooms and 36 arrows, the
    chat in a room of its own between them (12 and 34 while it lived in llm/); on 2026-11-26 12 rooms and
    32 arrows, 11 and 31 without __main__ (the door); before the Discord front-end had a package, 18 and 54."""
    rooms, arrows = rooms_and_arrows()
    assert rooms >= FRONT_ENDS | {"app", "chat", "config", "llm", "memory", "storage"}
    assert not {"client", "runner", "cogs", "adminlog", "audience", "attachments", "discord_text"} & rooms
    graph = {room: {to for source, to in arrows if source == room} for room in rooms}
    TopologicalSorter(
        graph
    ).prepare()  # raises CycleError when two rooms import each other, however far round
    for below in ("memory", "storage", "llm", "chat", "app", "config"):
        assert not graph[below] & FRONT_ENDS, below
    assert graph["chat"] <= {"memory", "gist"}  # the engine's ports and use cases, never an adapter
    assert "chat" not in graph["llm"] | graph["memory"]  # the adapters and the engine serve the chat
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


def test_mcp_borrows_of_the_discord_front_end_only_the_audience_rule_and_the_admin_log() -> None:
    """An MCP session in a server judges readers by the bot's own rule and writes to the bot's admin log;
    it reads the server through bot/discord_rest.py."""
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


MAX_MODULE_LINES = 600


def test_a_module_over_600_lines_says_in_its_docstring_why_its_one_job_needs_them() -> None:
    """A long module is usually several jobs; the few whose one job needs the length say so ("Its
    length: ..."), and a module that grows past the bound without that sentence fails here."""
    long_without_reason = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES and "Its length:" not in (
            ast.get_docstring(ast.parse(text)) or ""
        ):
            long_without_reason.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
    assert long_without_reason == []


def test_the_web_front_end_is_a_room_of_its_own_that_only_its_command_starts() -> None:
    """The dashboard (bot/web/) calls the engine through app.py, imports no other front-end, and only
    `python -m bot web` (bot/cli/web.py) imports it; nothing below the front-ends imports it."""
    rooms, arrows = rooms_and_arrows()
    assert "web" in rooms and "http_serving" in rooms
    graph = {room: {to for source, to in arrows if source == room} for room in rooms}
    assert graph["web"] & (FRONT_ENDS | {"storage", "llm", "chat"}) == set()
    assert {source for source, to in arrows if to == "web"} == {"cli"}
    assert graph["http_serving"] == set()  # a leaf: mcp and web serve HTTP through it
    importing = [
        p.name
        for p in (ROOT / "bot" / "cli").glob("*.py")
        if any(m.startswith("bot.web") for m in imports_of(p))
    ]
    assert importing == ["web.py"]


def test_the_rest_view_of_a_server_is_shared_by_mcp_and_web_and_borrows_only_the_audience_rule() -> None:
    """bot/discord_rest.py reads a server's permissions over REST for the two front-ends that run without
    the gateway (mcp, web): of the Discord front-end it borrows only the audience rule and the API
    address, so the bot's rule is judged unchanged and neither front-end imports the other."""
    rooms, arrows = rooms_and_arrows()
    assert "discord_rest" in rooms
    assert {source for source, to in arrows if to == "discord_rest"} == {"mcp", "web", "cli"}
    graph = {room: {to for source, to in arrows if source == room} for room in rooms}
    assert graph["discord_rest"] & (FRONT_ENDS - {"discord_bot"}) == set()
    assert "web" not in graph["discord_rest"]
    borrowed = {
        ".".join(m.split(".")[:3])
        for m in imports_of(ROOT / "bot" / "discord_rest.py")
        if m.startswith("bot.discord_bot.")
    }
    assert borrowed == SHARED_WITH_DISCORD_REST
