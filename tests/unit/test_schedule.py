"""The endpoint gate: replies before learning, at most `slots` calls at once."""

from __future__ import annotations

import asyncio

import pytest

from bot.llm.schedule import EndpointGate, serves_one_at_a_time


async def _hold(gate: EndpointGate, name: str, log: list[str], *, foreground: bool, seconds: float) -> None:
    async with gate.turn(foreground=foreground):
        log.append(f"+{name}")
        await asyncio.sleep(seconds)
        log.append(f"-{name}")


async def test_a_reply_goes_before_learning_that_queued_first() -> None:
    gate = EndpointGate(1, quiet_seconds=0.0)
    log: list[str] = []
    first = asyncio.create_task(_hold(gate, "learn1", log, foreground=False, seconds=0.05))
    await asyncio.sleep(0.01)
    second = asyncio.create_task(_hold(gate, "learn2", log, foreground=False, seconds=0.01))
    await asyncio.sleep(0.01)
    reply = asyncio.create_task(_hold(gate, "reply", log, foreground=True, seconds=0.01))
    await asyncio.gather(first, second, reply)
    # the reply waits only for the call in flight, never behind the queued learning
    assert log == ["+learn1", "-learn1", "+reply", "-reply", "+learn2", "-learn2"]


async def test_learning_waits_for_a_quiet_moment_after_a_reply() -> None:
    gate = EndpointGate(1, quiet_seconds=0.2)
    log: list[str] = []
    await _hold(gate, "reply", log, foreground=True, seconds=0.0)
    started = asyncio.get_running_loop().time()
    await _hold(gate, "learn", log, foreground=False, seconds=0.0)
    assert asyncio.get_running_loop().time() - started >= 0.15
    assert gate.background_waits == 1


async def test_learning_never_runs_beside_a_reply_even_with_free_slots() -> None:
    gate = EndpointGate(2, quiet_seconds=0.0)
    log: list[str] = []
    reply = asyncio.create_task(_hold(gate, "reply", log, foreground=True, seconds=0.05))
    await asyncio.sleep(0.01)
    await _hold(gate, "learn", log, foreground=False, seconds=0.0)
    await reply
    assert log == ["+reply", "-reply", "+learn", "-learn"]


async def test_replies_share_the_slots_and_take_turns() -> None:
    gate = EndpointGate(1)
    log: list[str] = []
    await asyncio.gather(*(_hold(gate, f"r{i}", log, foreground=True, seconds=0.01) for i in range(3)))
    assert log == ["+r0", "-r0", "+r1", "-r1", "+r2", "-r2"]


async def test_no_limit_lets_everything_in_at_once() -> None:
    gate = EndpointGate(0)
    log: list[str] = []
    await asyncio.gather(
        _hold(gate, "learn", log, foreground=False, seconds=0.02),
        _hold(gate, "reply", log, foreground=True, seconds=0.02),
    )
    assert log[:2] == ["+learn", "+reply"]


async def test_a_cancelled_wait_gives_its_place_up() -> None:
    gate = EndpointGate(1, quiet_seconds=0.0)
    log: list[str] = []
    busy = asyncio.create_task(_hold(gate, "busy", log, foreground=True, seconds=0.05))
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(_hold(gate, "gone", log, foreground=True, seconds=0.0))
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await busy
    await asyncio.wait_for(_hold(gate, "learn", log, foreground=False, seconds=0.0), 1.0)
    assert "+gone" not in log and log[-1] == "-learn"


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8765/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://192.168.1.20:8080/v1", True),
        ("http://ollama:11434/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://openrouter.ai/api/v1", False),
        ("https://api.groq.com/openai/v1", False),
        ("", False),
    ],
)
def test_what_counts_as_a_server_that_serves_one_at_a_time(url: str, local: bool) -> None:
    assert serves_one_at_a_time(url) is local
