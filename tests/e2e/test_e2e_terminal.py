"""`python -m bot chat` as a newcomer runs it: a real process, its input a pipe, Gemini the local stand-in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.memory.models import TERMINAL_SCOPE
from bot.storage.sqlite.connection import connect
from bot.terminal import local_user_id
from standins.brain import FakeBrain, system_text
from standins.gemini import GeminiStandIn
from tests.integration.test_cli import clean_env, run_cli

pytestmark = pytest.mark.e2e


def chat_env(gemini: GeminiStandIn, tmp_path: Path) -> dict[str, str]:
    """Only a Gemini key: no Discord token. The quiet timer is out of the way, so what is learned in a
    session is learned by the flush on leaving."""
    return clean_env(
        GEMINI_API_KEY="test-key",
        GEMINI_BASE_URL=gemini.base_url,
        DATABASE_PATH=str(tmp_path / "memory.sqlite3"),
        MEMORY_FLUSH_QUIET_SECONDS="3600",
    )


async def chat(tmp_path: Path, env: dict[str, str], *lines: str) -> tuple[int, str, str]:
    """One session: `lines` typed into a pipe, then the end of input."""
    return await run_cli(
        "chat", "--name", "Ana", env=env, cwd=tmp_path, stdin="".join(f"{x}\n" for x in lines)
    )


def rows(tmp_path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = connect(tmp_path / "memory.sqlite3", readonly=True)
    try:
        return [tuple(r) for r in conn.execute(sql).fetchall()]
    finally:
        conn.close()


async def test_a_terminal_chat_learns_recalls_after_a_restart_and_forgets(
    tmp_path: Path, gemini_brain: tuple[GeminiStandIn, FakeBrain]
) -> None:
    standin, brain = gemini_brain
    env = chat_env(standin, tmp_path)

    code, out, err = await chat(tmp_path, env, "Hello! I live in Porto.")
    assert code == 0, err
    assert "Noted, thanks." in out
    [learned] = re.findall(r"Learned: #(\d+) Ana lives in Porto", out)  # by the flush on leaving
    ana = local_user_id("Ana")
    assert rows(tmp_path, "SELECT id, scope, user_id, text FROM facts") == [
        (int(learned), TERMINAL_SCOPE, ana, "Ana lives in Porto")
    ]
    assert "Porto" not in system_text(brain.chat_requests[0])  # nothing was known before

    # A new process: the fact is listed and recalled into the system instruction of the reply.
    code, out, err = await chat(tmp_path, env, "/facts", "Where do I live?")
    assert code == 0, err
    assert re.search(rf"^#{learned} · \d{{4}}-\d\d-\d\d · Ana lives in Porto$", out, re.M)
    system = system_text(brain.chat_requests[-1])
    assert "<background_facts>" in system and "Ana lives in Porto" in system
    assert "long-term memory" in system  # the Discord chat's memory guide, the same building block

    code, out, err = await chat(tmp_path, env, f"/forget {learned}", "/facts", "Where do I live?")
    assert code == 0, err
    assert f"Forgot #{learned}, for good." in out
    assert "I don't remember anything about you yet." in out
    assert "Porto" not in system_text(brain.chat_requests[-1])
    assert rows(tmp_path, "SELECT id FROM facts") == []
    assert rows(tmp_path, "SELECT count(*) FROM facts_fts WHERE facts_fts MATCH 'Porto'") == [(0,)]


async def test_without_a_gemini_key_chat_says_so_in_one_line(tmp_path: Path) -> None:
    code, out, err = await run_cli(
        "chat", env=clean_env(DATABASE_PATH=str(tmp_path / "m.sqlite3")), cwd=tmp_path, stdin=""
    )
    assert code == 1 and out == ""
    assert err.splitlines()[0].startswith("error: GEMINI_API_KEY is not set")
    assert not (tmp_path / "m.sqlite3").exists()
