"""The operator CLI as a user runs it: `python -m bot ...` in a subprocess, Gemini stand-in on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from bot.memory.models import NewFact
from bot.storage import Store
from bot.storage.locations import open_storage
from bot.storage.postgres.schema import MIGRATIONS as POSTGRES_MIGRATIONS
from standins.discord import DiscordStandIn
from standins.discord.model import INTENT_GUILD_MEMBERS, INTENT_MESSAGE_CONTENT
from standins.gemini import GeminiStandIn

ROOT = Path(__file__).resolve().parents[2]


async def run_cli(
    *args: str,
    env: dict[str, str],
    cwd: Path,
    prefix: Sequence[str] = (),
    stdout: int | None = None,
    stdin: str | None = None,
) -> tuple[int, str, str]:
    """Run `python -m bot args...` (after `prefix`, e.g. setpriv); `stdout` replaces the captured pipe,
    `stdin` is typed into a pipe (then its end)."""
    proc = await asyncio.create_subprocess_exec(
        *prefix,
        sys.executable,
        "-m",
        "bot",
        *args,
        cwd=cwd,
        env=env,
        stdin=None if stdin is None else asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE if stdout is None else stdout,
        stderr=asyncio.subprocess.PIPE,
    )
    typed = None if stdin is None else stdin.encode()
    out, err = await asyncio.wait_for(proc.communicate(typed), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, (out or b"").decode(), err.decode()


def clean_env(**extra: str) -> dict[str, str]:
    """The process environment minus every bot setting, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("DISCORD_", "GEMINI_", "GOOGLE_", "DATABASE_", "OPENAI_", "MODEL_", "EMBEDDING_")
        )
    }
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


@pytest.fixture
def db_env(database: Path | str) -> dict[str, str]:
    """The one setting naming the test's database: DATABASE_URL for PostgreSQL, DATABASE_PATH for a file."""
    return {"DATABASE_URL": database} if isinstance(database, str) else {"DATABASE_PATH": str(database)}


@pytest.fixture
async def gemini() -> AsyncIterator[GeminiStandIn]:
    async with GeminiStandIn() as standin:
        yield standin


async def test_check_with_nothing_configured_names_both_secrets(tmp_path: Path) -> None:
    code, _, err = await run_cli(
        "check", env=clean_env(DATABASE_PATH=str(tmp_path / "db.sqlite3")), cwd=tmp_path
    )
    assert code == 1
    assert "DISCORD_TOKEN is not set" in err and "GEMINI_API_KEY is not set" in err


async def test_check_json_with_a_malformed_setting_still_prints_a_verdict(tmp_path: Path) -> None:
    env = clean_env(DISCORD_TOKEN="t", GEMINI_API_KEY="k", EMBEDDING_DIMENSIONS="abc")
    code, out, err = await run_cli("check", "--json", env=env, cwd=tmp_path)
    report = json.loads(out)
    assert code == 1 and report["ok"] is False
    assert report["problems"] == [
        "EMBEDDING_DIMENSIONS='abc' is not valid: expected a positive integer such as 768"
    ]
    assert "EMBEDDING_DIMENSIONS" in err


async def test_check_with_dummy_values_reports_the_database_ok(tmp_path: Path) -> None:
    env = clean_env(
        DISCORD_TOKEN="dummy-discord-token-123456",
        GEMINI_API_KEY="dummy-gemini-key-abcdef",
        DATABASE_PATH=str(tmp_path / "new" / "memory.sqlite3"),
    )
    code, out, err = await run_cli("check", env=env, cwd=tmp_path)
    assert code == 0, err
    assert "database OK" in out and "sqlite-vec" in out
    code, out, _ = await run_cli("check", "--json", env=env, cwd=tmp_path)
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["database"]["fts5"] is True
    assert report["database"]["backend"] == "SQLite"
    assert report["settings"]["DISCORD_TOKEN"] == "****3456" and "dummy-gemini" not in out
    assert (tmp_path / "new" / "memory.sqlite3").exists()


