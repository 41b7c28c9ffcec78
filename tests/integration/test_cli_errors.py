"""The operator CLI when things go wrong: Gemini failures, odd files, bad databases, closed pipes.

Each failure must end as one `error: ...` line per problem and a non-zero exit, never a traceback, and an
import must always say what landed. Real SQLite + sqlite-vec, the Gemini stand-in on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from bot.memory.models import Decision, NewFact, Operation
from bot.storage import Store
from standins.brain import FakeBrain
from standins.gemini import GeminiStandIn, hashed_embedding
from tests.integration.test_cli import clean_env, import_three_dm_facts, run_cli

POISON = "poison"


@pytest.fixture
async def gemini() -> AsyncIterator[GeminiStandIn]:
    async with GeminiStandIn() as standin:
        yield standin


def gemini_env(tmp_path: Path, gemini: GeminiStandIn, **extra: str) -> dict[str, str]:
    settings = {
        "GEMINI_API_KEY": "k",
        "GEMINI_BASE_URL": gemini.base_url,
        "GEMINI_MAX_RETRIES": "0",
        "DATABASE_PATH": str(tmp_path / "m.sqlite3"),
    }
    return clean_env(**{**settings, **extra})


def poison_embeddings(gemini: GeminiStandIn, poison: str = POISON) -> None:
    """Make every embed request holding a text with `poison` fail with a 400 in the real API's shape."""

    def embed(text: str, task: str | None, dims: int | None) -> list[float]:
        if poison in text:
            error = {"code": 400, "message": "stand-in refuses this text", "status": "INVALID_ARGUMENT"}
            raise web.HTTPBadRequest(text=json.dumps({"error": error}), content_type="application/json")
        return hashed_embedding(text, task, dims)

    gemini.embed_handler = embed


def fact_line(user: str, text: str, scope: str = "dm") -> str:
    return json.dumps({"scope": scope, "user_id": user, "text": text}, ensure_ascii=False)


