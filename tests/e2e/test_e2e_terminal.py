"""`python -m bot chat` as a newcomer runs it: a real process, its input a pipe, Gemini the local stand-in."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import signal
import socket
import sys
import termios
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.memory.models import TERMINAL_SCOPE
from bot.storage.sqlite.connection import connect
from bot.terminal import local_user_id
from standins.brain import FakeBrain, system_text
from standins.gemini import GeminiStandIn
from tests.e2e.world import eventually
from tests.integration.test_cli import clean_env, run_cli

pytestmark = pytest.mark.e2e


def chat_env(gemini: GeminiStandIn, tmp_path: Path) -> dict[str, str]:
    """Only a Gemini key: no Discord token. The quiet timer is out of the way, so what is learned in a
    session is learned by the flush on leaving."""
    return chat_env_for(gemini.base_url, tmp_path)


def chat_env_for(gemini_url: str, tmp_path: Path) -> dict[str, str]:
    return clean_env(
        GEMINI_API_KEY="test-key",
        GEMINI_BASE_URL=gemini_url,
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
    code, out, _ = await run_cli("facts", "list", "--scope", "terminal", "--user", ana, env=env, cwd=tmp_path)
    assert code == 0 and f"#{learned}" in out and "Ana lives in Porto" in out  # the operator sees it too

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
    assert rows(tmp_path, "SELECT count(*) FROM owner_words_terms WHERE term LIKE '%porto%'") == [(0,)]


async def test_the_bot_points_to_the_chat_only_when_the_gemini_key_is_there(tmp_path: Path) -> None:
    _, _, err = await run_cli(env=clean_env(GEMINI_API_KEY="k"), cwd=tmp_path)
    assert "`python -m bot chat` talks with the bot here" in err
    _, _, err = await run_cli(env=clean_env(), cwd=tmp_path)
    assert len(err.splitlines()) == 2 and "python -m bot chat" not in err


async def test_without_a_gemini_key_chat_says_so_in_one_line(tmp_path: Path) -> None:
    code, out, err = await run_cli(
        "chat", env=clean_env(DATABASE_PATH=str(tmp_path / "m.sqlite3")), cwd=tmp_path, stdin=""
    )
    assert code == 1 and out == ""
    assert err.splitlines()[0].startswith("error: GEMINI_API_KEY is not set")
    assert not (tmp_path / "m.sqlite3").exists()


@pytest.fixture
async def processes() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """Chat processes a failing test must not leave behind."""
    started: list[asyncio.subprocess.Process] = []
    yield started
    for proc in started:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def start_chat(
    processes: list[asyncio.subprocess.Process], tmp_path: Path, env: dict[str, str], **options: Any
) -> asyncio.subprocess.Process:
    """`python -m bot chat --name Ana` with its streams where the test says."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "chat", "--name", "Ana", cwd=tmp_path, env=env, **options
    )
    processes.append(proc)
    return proc


async def test_ctrl_c_leaves_after_learning_what_was_said(
    tmp_path: Path,
    gemini_brain: tuple[GeminiStandIn, FakeBrain],
    processes: list[asyncio.subprocess.Process],
) -> None:
    standin, _ = gemini_brain
    pipe = asyncio.subprocess.PIPE
    proc = await start_chat(
        processes, tmp_path, chat_env(standin, tmp_path), stdin=pipe, stdout=pipe, stderr=pipe
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"I live in Porto.\n")  # and the input stays open: no end of input to leave on
    await proc.stdin.drain()
    while b"Noted, thanks." not in await asyncio.wait_for(proc.stdout.readline(), 30):
        pass
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    assert "Learned: #1 Ana lives in Porto" in out.decode()
    assert "Traceback" not in err.decode()


async def test_with_gemini_unreachable_errors_are_one_clean_line_and_ctrl_c_says_it_is_leaving(
    tmp_path: Path, processes: list[asyncio.subprocess.Process]
) -> None:
    with socket.socket() as closed:  # a port nothing listens on: every connection is refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {**chat_env_for(f"http://127.0.0.1:{port}", tmp_path), "GEMINI_MAX_RETRIES": "1"}
    pipe = asyncio.subprocess.PIPE
    proc = await start_chat(processes, tmp_path, env, stdin=pipe, stdout=pipe, stderr=pipe)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(b"I live in Porto.\n")
    await proc.stdin.drain()
    failed = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
    assert failed.startswith("error: Gemini: could not reach") and failed.count("\n") == 1
    assert " object at 0x" not in failed and "ssl:" not in failed and "[Connect call" not in failed
    proc.send_signal(signal.SIGINT)
    leaving = b""
    while b"Leaving" not in leaving:  # said at once, before the last attempt to learn
        leaving = await asyncio.wait_for(proc.stdout.readline(), 2)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0 and "Traceback" not in err.decode()
    assert "what you said is kept and learned later" in err.decode()


class Terminal:
    """A pseudo-terminal: what the process shows, read on a thread, and keys typed into it."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.modes = termios.tcgetattr(self.master)
        self.shown = b""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:  # EIO: the process closed the terminal
                return
            if not data:
                return
            self.shown += data

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    async def shows(self, text: str, after: int = 0) -> int:
        """Wait until `text` is shown past `after` (a position); the position after it."""

        async def found() -> bool:
            return text.encode() in self.shown[after:]

        await eventually(found, 30, what=f"{text!r} on the terminal")
        return self.shown.index(text.encode(), after) + len(text)

    @staticmethod
    def take_over() -> None:
        """In the child: a session of its own with this terminal controlling it, as in a real
        terminal, so that Ctrl-C is a SIGINT."""
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    async def chat(
        self, processes: list[asyncio.subprocess.Process], tmp_path: Path, env: dict[str, str]
    ) -> asyncio.subprocess.Process:
        """A chat session on this terminal, told where Ana lives in a line edited with Ctrl-A (readline;
        a plain terminal would keep it as a character), and waiting at its next prompt."""
        tty = self.slave
        env = {**env, "TERM": "xterm"}
        proc = await start_chat(
            processes, tmp_path, env, stdin=tty, stdout=tty, stderr=tty, preexec_fn=self.take_over
        )
        os.close(self.slave)
        seen = await self.shows("Ana> ")
        self.type("live in Porto.\x01I \r")
        seen = await self.shows("Noted, thanks.", seen)
        await self.shows("Ana> ", seen)
        return proc


@pytest.mark.parametrize("leave", ["\x04", "\x03"], ids=["ctrl-d", "ctrl-c"])
async def test_on_a_terminal_lines_are_edited_with_readline_and_a_key_leaves(
    leave: str,
    tmp_path: Path,
    gemini_brain: tuple[GeminiStandIn, FakeBrain],
    processes: list[asyncio.subprocess.Process],
) -> None:
    standin, _ = gemini_brain
    terminal = Terminal()
    proc = await terminal.chat(processes, tmp_path, chat_env(standin, tmp_path))
    terminal.type(leave)  # on an empty line: Ctrl-D ends the input, Ctrl-C interrupts
    assert await asyncio.wait_for(proc.wait(), 30) == 0
    assert "Learned: #1 Ana lives in Porto" in terminal.shown.decode(errors="replace")
    assert termios.tcgetattr(terminal.master) == terminal.modes  # as readline found the terminal
    os.close(terminal.master)