async def test_check_names_postgresql_and_never_shows_the_password(tmp_path: Path, postgres_url: str) -> None:
    url = postgres_url.replace(
        "postgres:@", "postgres:hunter2-secret@"
    )  # the test server trusts any password
    env = clean_env(DISCORD_TOKEN="dummy-discord-token-123456", GEMINI_API_KEY="k", DATABASE_URL=url)
    code, out, err = await run_cli("check", env=env, cwd=tmp_path)
    assert code == 0, err
    [line] = [line for line in out.splitlines() if line.startswith("database OK")]
    assert "PostgreSQL 16" in line and "pgvector" in line and "postgres:****@" in line
    code, out, err = await run_cli("check", "--json", env=env, cwd=tmp_path)
    database = json.loads(out)["database"]
    assert (
        database["backend"] == "PostgreSQL" and database["schema_version"] == POSTGRES_MIGRATIONS[-1].number
    )
    assert json.loads(out)["settings"]["DATABASE_URL"].startswith("postgresql://postgres:****@")
    assert "hunter2" not in out + err
    # A database that is not there: one line, still without the password.
    env["DATABASE_URL"] = url.replace("/test_", "/absent_")
    code, out, err = await run_cli("check", env=env, cwd=tmp_path)
    [problem] = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1 and "does not exist" in problem and "postgres:****@" in problem
    assert "hunter2" not in out + err


async def test_a_malformed_setting_is_named(tmp_path: Path) -> None:
    code, _, err = await run_cli("check", env=clean_env(EMBEDDING_DIMENSIONS="many"), cwd=tmp_path)
    assert code == 1 and "EMBEDDING_DIMENSIONS='many' is not valid" in err


def write_import(path: Path) -> None:
    lines = []
    topics = [
        "chess",
        "sailing",
        "baking",
        "climbing",
        "violin",
        "gardening",
        "astronomy",
        "pottery",
        "judo",
        "kites",
    ]
    for i in range(1000):
        person = i % 10
        scope = "guild:1" if (i // 10) % 2 == 0 else "guild:2"
        lines.append(
            json.dumps(
                {
                    "scope": scope,
                    "user_id": str(1000 + person),
                    "user_name": f"P{person}",
                    "text": f"P{person} enjoys {topics[person]} session {i} on weekends",
                }
            )
        )
    lines.insert(10, "{not json")
    lines.insert(20, json.dumps({"scope": "server:1", "user_id": "1", "text": "bad scope"}))
    lines.insert(30, json.dumps({"scope": "dm", "user_id": "1"}))
    lines.insert(40, "")
    path.write_text("\n".join(lines) + "\n")


async def test_import_then_recall_returns_the_right_persons_facts_only(
    tmp_path: Path, gemini: GeminiStandIn, db_env: dict[str, str]
) -> None:
    env = clean_env(GEMINI_API_KEY="k", GEMINI_BASE_URL=gemini.base_url, GEMINI_MAX_RETRIES="1", **db_env)
    data = tmp_path / "facts.jsonl"
    write_import(data)
    code, out, err = await run_cli("facts", "import", str(data), "--json", env=env, cwd=tmp_path)
    report = json.loads(out)
    assert code == 1  # some lines were bad ...
    assert report["imported"] == 1000 and report["read"] == 1000  # ... and every good one was imported
    assert [re.search(r"facts\.jsonl:(\d+): ", line)[1] for line in report["bad_lines"]] == ["11", "21", "31"]
    assert "facts.jsonl:11:" in err
    assert gemini.counters["embed"]["requests"] == 10  # batches of 100
    shown = [line for line in err.splitlines() if line.startswith("importing: ")]  # not a terminal: lines
    assert shown and all(" of 1,000 facts (" in line for line in shown)
    assert shown[-1].startswith("importing: 1,000 of 1,000 facts (100%), ") and "\r" not in err

    code, out, err = await run_cli(
        "recall",
        "--scope",
        "guild:1",
        "--user",
        "1003",
        "--query",
        "anyone up for climbing this weekend?",
        "--limit",
        "5",
        "--json",
        env=env,
        cwd=tmp_path,
    )
    assert code == 0, err
    answer = json.loads(out)
    [user] = answer["users"]
    assert user["user_id"] == "1003" and len(user["facts"]) == 5
    ids = [f["id"] for f in user["facts"]]
    code, out, _ = await run_cli(
        "facts", "list", "--scope", "guild:1", "--user", "1003", "--json", env=env, cwd=tmp_path
    )
    own = {f["id"] for f in json.loads(out)}
    assert len(own) == 50 and set(ids) <= own
    listed = {f["id"]: f["retrieval_count"] for f in json.loads(out)}
    assert all(listed[i] == 0 for i in ids)  # looking with the CLI does not count as the bot using them
    assert all(f["text"].startswith("P3 enjoys climbing") for f in user["facts"])
    assert answer["block"].startswith("<background_facts>")

    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps(
            {"scope": "guild:2", "user_ids": ["1001", "1005"], "query": "sailing or gardening on weekends"}
        )
        + "\n"
        + "not json\n"
        + json.dumps({"scope": "dm", "user_ids": ["1001"], "query": "anything"})
        + "\n"
    )
    embed_requests = gemini.counters["embed"]["requests"]
    code, out, err = await run_cli("recall", "--queries", str(queries), env=env, cwd=tmp_path)
    assert gemini.counters["embed"]["requests"] == embed_requests + 1  # both queries in one request
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and "q.jsonl:2:" in err
    assert [r.get("line") for r in rows] == [1, 2, 3]
    by_user = {u["user_id"]: u["facts"] for u in rows[0]["users"]}
    assert by_user["1001"] and all(f["text"].startswith("P1 ") for f in by_user["1001"])
    assert by_user["1005"] and all(f["text"].startswith("P5 ") for f in by_user["1005"])
    assert rows[2]["users"][0]["facts"] == []  # nothing was imported into DMs