def assert_one_error_line(err: str, start: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith(start), err


# ---- Gemini failures, and importing the same file again ------------------------------------------------


async def test_import_stopped_by_gemini_reports_what_landed_and_a_rerun_adds_only_the_rest(
    tmp_path: Path, gemini: GeminiStandIn
) -> None:
    env = gemini_env(tmp_path, gemini)
    data = tmp_path / "f.jsonl"
    lines = [fact_line("7", f"Seven fact number {i}") for i in range(250)]
    lines[3] = "{oops"
    lines[150] = fact_line("7", f"Seven fact number 150 {POISON}")
    data.write_text("\n".join(lines) + "\n")
    poison_embeddings(gemini)

    code, out, err = await run_cli("facts", "import", str(data), "--json", env=env, cwd=tmp_path)
    report = json.loads(out)
    assert code == 1
    assert report["imported"] == 100 and report["read"] == 249  # the first batch landed, then Gemini failed
    assert report["error"].startswith("Gemini: ")
    assert [line.split(":")[1] for line in report["bad_lines"]] == ["4"]  # not lost to the failure
    assert f"{data}:4: not JSON" in err and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error: Gemini: ")]

    code, out, err = await run_cli("facts", "import", str(data), env=env, cwd=tmp_path)
    assert code == 1 and out.startswith("imported 0 of 249 facts before the failure (run the same import")
    assert out.rstrip().endswith("; skipped 100 duplicate(s); 1 bad line(s)")

    gemini.embed_handler = hashed_embedding
    code, out, err = await run_cli("facts", "import", str(data), "--json", env=env, cwd=tmp_path)
    report = json.loads(out)
    assert code == 1 and report["error"] is None  # 1: line 4 is still bad
    assert report["imported"] == 149 and report["skipped_duplicates"] == 100
    code, out, _ = await run_cli("facts", "import", str(data), env=env, cwd=tmp_path)
    assert out.strip() == "imported 0 of 249 facts; skipped 249 duplicate(s); 1 bad line(s)"
    code, out, _ = await run_cli("stats", "--json", env=env, cwd=tmp_path)
    assert json.loads(out)["facts"]["active"] == 249


async def test_import_skips_lines_repeated_in_the_file_and_people_who_opted_out(
    tmp_path: Path, gemini: GeminiStandIn
) -> None:
    env = gemini_env(tmp_path, gemini)
    store = Store.open(tmp_path / "m.sqlite3", embedding_model="gemini-embedding-001", dimensions=768)
    store.set_opt_out("guild:5", "8", True)
    store.close()
    data = tmp_path / "f.jsonl"
    data.write_text(
        "\n".join(
            [
                fact_line("7", "Seven likes tea"),
                fact_line("7", "seven likes TEA"),  # the same fact (case aside) twice in one file
                fact_line("8", "Eight likes jazz", scope="guild:5"),  # opted out in guild:5 ...
                fact_line("8", "Eight likes jazz", scope="guild:6"),  # ... but not in guild:6
            ]
        )
    )
    code, out, err = await run_cli("facts", "import", str(data), "--json", env=env, cwd=tmp_path)
    report = json.loads(out)
    assert code == 0, err
    assert report["imported"] == 2 and report["read"] == 4
    assert report["duplicate_lines"] == [2] and report["opted_out_lines"] == [3]
    assert report["skipped_duplicates"] == 1 and report["skipped_opted_out"] == 1
    code, out, _ = await run_cli(
        "facts", "list", "--scope", "guild:5", "--user", "8", "--json", env=env, cwd=tmp_path
    )
    assert json.loads(out) == []
    code, out, _ = await run_cli("facts", "import", str(data), env=env, cwd=tmp_path)
    assert out.strip() == ("imported 0 of 4 facts; skipped 3 duplicate(s); skipped 1 of people who opted out")


async def test_importing_a_file_again_does_not_revive_what_was_superseded_since(
    tmp_path: Path, gemini: GeminiStandIn
) -> None:
    env = gemini_env(tmp_path, gemini)
    data = tmp_path / "f.jsonl"
    data.write_text(fact_line("7", "Seven lives in Paris") + "\n")
    code, _, err = await run_cli("facts", "import", str(data), env=env, cwd=tmp_path)
    assert code == 0, err
    store = Store.open(tmp_path / "m.sqlite3", embedding_model="gemini-embedding-001", dimensions=768)
    [paris] = store.list_facts("dm", "7")
    rome = NewFact(
        "dm", "7", "", "Seven lives in Rome", ["m1"], embedding=hashed_embedding("Rome", None, 768)
    )
    store.apply_flush([Operation(Decision.INVALIDATE, rome, paris.id)])
    store.set_state("model_usage", json.dumps({"marker": "the bot's own run"}))
    store.close()
    code, out, err = await run_cli("facts", "import", str(data), "--json", env=env, cwd=tmp_path)
    report = json.loads(out)
    assert code == 0 and report["imported"] == 0 and report["skipped_duplicates"] == 1, err
    code, out, _ = await run_cli(
        "facts", "list", "--scope", "dm", "--user", "7", "--json", env=env, cwd=tmp_path
    )
    assert [f["text"] for f in json.loads(out)] == ["Seven lives in Rome"]
    code, out, _ = await run_cli("stats", "--json", env=env, cwd=tmp_path)
    assert json.loads(out)["model_usage_last_run"] == {"marker": "the bot's own run"}  # imports leave it


async def test_consolidated_import_says_what_became_of_each_line(
    tmp_path: Path, gemini: GeminiStandIn
) -> None:
    gemini.generate_handler = FakeBrain()
    env = gemini_env(tmp_path, gemini)
    first = tmp_path / "first.jsonl"
    first.write_text(
        fact_line("7", "Seven lives in Oslo") + "\n" + fact_line("7", "Seven likes green tea") + "\n"
    )
    code, _, err = await run_cli("facts", "import", str(first), env=env, cwd=tmp_path)
    assert code == 0, err
    later = tmp_path / "later.jsonl"
    later.write_text(
        "\n".join(
            [
                fact_line("7", "Seven lives in Rome"),  # replaces Oslo
                fact_line("7", "Seven plays chess on Sundays"),  # nothing like it known
                fact_line("7", "Seven likes green tea!"),  # the same as a known fact, give or take a mark
            ]
        )
    )
    code, out, err = await run_cli(
        "facts", "import", str(later), "--consolidate", "--json", env=env, cwd=tmp_path
    )
    report = json.loads(out)
    assert code == 0, err
    assert report["decisions"] == {"INVALIDATE": 1, "ADD": 1, "DUPLICATE": 1} and report["imported"] == 2
    code, out, _ = await run_cli(
        "facts", "list", "--scope", "dm", "--user", "7", "--json", env=env, cwd=tmp_path
    )
    assert sorted(f["text"] for f in json.loads(out)) == [
        "Seven likes green tea",
        "Seven lives in Rome",
        "Seven plays chess on Sundays",
    ]


async def test_recall_and_reembed_report_a_gemini_failure_in_one_line(
    tmp_path: Path, gemini: GeminiStandIn
) -> None:
    env = await import_three_dm_facts(tmp_path, gemini)
    env["GEMINI_MAX_RETRIES"] = "0"
    gemini.fail_next(400, kind="embed")
    code, out, err = await run_cli(
        "recall", "--scope", "dm", "--user", "7", "--query", "tea", env=env, cwd=tmp_path
    )
    assert code == 1 and out == ""
    assert_one_error_line(err, "error: Gemini: ")

    env["EMBEDDING_DIMENSIONS"] = "256"
    poison_embeddings(gemini, "rain")
    code, out, err = await run_cli("reembed", "--batch", "2", env=env, cwd=tmp_path)
    assert code == 1 and "re-embedded 2 facts before the failure" in out
    assert_one_error_line(err, "error: Gemini: ")
    # Half way, the operator can still list and forget (a deletion request never waits for a re-embed).
    code, out, err = await run_cli(
        "facts", "list", "--scope", "dm", "--user", "7", "--json", env=env, cwd=tmp_path
    )
    assert code == 0 and len(json.loads(out)) == 3, err
    gemini.embed_handler = hashed_embedding
    code, out, err = await run_cli("reembed", "--batch", "2", "--json", env=env, cwd=tmp_path)
    assert code == 0 and json.loads(out)["reembedded"] == 1, err  # carried on where it stopped
    requests = gemini.counters["embed"]["requests"]
    code, out, err = await run_cli("reembed", env=env, cwd=tmp_path)
    assert code == 0 and "nothing to do" in out, err
    assert gemini.counters["embed"]["requests"] == requests  # up to date: not one Gemini call


# ---- what a real import file looks like ---------------------------------------------------------------------


async def test_import_reads_a_bom_and_reports_undecodable_deep_and_long_lines(
    tmp_path: Path, gemini: GeminiStandIn
) -> None:
    env = gemini_env(tmp_path, gemini)
    longest = "a" * 499 + "."
    rows = [
        b"\xef\xbb\xbf" + fact_line("7", "Seven likes tea").encode(),  # 1: a BOM, as Notepad writes
        fact_line("7", "Seven likes caf\xe9").encode("latin-1"),  # 2: not UTF-8
        b"[" * 100_000,  # 3: nested too deeply for the JSON parser
        fact_line("7", "b" * 501).encode(),  # 4: longer than a fact may be
        fact_line("7", longest).encode(),  # 5: just fits
        fact_line("\u0661\u0662", "Arabic-Indic digits are not an id").encode(),  # 6
        b'{"scope": "dm", "user_id": ' + b"9" * 5000 + b', "text": "huge"}',  # 7: int too long to parse
        fact_line("7", "Seven likes caf\xe9").encode(),  # 8: fine in UTF-8
    ]
    data = tmp_path / "f.jsonl"
    data.write_bytes(b"\r\n".join(rows) + b"\r\n")
    code, out, err = await run_cli("facts", "import", str(data), "--json", env=env, cwd=tmp_path)
    report = json.loads(out)
    assert code == 1 and "Traceback" not in err
    assert report["imported"] == 3 and report["read"] == 3
    by_line = {int(line.split(":")[1]): line for line in report["bad_lines"]}
    assert sorted(by_line) == [2, 3, 4, 6, 7]
    assert "not UTF-8" in by_line[2] and "nested too deeply" in by_line[3]
    assert "501 characters" in by_line[4] and "user id" in by_line[6] and "too long" in by_line[7]
    code, out, _ = await run_cli(
        "facts", "list", "--scope", "dm", "--user", "7", "--json", env=env, cwd=tmp_path
    )
    assert sorted(f["text"] for f in json.loads(out)) == sorted(
        ["Seven likes tea", longest, "Seven likes caf\xe9"]
    )


async def test_a_utf16_import_file_is_named_as_such(tmp_path: Path, gemini: GeminiStandIn) -> None:
    data = tmp_path / "f.jsonl"
    data.write_text(fact_line("7", "Seven likes tea"), encoding="utf-16")
    code, _, err = await run_cli("facts", "import", str(data), env=gemini_env(tmp_path, gemini), cwd=tmp_path)
    assert code == 1 and err.strip() == f"error: {data} is UTF-16 text; save it as UTF-8"


# ---- the database file ------------------------------------------------------------------------------------


async def test_a_file_that_is_not_a_database_is_a_problem_line_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("shopping list: milk, eggs, and a very long line of text\n" * 10)
    env = clean_env(DISCORD_TOKEN="dummy-discord-token", GEMINI_API_KEY="k", DATABASE_PATH="notes.txt")
    code, out, err = await run_cli("check", "--json", env=env, cwd=tmp_path)
    assert code == 1 and "Traceback" not in err
    report = json.loads(out)
    assert report["ok"] is False and report["database"]["ok"] is False
    assert report["problems"] == ["notes.txt is not an SQLite database (check DATABASE_PATH)"]
    code, out, err = await run_cli("stats", env=env, cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err == "error: notes.txt is not an SQLite database (check DATABASE_PATH)\n"


async def test_a_database_folder_that_cannot_be_created_is_named(
    tmp_path: Path, gemini: GeminiStandIn
) -> None:
    (tmp_path / "data").write_text("a file where the folder should be")
    env = gemini_env(tmp_path, gemini, DATABASE_PATH="data/memory.sqlite3")
    code, _, err = await run_cli("check", env=env, cwd=tmp_path)
    assert code == 1 and "Traceback" not in err
    assert "error: cannot create the folder data for database data/memory.sqlite3" in err
    (tmp_path / "f.jsonl").write_text(fact_line("7", "Seven likes tea"))
    code, _, err = await run_cli("facts", "import", "f.jsonl", env=env, cwd=tmp_path)
    assert code == 1 and "Traceback" not in err
    assert_one_error_line(err, "error: cannot create the folder data for database data/memory.sqlite3")


@pytest.fixture
def without_write_access(tmp_path: Path) -> Iterator[list[str]]:
    """A command prefix under which files the owner cannot write are really read-only, even for root."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    yield prefix
    for path in (tmp_path, *tmp_path.iterdir()):
        path.chmod(0o755)


async def test_a_read_only_database_is_one_clear_line(
    tmp_path: Path, gemini: GeminiStandIn, without_write_access: list[str]
) -> None:
    env = await import_three_dm_facts(tmp_path, gemini)
    for path in (*tmp_path.iterdir(), tmp_path):
        path.chmod(0o555)
    code, out, err = await run_cli("stats", env=env, cwd=tmp_path, prefix=without_write_access)
    assert (code, out) == (1, "")
    assert_one_error_line(err, f"error: database {tmp_path / 'm.sqlite3'} is read-only")
    code, out, err = await run_cli("check", env=env, cwd=tmp_path, prefix=without_write_access)
    assert code == 1 and "is read-only" in err and "Traceback" not in err


async def test_read_only_commands_do_not_create_a_missing_database(tmp_path: Path) -> None:
    env = clean_env(GEMINI_API_KEY="k")
    env["DATABASE_PATH"] = str(tmp_path / "typo" / "memory.sqlite3")
    missing = (
        f"error: no database at {tmp_path / 'typo' / 'memory.sqlite3'} (run the bot or facts import first)\n"
    )
    for args in (
        ["stats"],
        ["facts", "list", "--scope", "dm", "--user", "7"],
        ["recall", "--scope", "dm", "--user", "7", "--query", "tea"],
    ):
        code, out, err = await run_cli(*args, env=env, cwd=tmp_path)
        assert (code, out, err) == (1, "", missing), args
    assert not (tmp_path / "typo").exists()


async def test_a_tilde_in_database_path_means_home(tmp_path: Path) -> None:
    env = clean_env(DISCORD_TOKEN="t", GEMINI_API_KEY="k", DATABASE_PATH="~/bot/memory.sqlite3")
    env["HOME"] = str(tmp_path / "home")
    code, _, err = await run_cli("check", env=env, cwd=tmp_path)
    assert code == 0, err
    assert (tmp_path / "home" / "bot" / "memory.sqlite3").exists() and not (tmp_path / "~").exists()


async def test_a_named_env_file_must_exist(tmp_path: Path) -> None:
    env = clean_env(DATABASE_PATH=str(tmp_path / "m.sqlite3"))
    code, out, err = await run_cli("--env-file", "prod.env", "check", env=env, cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err == f"error: settings file {tmp_path / 'prod.env'} does not exist (or is not a file)\n"
    (tmp_path / "prod.env").write_bytes(b"\xef\xbb\xbfDISCORD_TOKEN=from-the-file-1234\nGEMINI_API_KEY=k\n")
    code, out, err = await run_cli("--env-file", "prod.env", "check", "--json", env=env, cwd=tmp_path)
    assert code == 0, err
    assert json.loads(out)["settings"]["DISCORD_TOKEN"] == "****1234"


# ---- pipes and usage -------------------------------------------------------------------------------------


async def test_a_closed_output_pipe_ends_quietly(tmp_path: Path, gemini: GeminiStandIn) -> None:
    env = await import_three_dm_facts(tmp_path, gemini)
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"scope": "dm", "user_ids": ["7"], "query": "tea"}) + "\n")
    for args in (
        ["facts", "list", "--scope", "dm", "--user", "7"],
        ["recall", "--queries", str(queries)],
    ):
        read_end, write_end = os.pipe()
        os.close(read_end)  # like `| head` that has already read what it wanted
        try:
            code, _, err = await run_cli(*args, env=env, cwd=tmp_path, stdout=write_end)
        finally:
            os.close(write_end)
        assert (code, err) == (1, ""), args


async def test_usage_errors_exit_2(tmp_path: Path) -> None:
    env = clean_env(DATABASE_PATH=str(tmp_path / "m.sqlite3"))
    for args, says in (
        (["facts"], "required: {list,forget,forget-server,export,import}"),
        (["recall", "--scope", "dm", "--user", "7", "--query", "x", "--limit", "0"], "--limit"),
        (["recall", "--scope", "dm", "--user", "7", "--query", "x", "--limit", "-3"], "--limit"),
        (["facts", "list", "--scope", "dm", "--user", "\u0661\u0662"], "invalid user id"),
        (["facts", "list", "--scope", "guild:\u0661", "--user", "7"], "invalid scope"),
        (["facts", "forget", "--scope", "dm", "--user", "7", "--id", "0"], "--id"),
        (["reembed", "--batch", "0"], "--batch"),
        (["recall", "--scope", "dm", "--user", "7", "--query", "x", "--limit", "9" * 20], "--limit"),
    ):
        code, _, err = await run_cli(*args, env=env, cwd=tmp_path)
        assert code == 2 and "usage:" in err and says in err, (args, err)
    assert not (tmp_path / "m.sqlite3").exists()
