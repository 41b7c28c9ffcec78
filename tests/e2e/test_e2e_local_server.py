"""The bot on a local model's server, which answers one request at a time, reads a prompt at a CPU's pace,
and (as llama-cpp-python's does by default) ends the stream it is sending when another request arrives:
a reply never loses to the bot's learning, and a slow server's answers are used, not timed out."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.discord_bot import streaming
from bot.discord_bot.discord_text import STREAMING_MARKER
from bot.memory.model_ports import Purpose
from tests.e2e import world as world_module
from tests.e2e.world import World, eventually, world

pytestmark = pytest.mark.usefixtures("world_database")

ANSWER = "Bob told us he works as a lighthouse keeper on the northern coast, and he keeps bees too."


@pytest.fixture(autouse=True)
def on_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(world_module, "model", "openai")


def like_a_local_server(w: World) -> None:
    server: Any = w.gemini
    server.one_at_a_time = True
    server.interrupts = True
    server.stream_chunk_size = 8
    server.stream_chunk_delay = 0.05  # a reply streams for about half a second


async def teach_bob(w: World) -> None:
    for text in ("I work as a lighthouse keeper", "I keep bees on weekends", "I live in Tromso"):
        await w.discord.send_message(w.general, w.bob, text)
    await w.seen(w.general)


async def whole_reply(w: World, asked: dict[str, Any]) -> dict[str, Any]:
    return await w.discord.wait_for_bot_message(
        w.general,
        lambda m: (
            (m.get("message_reference") or {}).get("message_id") == asked["id"]
            and not m["content"].endswith(STREAMING_MARKER)
        ),
        timeout=30,
    )


async def test_a_question_followed_by_a_flush_gets_its_whole_reply(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        like_a_local_server(w)
        w.brain.chat_reply = ANSWER
        await teach_bob(w)
        asked = await w.discord.send_message(w.general, w.alice, "what does bob do?", mention_bot=True)
        await eventually(lambda: _true(bool(w.chat_requests())), what="the reply's stream begun")
        flush = asyncio.create_task(w.flush())  # the bot's learning, while the reply still streams
        reply = await whole_reply(w, asked)
        await asyncio.wait_for(flush, 30)
        assert reply["content"].strip() == ANSWER
        assert w.gemini.interrupted == 0  # type: ignore[attr-defined]
        assert any("lighthouse" in f.text for f in await w.facts(f"guild:{w.alpha.id}", w.bob))


async def test_without_turns_the_same_flush_cuts_the_reply_off(tmp_path: Path) -> None:
    """The same scene with every call let through at once (MODEL_CONCURRENCY=0): the server cuts the
    reply off, so the test above would fail without the gate."""
    async with world(tmp_path, model_concurrency=0) as w:
        like_a_local_server(w)
        w.brain.chat_reply = ANSWER
        await teach_bob(w)
        asked = await w.discord.send_message(w.general, w.alice, "what does bob do?", mention_bot=True)
        await eventually(lambda: _true(bool(w.chat_requests())), what="the reply's stream begun")
        flush = asyncio.create_task(w.flush())
        await asyncio.wait_for(flush, 30)
        await eventually(lambda: _true(w.gemini.interrupted > 0), what="the reply cut off")  # type: ignore[attr-defined]
        reply = await whole_reply(w, asked)
        assert reply["content"].strip() != ANSWER


async def test_a_slow_servers_answers_are_used_not_timed_out(tmp_path: Path) -> None:
    """OPENAI_TIMEOUT_SECONDS=1 on a server that has shown it takes about a second: a flush whose every
    call then takes one and a half (over the setting, within three times its pace) learns, with no call
    timed out."""
    async with world(tmp_path, openai_timeout_seconds=1.0) as w:
        server: Any = w.gemini
        server.one_at_a_time = True
        server.latency = 0.7
        await w.discord.send_message(w.general, w.carol, "I work as a glassblower")
        await w.discord.send_message(w.general, w.carol, "I live in Murano")
        await w.seen(w.general)
        await w.flush()
        assert any("glassblower" in f.text for f in await w.facts(f"guild:{w.alpha.id}", w.carol))
        server.latency = 1.5
        await teach_bob(w)
        retries_before = _retries(w)
        await w.flush()
        assert any("lighthouse" in f.text for f in await w.facts(f"guild:{w.alpha.id}", w.bob))
        assert _retries(w) == retries_before  # nothing ran out of time and was asked again


def _retries(w: World) -> int:
    usage = w.bot.models.usage.snapshot()
    return sum(usage[purpose.value]["retries"] for purpose in (Purpose.EXTRACT, Purpose.EMBED))


async def _true(value: bool) -> bool:
    return value


async def test_a_slow_answer_is_announced_then_takes_the_note_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No word of the answer by SLOW_REPLY_SECONDS: the member reads that it is coming, and the answer
    then replaces that note in the same message (no failure, no second message)."""
    async with world(tmp_path) as w:
        monkeypatch.setattr(streaming, "SLOW_REPLY_SECONDS", 0.3)
        like_a_local_server(w)
        w.gemini.latency = 1.0
        w.brain.chat_reply = ANSWER
        asked = await w.discord.send_message(w.general, w.alice, "what does bob do?", mention_bot=True)
        reply = await whole_reply(w, asked)
        assert reply["content"].strip() == ANSWER
        posted = [
            r.json.get("content", "")
            for r in w.discord.requests
            if r.method == "POST" and r.path.endswith("/messages") and isinstance(r.json, dict)
        ]
        assert any(text.startswith(streaming.SLOW_REPLY_NOTE) for text in posted), posted
        replies = [
            m
            for m in w.discord.bot_messages(w.general)
            if (m.get("message_reference") or {}).get("message_id") == asked["id"]
        ]
        assert len(replies) == 1