async def import_three_dm_facts(
    tmp_path: Path, gemini: GeminiStandIn, db_env: dict[str, str] | None = None
) -> dict[str, str]:
    """Import three DM facts of user 7 through the CLI (into an SQLite file unless `db_env` says where);
    returns the environment used."""
    where = db_env or {"DATABASE_PATH": str(tmp_path / "m.sqlite3")}
    env = clean_env(GEMINI_API_KEY="k", GEMINI_BASE_URL=gemini.base_url, **where)
    data = tmp_path / "f.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"scope": "dm", "user_id": "7", "text": f"Seven likes {w}"})
            for w in ("tea", "jazz", "rain")
        )
    )
    assert (await run_cli("facts", "import", str(data), env=env, cwd=tmp_path))[0] == 0
    return env


async def test_facts_forget_and_stats(tmp_path: Path, gemini: GeminiStandIn, db_env: dict[str, str]) -> None:
    env = await import_three_dm_facts(tmp_path, gemini, db_env)
    code, out, _ = await run_cli(
        "facts", "list", "--scope", "dm", "--user", "7", "--json", env=env, cwd=tmp_path
    )
    first = json.loads(out)[0]["id"]
    code, out, err = await run_cli(
        "facts", "forget", "--scope", "dm", "--user", "8", "--id", str(first), env=env, cwd=tmp_path
    )
    assert code == 1 and f"no fact #{first} for user 8 in dm" in err
    code, out, _ = await run_cli(
        "facts", "forget", "--scope", "dm", "--user", "7", "--id", str(first), "--json", env=env, cwd=tmp_path
    )
    assert code == 0 and json.loads(out) == {"forgotten": 1}
    code, out, _ = await run_cli("stats", "--json", env=env, cwd=tmp_path)
    assert json.loads(out)["facts"]["active"] == 2
    assert json.loads(out)["selection"] == "asked in every flush"  # no counting model met yet
    code, out, _ = await run_cli(
        "facts", "forget", "--scope", "dm", "--user", "7", "--all", env=env, cwd=tmp_path
    )
    assert code == 0 and "forgot 2 fact(s)" in out
    code, _, err = await run_cli("facts", "list", "--scope", "nowhere", "--user", "7", env=env, cwd=tmp_path)
    assert code == 2 and "invalid scope" in err


async def test_changing_the_embedding_dimension_requires_reembed(
    tmp_path: Path, gemini: GeminiStandIn, db_env: dict[str, str]
) -> None:
    env = await import_three_dm_facts(tmp_path, gemini, db_env)
    env["EMBEDDING_DIMENSIONS"] = "256"
    code, _, err = await run_cli(
        "recall", "--scope", "dm", "--user", "7", "--query", "tea", env=env, cwd=tmp_path
    )
    assert code == 1 and "python -m bot reembed" in err
    code, out, err = await run_cli("reembed", "--batch", "2", "--json", env=env, cwd=tmp_path)
    assert code == 0, err
    assert json.loads(out)["reembedded"] == 3
    assert "re-embedding: 3 of 3 texts (100%)" in err  # the total, then the final count
    code, out, err = await run_cli(
        "recall", "--scope", "dm", "--user", "7", "--query", "tea", "--json", env=env, cwd=tmp_path
    )
    assert code == 0, err
    assert json.loads(out)["users"][0]["facts"][0]["text"] == "Seven likes tea"


