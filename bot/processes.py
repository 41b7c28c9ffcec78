"""Lease holders named after their process, so that a restart takes over its crashed predecessor's leases.

A holder's name is `<place>/<pid>/<start>/<nonce>`. The place is the host name, its boot and its
process-id namespace: only there does a pid name the same process (containers sharing a host name
have namespaces of their own; after a reboot pids start over). The start is the process's start time
in clock ticks since boot (/proc/<pid>/stat), so a pid taken again by another process reads as
another holder, and the nonce keeps two services of one process apart. A holder of this place is dead
when its pid runs no process, only a zombie, or a process started at another time; its leases are then
free at once. A holder of another place cannot be checked and is waited for until its lease's deadline,
and so is every holder where there is no /proc (macOS, Windows): there the name carries no place.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

from bot.memory.leases import Holder

PROC = Path("/proc")
UNKNOWN = "?"  # a place or start time that could not be read


def process_holder() -> Holder:
    """A name for one service of this process, and the check that tells a dead holder of this place."""
    place = _place()
    start = _stat("self")
    name = f"{place or UNKNOWN}/{os.getpid()}/{start[1] if start else UNKNOWN}/{uuid.uuid4().hex[:8]}"
    if place is None or start is None:
        return Holder(name)
    return Holder(name, lambda holder: _dead(place, holder))


def _place() -> str | None:
    """This host, boot and pid namespace, or None where /proc does not tell them."""
    try:
        boot = (PROC / "sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink(PROC / "self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return None
    return f"{socket.gethostname()} {boot} {namespace}"


def _stat(pid: str) -> tuple[str, str] | None:
    """A process's state letter and start time (fields 3 and 22 of its stat), or None if it is gone."""
    try:
        stat = (PROC / pid / "stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name, in parentheses, may hold spaces
    return fields[0], fields[19]


def _dead(place: str, holder: str) -> bool:
    """Whether `holder` is a process of this place that no longer runs (a name not ours: not known dead)."""
    parts = holder.rsplit("/", 3)
    if len(parts) != 4 or parts[0] != place or not parts[1].isdigit():
        return False
    _, pid, start, _ = parts
    stat = _stat(pid)
    if stat is None:
        return not _exists(int(pid))
    state, started = stat
    return state in ("Z", "X") or started != start


def _exists(pid: int) -> bool:
    """Whether a pid that /proc does not show runs a process all the same (another user's, which
    /proc mounted with hidepid hides): signal 0 sends nothing, it only asks."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
