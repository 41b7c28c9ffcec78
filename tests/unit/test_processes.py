"""Telling a dead lease holder of this host: its pid runs nothing, a zombie, or a later process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bot.processes
from bot.processes import process_holder

ROOT = Path(__file__).resolve().parents[2]
NAME_OF_A_CHILD = "from bot.processes import process_holder; print(process_holder().name, flush=True)"

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux's /proc only")


def child(*, exit_after: str = "") -> subprocess.Popen[str]:
    """A Python process of this host that prints its holder name (and then runs `exit_after`)."""
    return subprocess.Popen(
        [sys.executable, "-c", f"{NAME_OF_A_CHILD}; {exit_after}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def exited_holder() -> str:
    """The holder name of a process of this host that has exited since (and was reaped)."""
    proc = child()
    name, _ = proc.communicate(timeout=30)
    return name.strip()


def test_a_holder_whose_process_exited_is_dead_and_a_running_one_is_not() -> None:
    holder = process_holder()
    running = child(exit_after="import sys; sys.stdin.read()")  # runs until its stdin closes
    try:
        assert running.stdout is not None
        name = running.stdout.readline().strip()
        assert not holder.dead(name)
        assert not holder.dead(process_holder().name)  # another service of this very process
    finally:
        running.communicate(timeout=30)
    assert holder.dead(name)
    assert holder.dead(exited_holder())


def test_a_zombie_is_dead() -> None:
    proc = child()
    assert proc.stdout is not None
    name = proc.stdout.readline().strip()
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # it has exited, and is not reaped yet
    assert process_holder().dead(name)
    proc.wait()


def test_a_pid_now_running_a_process_started_at_another_time_is_dead() -> None:
    place, pid, start, nonce = process_holder().name.rsplit("/", 3)
    assert pid == str(os.getpid())
    assert process_holder().dead(f"{place}/{pid}/{int(start) + 1}/{nonce}")


def test_holders_of_another_place_or_not_named_by_this_module_are_never_judged() -> None:
    dead = exited_holder()
    place, pid, start, nonce = dead.rsplit("/", 3)
    host, boot, namespace = place.split(" ")
    holder = process_holder()
    assert holder.dead(dead)
    assert not holder.dead(f"another-host {boot} {namespace}/{pid}/{start}/{nonce}")
    assert not holder.dead(f"{host} {boot} pid:[1]/{pid}/{start}/{nonce}")  # a container's own pids
    assert not holder.dead(f"{host} 00000000-after-a-reboot {namespace}/{pid}/{start}/{nonce}")
    assert not holder.dead("8c2b4e0f9a7d4e21b3c5d6e7f8091a2b")  # an older version's random name
    assert not holder.dead(f"{place}/not-a-pid/{start}/{nonce}")


def test_a_pid_that_proc_hides_but_still_runs_is_not_dead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc mounted with hidepid shows no other user's processes: only a pid that runs nothing is dead."""
    holder = process_holder()
    place, _, start, nonce = holder.name.rsplit("/", 3)
    dead = exited_holder()
    monkeypatch.setattr(bot.processes, "PROC", tmp_path)
    assert not holder.dead(f"{place}/{os.getppid()}/{start}/{nonce}")
    assert holder.dead(dead)


def test_without_proc_every_holder_is_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = exited_holder()
    monkeypatch.setattr(bot.processes, "PROC", tmp_path)  # macOS, Windows: no /proc
    holder = process_holder()
    assert holder.name.startswith(f"?/{os.getpid()}/?/")
    assert not holder.dead(dead)