async def test_export_then_import_on_another_instance_keeps_facts_and_where_they_were_learned(
    tmp_path: Path, gemini: GeminiStandIn, database: Path | str, db_env: dict[str, str]
) -> None:
    """Exported from an SQLite file, imported into the backend under test (PostgreSQL: a move)."""
    from bot.memory.models import NewFact, Origin
    from bot.storage import Store
    from tests.fakes import unit

    old = tmp_path / "old.sqlite3"
    store = Store.open(old, embedding_model="gemini-embedding-001", dimensions=768)
    said = {"m1": Origin("55", "44"), "m2": Origin("66")}
    store.add_facts(
        [
            NewFact(
                "guild:1",
                "7",
                "Seven",
                "Seven lives in Oslo",
                ["m1"],
                origins=said,
                embedding=unit(1.0, dims=768),
            ),
            NewFact(
                "guild:1",
                "7",
                "Seven",
                "Seven has asthma",
                ["m2"],
                origins=said,
                sensitive=True,
                embedding=unit(1.0, dims=768),
            ),
            NewFact("guild:1", "8", "Eight", "Eight plays go", [], embedding=unit(1.0, dims=768)),
            NewFact("guild:2", "7", "Seven", "Seven lives elsewhere", [], embedding=unit(1.0, dims=768)),
        ]
    )
    store.close()
    env = clean_env(GEMINI_API_KEY="k", GEMINI_BASE_URL=gemini.base_url, DATABASE_PATH=str(old))
    exported = tmp_path / "seven.jsonl"
    code, _, err = await run_cli(
        "facts",
        "export",
        "--scope",
        "guild:1",
        "--user",
        "7",
        "--output",
        str(exported),
        env=env,
        cwd=tmp_path,
    )
    assert code == 0, err
    assert "exported 2 fact(s)" in err
    assert len(exported.read_text().splitlines()) == 2

    new_env = {k: v for k, v in env.items() if k != "DATABASE_PATH"} | db_env
    code, out, err = await run_cli("facts", "import", str(exported), "--json", env=new_env, cwd=tmp_path)
    assert code == 0, err
    assert json.loads(out)["imported"] == 2
    moved = open_storage(database, embedding_model="gemini-embedding-001", dimensions=768)
    facts = {f.text: f for f in moved.list_facts("guild:1", "7")}
    moved.close()
    assert set(facts) == {"Seven lives in Oslo", "Seven has asthma"}
    assert facts["Seven lives in Oslo"].audience_keys == {"44"}  # a public thread of channel 44
    assert facts["Seven has asthma"].sensitive and facts["Seven has asthma"].audience_keys == {"66"}
    # Importing the same file again adds nothing.
    code, out, _ = await run_cli("facts", "import", str(exported), "--json", env=new_env, cwd=tmp_path)
    assert json.loads(out)["imported"] == 0


async def test_check_online_says_which_secret_is_wrong_in_one_line_each(tmp_path: Path) -> None:
    async with (
        GeminiStandIn(api_key="right-gemini-key") as gemini,
        DiscordStandIn(token="right-discord-token") as discord_standin,
    ):

        async def check(discord_token: str, gemini_key: str) -> tuple[int, str, str]:
            env = clean_env(
                DISCORD_TOKEN=discord_token,
                GEMINI_API_KEY=gemini_key,
                GEMINI_BASE_URL=gemini.base_url,
                DISCORD_API_BASE_URL=discord_standin.api_base,
                DATABASE_PATH=str(tmp_path / "memory.sqlite3"),
            )
            return await run_cli("check", "--online", env=env, cwd=tmp_path)

        code, out, err = await check("right-discord-token", "right-gemini-key")
        assert code == 0, err
        assert "Discord: OK" in out and "Gemini: OK" in out
        code, out, err = await check("wrong-discord-token", "wrong-gemini-key")
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 1 and len(errors) == 2
        assert "DISCORD_TOKEN" in errors[0] and "GEMINI_API_KEY" in errors[1]
        assert "wrong-" not in out + err
        code, out, err = await check("right-discord-token", "wrong-gemini-key")
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 1 and len(errors) == 1 and "GEMINI_API_KEY" in errors[0]
        assert "Discord: OK" in out


@pytest.mark.parametrize(
    ("refused", "named"),
    [
        (INTENT_MESSAGE_CONTENT, ["MESSAGE CONTENT INTENT"]),
        (INTENT_GUILD_MEMBERS, ["SERVER MEMBERS INTENT"]),
        (INTENT_MESSAGE_CONTENT | INTENT_GUILD_MEMBERS, ["MESSAGE CONTENT INTENT", "SERVER MEMBERS INTENT"]),
    ],
)
async def test_check_online_names_a_privileged_intent_switched_off(
    tmp_path: Path, refused: int, named: list[str]
) -> None:
    async with DiscordStandIn(token="right-discord-token", refuse_privileged_intents=refused) as standin:
        env = clean_env(
            DISCORD_TOKEN="right-discord-token",
            DISCORD_API_BASE_URL=standin.api_base,
            DATABASE_PATH=str(tmp_path / "memory.sqlite3"),
        )
        code, out, err = await run_cli("check", "--online", env=env, cwd=tmp_path)
    [error] = [line for line in err.splitlines() if line.startswith("error: Discord")]
    assert code == 1 and "Discord: OK" not in out
    assert all(name in error for name in named) and "Privileged Gateway Intents" in error


async def test_check_fails_on_a_damaged_database(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    store = Store.open(path, embedding_model="fake-embedding", dimensions=4)
    store.add_facts(
        [
            NewFact("dm", str(i), "n", f"fact number {i} " * 20, ["m"], embedding=[1, 0, 0, 0])
            for i in range(300)
        ]
    )
    page_size = store.conn.execute("PRAGMA page_size").fetchone()[0]
    store.close()
    pages = path.stat().st_size // page_size
    assert pages >= 4
    with path.open("r+b") as file:  # two pages in the middle overwritten, as a failing disk might
        for page in (pages // 3, 2 * pages // 3):
            file.seek(page * page_size)
            file.write(b"\xff" * page_size)
    env = clean_env(
        DISCORD_TOKEN="dummy-discord-token-123456",
        GEMINI_API_KEY="dummy-gemini-key-abcdef",
        DATABASE_PATH=str(path),
        EMBEDDING_MODEL="fake-embedding",
        EMBEDDING_DIMENSIONS="4",
    )
    code, out, err = await run_cli("check", env=env, cwd=tmp_path)
    assert code == 1 and "database OK" not in out
    assert "is damaged" in err and "restore it from a backup" in err


async def test_facts_forget_server_erases_one_server_and_nothing_else(
    tmp_path: Path, gemini: GeminiStandIn, db_env: dict[str, str]
) -> None:
    env = clean_env(GEMINI_API_KEY="k", GEMINI_BASE_URL=gemini.base_url, **db_env)
    data = tmp_path / "f.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"scope": scope, "user_id": "7", "text": f"Seven likes {w}"})
            for scope, w in (("guild:1", "tea"), ("guild:1", "jazz"), ("guild:2", "rain"), ("dm", "snow"))
        )
    )
    assert (await run_cli("facts", "import", str(data), env=env, cwd=tmp_path))[0] == 0
    code, out, _ = await run_cli(
        "facts", "forget-server", "--scope", "guild:1", "--json", env=env, cwd=tmp_path
    )
    assert code == 0 and json.loads(out) == {"facts": 2, "episodes": 0}
    for scope, left in (("guild:1", []), ("guild:2", ["Seven likes rain"]), ("dm", ["Seven likes snow"])):
        code, out, _ = await run_cli(
            "facts", "list", "--scope", scope, "--user", "7", "--json", env=env, cwd=tmp_path
        )
        assert [f["text"] for f in json.loads(out)] == left
    code, _, err = await run_cli("facts", "forget-server", "--scope", "dm", env=env, cwd=tmp_path)
    assert code == 2 and "expected guild:<server id>" in err
