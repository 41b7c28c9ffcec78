"""End-to-end flows of capture and chat through the wire: the real bot, both stand-ins, real SQLite."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import itertools
import json
import logging
import re
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.chat import reply as reply_use_case
from bot.discord_bot.client import RESTARTING
from bot.discord_bot.cogs.chat import FAILED_REPLY, MISCONFIGURED_REPLY, NO_TEXT_REPLY
from bot.discord_bot.discord_text import STREAMING_MARKER
from bot.llm.retry import THINKING_TOKENS
from bot.memory.extract import MAX_FACTS_PER_CHUNK, MAX_FACTS_PER_SPEAKER
from bot.memory.flushing import MAX_BAD_ANSWERS
from bot.memory.model_ports import ModelBadAnswer, ModelError
from bot.memory.models import NewFact
from bot.memory.prompts.extraction import EXTRACT_TASK
from standins.brain import last_user_text, read_chunk, system_text
from standins.discord.model import thread_payload
from tests.e2e.world import World, eventually, world

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("world_database")]


def block_of(request: dict[str, Any]) -> ET.Element | None:
    system = system_text(request)
    match = re.search(r"<background_facts>.*</background_facts>", system, re.S)
    return ET.fromstring(match.group(0)) if match else None


async def teach_alpha(w: World) -> None:
    """Three people talk in Alpha's general channel; the buffer is flushed."""
    await w.say(w.general, w.alice, "I live in Lisbon. My cat is called Miso.")
    await w.say(w.general, w.bob, "I work as a carpenter")
    await w.say(w.general, w.carol, "I am a marathon runner")
    await w.say(w.general, w.bob, "Alice, you should visit Porto!")  # about someone else: no fact for alice
    await w.flush()


@pytest.mark.usefixtures("world_model")
async def test_three_people_talk_and_each_ones_facts_are_stored_for_them(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await teach_alpha(w)
        scope = f"guild:{w.alpha.id}"
        assert sorted(f.text for f in await w.facts(scope, w.alice)) == [
            "alice lives in Lisbon",
            "alice's cat is called Miso",
        ]
        assert [f.text for f in await w.facts(scope, w.bob)] == ["bob works as a carpenter"]
        assert [f.text for f in await w.facts(scope, w.carol)] == ["carol is a marathon runner"]
        assert all(f.scope == scope for f in await w.facts(scope, w.alice))
        assert await w.facts(f"guild:{w.beta.id}", w.alice) == []
        assert len(w.json_requests()) == 1  # one call for the whole chunk


@pytest.mark.usefixtures("world_model")
async def test_a_mention_in_a_reply_chain_recalls_exactly_the_people_in_it(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await teach_alpha(w)
        outsider = w.discord.add_user("dave")
        await w.say(w.general, outsider, "I am a beekeeper")
        await w.flush()
        first = await w.say(w.general, w.bob, "Who here likes to travel?")
        second = await w.say(w.general, w.carol, "I run, does that count?", reply_to=int(first["id"]))
        await w.discord.send_message(
            w.general,
            w.alice,
            "what should a carpenter and a marathon runner do in Lisbon?",
            reply_to=int(second["id"]),
            mention_bot=True,
        )
        reply = await w.discord.wait_for_bot_message(w.general, timeout=10)
        assert reply["content"] == "Nice to hear from you!"
        assert reply["message_reference"]["message_id"] is not None
        # The bot's own reply is kept as context for the next extraction, marked as the bot's.
        await eventually(lambda: w.captured(reply["id"]), what="capture of the bot's reply")
        row = w.bot.memory.store.sync.conn.execute(
            "SELECT is_bot, content FROM pending_messages WHERE message_id = ?", (reply["id"],)
        ).fetchone()
        assert tuple(row) == (1, "Nice to hear from you!")
        [request] = w.chat_requests()
        block = block_of(request)
        assert block is not None
        people = {u.get("id"): [f.text for f in u] for u in block if u.tag == "user"}
        assert set(people) == {str(w.alice["id"]), str(w.bob["id"]), str(w.carol["id"])}
        assert "alice lives in Lisbon" in people[str(w.alice["id"])]
        assert people[str(w.bob["id"])] == ["bob works as a carpenter"]
        assert "beekeeper" not in system_text(request)
        assert "background data" in system_text(request)
        turns = request["contents"]
        assert turns[-1]["role"] == "user" and "alice:" in turns[-1]["parts"][-1]["text"]
        assert any("bob: Who here likes to travel?" in p["text"] for t in turns for p in t["parts"])
        # Recall searches for the message being answered first and the turns before it as context, in
        # one embedding request, so two lines of small talk cannot drown the question.
        assert w.query_embeddings()[-1] == [
            "what should a carpenter and a marathon runner do in Lisbon?",
            "Who here likes to travel?\nI run, does that count?",
        ]


async def test_facts_never_cross_guilds_or_into_dms(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await teach_alpha(w)
        beta_general = w.beta.channels["general"]
        await w.discord.send_message(
            beta_general, w.alice, "hello, tell me about Lisbon cats", mention_bot=True
        )
        await w.discord.wait_for_bot_message(beta_general, timeout=10)
        await w.discord.send_dm(w.alice, "what do you know about me, Lisbon, Miso, my cat?")
        await w.discord.wait_for_bot_message(w.discord.dm_channel_id(w.alice), timeout=10)
        requests = w.chat_requests()
        assert len(requests) == 2
        for request in requests:
            text = str(request)
            assert "alice lives in Lisbon" not in text and "Miso" not in system_text(request)
            assert block_of(request) is None
        # The DM itself is remembered in the DM scope only.
        await w.discord.send_dm(w.alice, "I am allergic to peanuts")
        await eventually(lambda: w.bot.memory.store.call(lambda s: s.count_pending("dm") == 1))
        await w.flush()
        assert [f.text for f in await w.facts("dm", w.alice)] == ["alice is allergic to peanuts"]
        assert "peanuts" not in str([f.text for f in await w.facts(f"guild:{w.alpha.id}", w.alice)])


async def test_gemini_failing_on_a_chat_gives_a_short_message_and_an_admin_log_entry(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        log_channel = w.alpha.channels["bot-log"]
        w.bot.memory.guild(str(w.alpha.id))  # default settings
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(log_channel))
        w.gemini.fail_next(500, count=2, kind="stream")  # the first try and its one retry
        await w.discord.send_message(w.general, w.bob, "hey bot, how are you?", mention_bot=True)
        failed = await w.discord.wait_for_bot_message(w.general, timeout=10)
        assert failed["content"] == FAILED_REPLY
        entry = await w.discord.wait_for_bot_message(
            log_channel, predicate=lambda m: "Chat reply failed" in m["content"], timeout=10
        )
        assert "500" in entry["content"] and "test-key" not in entry["content"]
        await w.discord.send_message(w.general, w.bob, "still there?", mention_bot=True)
        answer = await w.discord.wait_for_bot_message(
            w.general, predicate=lambda m: m["content"] == "Nice to hear from you!", timeout=10
        )
        assert answer["content"] == "Nice to hear from you!"


async def test_a_long_answer_is_split_with_fences_intact_and_nothing_can_ping(tmp_path: Path) -> None:
    code = "\n".join(f"    step_{i} = compute({i})  # @everyone" for i in range(60))
    long_answer = (
        "Here is the plan, @everyone and @here and <@&123>:\n\n"
        + ("Some words to explain. " * 60)
        + "\n\n"
        + "```python\ndef plan():\n"
        + code
        + "\n```\n\n"
        + ("More explanation follows here. " * 70)
    )
    assert len(long_answer) > 5000
    async with world(tmp_path) as w:
        w.brain.chat_reply = long_answer
        w.gemini.stream_chunk_size = 700
        await w.discord.send_message(w.general, w.alice, "give me a long plan please", mention_bot=True)

        async def all_parts() -> bool:
            return sum(len(m["content"]) for m in w.discord.bot_messages(w.general)) >= 5000

        await eventually(all_parts, what="all parts of the answer")
        parts = [m["content"] for m in w.discord.bot_messages(w.general)]
        assert len(parts) >= 3 and all(len(p) <= 2000 for p in parts)
        assert all(p.count("```") % 2 == 0 for p in parts)
        joined = "".join(parts)
        assert all(f"step_{i} = compute({i})" in joined for i in range(60))
        sends = [
            r
            for r in w.discord.requests
            if r.method in ("POST", "PATCH") and re.search(r"/channels/\d+/messages", r.path)
        ]
        assert sends
        for request in sends:
            allowed = request.json.get("allowed_mentions")
            assert allowed is not None, request.path
            assert allowed.get("parse") == [] and not allowed.get("roles") and not allowed.get("users")


async def test_deleted_messages_teach_nothing_and_take_their_facts_along(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        scope = f"guild:{w.alpha.id}"
        oops = await w.say(w.general, w.alice, "I am secretly a spy")
        await w.say(w.general, w.alice, "I have a red bicycle")
        await w.discord.delete_message(w.general, int(oops["id"]))
        await eventually(lambda: _not(w.captured(oops["id"])), what="deletion from the buffer")
        await w.flush()
        assert [f.text for f in await w.facts(scope, w.alice)] == ["alice has a red bicycle"]
        assert "spy" not in str([r.json for r in w.gemini.requests])

        source = await w.say(w.general, w.bob, "I play the tuba")
        await w.flush()
        assert [f.text for f in await w.facts(scope, w.bob)] == ["bob plays the tuba"]
        await w.discord.delete_message(w.general, int(source["id"]))

        async def forgotten() -> bool:
            return await w.facts(scope, w.bob) == []

        await eventually(forgotten, what="the fact of the deleted message to be forgotten")


async def _not(check: Any) -> bool:
    return not await check


async def test_a_reply_streams_with_typing_and_spaced_edits(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.brain.chat_reply = " ".join(f"word{i}" for i in range(60))
        w.gemini.stream_chunk_size = 40
        w.gemini.stream_chunk_delay = 0.25  # about 3 seconds of streaming
        await w.discord.send_message(w.general, w.alice, "tell me a story", mention_bot=True)
        final = await w.discord.wait_for_bot_message(
            w.general, lambda m: m["content"].endswith("word59"), timeout=15
        )
        assert final["content"] == w.brain.chat_reply
        typing = [r for r in w.discord.requests if r.method == "POST" and r.path.endswith("/typing")]
        assert typing
        writes = [
            r
            for r in w.discord.requests
            if re.search(rf"/channels/{w.general}/messages(/{final['id']})?$", r.path)
            and r.method in ("POST", "PATCH")
        ]
        assert writes[0].method == "POST" and len(writes) >= 2  # sent early, then edited as text arrived
        gaps = [b.at - a.at for a, b in itertools.pairwise(writes)]
        assert min(gaps) >= 1.4
        # Every write but the last says the reply is still being written; the last edit takes that away.
        contents = [r.json["content"] for r in writes]
        assert all(c.endswith(STREAMING_MARKER) for c in contents[:-1]), contents
        assert contents[-1] == w.brain.chat_reply and STREAMING_MARKER not in contents[-1]
        assert STREAMING_MARKER not in final["content"]
        # What memory keeps of the bot's reply is its words, never the marker.
        await eventually(lambda: w.captured(final["id"]), what="capture of the bot's reply")
        row = w.bot.memory.store.sync.conn.execute(
            "SELECT content FROM pending_messages WHERE message_id = ?", (final["id"],)
        ).fetchone()
        assert row[0] == w.brain.chat_reply


async def test_a_one_piece_answer_is_sent_once_without_the_marker(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.discord.send_message(w.general, w.alice, "hi there", mention_bot=True)
        reply = await w.discord.wait_for_bot_message(w.general, timeout=10)
        assert reply["content"] == "Nice to hear from you!"
        await w.seen(w.general)
        writes = [
            r
            for r in w.discord.requests
            if r.method in ("POST", "PATCH")
            and f"/channels/{w.general}/messages" in r.path
            and r.json
            and r.json.get("content", "").startswith("Nice")
        ]
        assert [r.method for r in writes] == ["POST"]  # the whole answer came at once: nothing to edit


async def test_an_edit_before_the_flush_is_what_gets_learned(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        message = await w.say(w.general, w.carol, "I live in Pariss")
        await w.discord.edit_message(w.general, int(message["id"]), "I live in Paris")

        async def edited() -> bool:
            await w.bot.memory.capture_buffer.wait_written()
            row = w.bot.memory.store.sync.conn.execute(
                "SELECT content FROM pending_messages WHERE message_id = ?", (message["id"],)
            ).fetchone()
            return row is not None and row[0] == "I live in Paris"

        await eventually(edited, what="the edit in the buffer")
        await w.flush()
        assert [f.text for f in await w.facts(f"guild:{w.alpha.id}", w.carol)] == ["carol lives in Paris"]


def people_in(request: dict[str, Any]) -> set[str]:
    block = block_of(request)
    return set() if block is None else {u.get("id", "") for u in block if u.tag == "user"}


async def test_a_mention_brings_in_someones_facts_only_for_who_may_see_them(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await teach_alpha(w)
        quiet = w.alpha.channels["random"]  # no history: only the mention links carol to the talk
        question = f"is <@{w.carol['id']}> a marathon runner?"
        await w.discord.send_message(quiet, w.bob, question, mention_bot=True)
        await w.discord.wait_for_bot_message(quiet, timeout=10)
        await w.discord.send_message(quiet, w.alice, question, mention_bot=True)
        await w.discord.wait_for_bot_message(quiet, lambda m: len(w.chat_requests()) == 2, timeout=10)
        member_asks, admin_asks = w.chat_requests()
        assert str(w.carol["id"]) not in people_in(member_asks)  # bob may not see her facts with /facts
        assert "marathon" not in system_text(member_asks)
        assert str(w.carol["id"]) in people_in(admin_asks)  # alice manages the server
        assert "carol is a marathon runner" in system_text(admin_asks)


async def test_in_dms_only_the_authors_own_facts_are_recalled_whoever_is_mentioned(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.discord.send_dm(w.bob, "I am a beekeeper")
        await eventually(lambda: w.bot.memory.store.call(lambda s: s.count_pending("dm") == 1))
        await w.flush()
        assert [f.text for f in await w.facts("dm", w.bob)] == ["bob is a beekeeper"]
        await w.discord.send_dm(w.alice, f"is <@{w.bob['id']}> a beekeeper?")
        await w.discord.wait_for_bot_message(w.discord.dm_channel_id(w.alice), timeout=10)
        request = w.chat_requests()[-1]  # bob's own DM got an answer first
        assert f"alice: is @{w.bob['username']} a beekeeper?" in str(request["contents"])
        assert "beekeeper" not in system_text(request)
        assert str(w.bob["id"]) not in people_in(request)


async def test_a_reply_to_a_message_kept_out_of_memory_is_kept_out_too(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.bot.memory.set_opt_out(f"guild:{w.alpha.id}", str(w.bob["id"]), True)
        await w.discord.send_message(w.general, w.bob, "I live at 1 Elm Street", mention_bot=True)
        to_bob = await w.discord.wait_for_bot_message(w.general, timeout=10)
        secret = await w.discord.send_message(
            w.general, w.alice, "!nomem my PIN is 1234, keep it", mention_bot=True
        )
        to_alice = await w.discord.wait_for_bot_message(
            w.general, lambda m: m["message_reference"]["message_id"] == secret["id"], timeout=10
        )
        await w.seen(w.general)
        for message in (secret, to_bob, to_alice):
            assert not await w.captured(message["id"])
        # Carol's own message is captured, but the reply to it may repeat what bob and alice kept out.
        said = await w.discord.send_message(w.general, w.carol, "I am a marathon runner", mention_bot=True)
        to_carol = await w.discord.wait_for_bot_message(
            w.general, lambda m: m["id"] not in (to_bob["id"], to_alice["id"]), timeout=10
        )
        await w.seen(w.general)
        assert await w.captured(said["id"]) and not await w.captured(to_carol["id"])
        # In a conversation with nothing kept out, the bot's reply is kept as context.
        quiet = w.alpha.channels["random"]
        await w.discord.send_message(quiet, w.carol, "I run marathons", mention_bot=True)
        in_quiet = await w.discord.wait_for_bot_message(quiet, timeout=10)
        await eventually(lambda: w.captured(in_quiet["id"]), what="capture of the reply to carol")


async def test_an_edit_that_adds_the_marker_takes_the_message_out_of_memory(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        message = await w.say(w.general, w.carol, "I live in Paris")
        await w.discord.edit_message(
            w.general, int(message["id"]), f"<@{w.discord.bot_id}> !nomem I live in Paris"
        )
        await eventually(lambda: _not(w.captured(message["id"])), what="the message leaving the buffer")


async def _not(check: Any) -> bool:
    return not await check


async def test_a_recall_that_hangs_gives_way_to_an_answer_without_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(tmp_path) as w:
        monkeypatch.setattr(reply_use_case, "RECALL_DEADLINE_SECONDS", 0.5)  # the reply use case's deadline
        await teach_alpha(w)
        w.gemini.hang_next(kind="embed")  # the query embedding never answers (client timeout is 5 s)
        started = asyncio.get_running_loop().time()
        await w.discord.send_message(w.general, w.alice, "where do I live?", mention_bot=True)
        reply = await w.discord.wait_for_bot_message(w.general, timeout=4)
        assert asyncio.get_running_loop().time() - started < 4
        assert reply["content"] == "Nice to hear from you!"
        [request] = w.chat_requests()
        assert block_of(request) is None
        assert w.bot.memory.recall_failures == 1
        typing = [r for r in w.discord.requests if r.method == "POST" and r.path.endswith("/typing")]
        assert typing and typing[0].at < started + 0.5  # people see the bot typing while it remembers


async def test_a_reply_discord_refuses_is_logged_for_admins_and_the_bot_keeps_going(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        log_channel = w.alpha.channels["bot-log"]
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(log_channel))
        w.discord.fail_route("POST", rf"/channels/{w.general}/messages$", 403, count=1)
        await w.discord.send_message(w.general, w.bob, "hey bot, how are you?", mention_bot=True)
        entry = await w.discord.wait_for_bot_message(
            log_channel, predicate=lambda m: "Could not send a reply" in m["content"], timeout=10
        )
        assert "403" in entry["content"]
        assert len(w.gemini.of_kind("stream")) == 1  # one chat request, not retried into the refusal
        await w.discord.send_message(w.general, w.bob, "still there?", mention_bot=True)
        answer = await w.discord.wait_for_bot_message(w.general, timeout=10)
        assert answer["content"] == "Nice to hear from you!"


async def test_while_shutting_down_messages_and_commands_are_turned_away_politely(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.bot._closing = True  # what close() sets first
        try:
            await w.discord.send_message(w.general, w.bob, "I live in Oslo", mention_bot=True)
            inter = await w.discord.invoke_command(w.bob, "memory", channel_id=w.general, subcommand="status")
            body = await inter.wait_response()
            assert body["data"]["content"] == RESTARTING and body["data"]["flags"] & 64
            await asyncio.sleep(0.5)
            assert w.chat_requests() == []
            await w.bot.memory.capture_buffer.wait_written()
            assert w.bot.memory.store.sync.conn.execute(
                "SELECT count(*) FROM pending_messages"
            ).fetchone() == (0,)
        finally:
            w.bot._closing = False


IMAGE = {
    "id": "1",
    "filename": "cat.png",
    "size": 1024,
    "url": "https://cdn.example/cat.png",
    "proxy_url": "https://cdn.example/cat.png",
    "content_type": "image/png",
}


async def test_mentioning_the_bots_role_is_answered_like_mentioning_the_bot(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.discord.send_message(w.general, w.bob, f"<@&{w.alpha.bot_role_id}> how are you?")
        reply = await w.discord.wait_for_bot_message(w.general, timeout=10)
        assert reply["content"] == "Nice to hear from you!"


async def test_a_message_without_text_gets_a_short_note_or_nothing_but_never_a_wrong_answer(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        dm = w.discord.dm_channel_id(w.alice)
        await w.discord.send_dm(w.alice, "", stickers=["wave"])
        note = await w.discord.wait_for_bot_message(dm, timeout=10)
        assert note["content"] == NO_TEXT_REPLY
        # "@Bot" and a sticker in a server: the mention is not words either. (A photo is answered: the
        # model sees it, tests/e2e/test_e2e_attachments.py.)
        await w.discord.send_message(w.general, w.bob, "", stickers=["wave"], mention_bot=True)
        note = await w.discord.wait_for_bot_message(w.general, timeout=10)
        assert note["content"] == NO_TEXT_REPLY
        assert w.chat_requests() == []
        # In an auto-reply channel an image alone is not answered at all.
        channel = w.alpha.channels["random"]
        w.bot.settings = dataclasses.replace(w.bot.settings, auto_reply_channel_ids=frozenset({channel}))
        await w.discord.send_message(channel, w.bob, "what a nice day")
        await w.discord.wait_for_bot_message(channel, timeout=10)
        await w.discord.send_message(channel, w.bob, "", attachments=[IMAGE])
        await w.discord.send_message(channel, w.bob, "and now?")  # handled after the image, in order
        await w.discord.wait_for_bot_message(channel, lambda m: len(w.chat_requests()) >= 2, timeout=10)
        await asyncio.sleep(0.3)
        assert len(w.chat_requests()) == 2  # "what a nice day" and "and now?", nothing for the image
        bot_id = str(w.discord.bot_id)
        assert len([m for m in w.discord.channel_messages(channel) if m["author"]["id"] == bot_id]) == 2


async def test_a_flush_that_ends_during_shutdown_still_reaches_the_admin_log(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        log_channel = w.alpha.channels["bot-log"]
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(log_channel))
        await w.say(w.general, w.alice, "I live in Lisbon")
        w.gemini.latency = 0.8  # the flush is still waiting on Gemini when the bot is told to close
        flushing = asyncio.create_task(w.flush())
        await eventually(lambda: _true(w.bot.memory.capture_buffer.flushes_running > 0), what="a flush")
        standin = w.discord
    await flushing
    posted = [m["content"] for m in standin.channel_messages(log_channel)]
    assert any("Learned from 1 message" in p for p in posted), posted
    assert any("shutting down" in p for p in posted)


async def _true(value: bool) -> bool:
    return value


async def test_the_author_of_a_pin_or_join_notice_is_not_in_the_conversation(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.bot.memory.import_facts(
            [NewFact(f"guild:{w.alpha.id}", str(w.alice["id"]), "alice", "alice keeps a zebrafish", [])]
        )
        quiet = w.alpha.channels["random"]
        await w.discord.send_message(quiet, w.alice, "", message_type=6)  # "alice pinned a message"
        await w.discord.send_message(quiet, w.alice, "", message_type=7)  # "alice joined"
        await w.discord.send_message(quiet, w.bob, "tell me about zebrafish", mention_bot=True)
        await w.discord.wait_for_bot_message(quiet, timeout=10)
        [request] = w.chat_requests()
        assert "zebrafish" not in system_text(request) and people_in(request) == set()


async def test_a_thread_the_bot_never_cached_is_still_known_as_part_of_an_ignored_channel(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        parent = w.alpha.channels["random"]
        await w.bot.memory.set_channel_ignored(str(w.alpha.id), str(parent), True)
        late = w.discord._snowflake()  # a thread the gateway never told the bot about
        w.discord._add_channel(thread_payload(late, w.alpha.id, parent, w.alice["id"], "late"), w.alpha.id)
        message = await w.discord.send_message(late, w.alice, "I am secretly moving to Tromso")
        await w.seen(w.general)
        assert not await w.captured(message["id"])
        assert any(r.method == "GET" and r.path.endswith(f"/channels/{late}") for r in w.discord.requests)


async def test_a_name_with_a_lone_surrogate_is_cleaned_and_never_jams_capture(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        scope = f"guild:{w.alpha.id}"
        odd = w.discord.add_user("Sur\ud800rogate")
        first = await w.say(w.general, odd, "I live in Oslo")
        await w.say(w.general, w.bob, "I work as a carpenter")  # captured after it: the writer still runs
        row = w.bot.memory.store.sync.conn.execute(
            "SELECT author_name FROM pending_messages WHERE message_id = ?", (first["id"],)
        ).fetchone()
        assert row[0] == "Surrogate"
        await w.flush()
        assert [f.text for f in await w.facts(scope, odd)] == ["Surrogate lives in Oslo"]
        assert [f.text for f in await w.facts(scope, w.bob)] == ["bob works as a carpenter"]
        await w.discord.send_message(w.general, odd, "what do you know about me?", mention_bot=True)
        reply = await w.discord.wait_for_bot_message(w.general, timeout=10)
        assert reply["content"] == "Nice to hear from you!"


@pytest.mark.parametrize(
    "answer",
    [
        "{}",
        '{"foo": 1}',
        '{"error": {"code": 500, "message": "internal"}}',
        '{"result": {"facts": [{"user_id": "1", "text": "alice lives in Lisbon"}]}}',
        # items in no shape a model commonly uses ("fact" for "text" is read since issue 23)
        '{"facts": [{"who": "alice", "what": "lives in Lisbon"}, {"text": null}]}',
    ],
)
async def test_an_extraction_answer_off_the_schema_is_unusable_not_nothing_durable(
    tmp_path: Path, answer: str
) -> None:
    async with world(tmp_path) as w:
        log_channel = w.alpha.channels["bot-log"]
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(log_channel))
        w.gemini.generate_handler = lambda body: (
            answer if system_text(body).startswith(EXTRACT_TASK) else w.brain(body)
        )
        said = await w.say(w.general, w.alice, "I live in Lisbon")
        for _ in range(MAX_BAD_ANSWERS - 1):  # retried, and the message kept, each time
            with pytest.raises(ModelBadAnswer):
                await w.bot.memory.flush_channel(str(w.general))
            assert await w.captured(said["id"])
        assert len(w.gemini.of_kind("generate")) == 2 * (MAX_BAD_ANSWERS - 1)  # gemini_max_retries=1
        await w.discord.wait_for_bot_message(
            log_channel,
            predicate=lambda m: "Gemini (gemini-flash-lite-latest) extract failed" in m["content"],
            timeout=10,
        )
        assert await w.bot.memory.flush_channel(str(w.general)) == 0  # the last attempt: skipped
        assert not await w.captured(said["id"])
        await w.discord.wait_for_bot_message(
            log_channel, predicate=lambda m: "Gave up on 1 message" in m["content"], timeout=10
        )
        assert await w.facts(f"guild:{w.alpha.id}", w.alice) == []


async def test_bidirectional_isolates_reach_neither_the_extraction_prompt_nor_stored_facts(
    tmp_path: Path,
) -> None:
    isolates = "\u2066\u2067\u2068\u2069"

    def extract_with_isolates(body: dict[str, Any]) -> str:
        if not system_text(body).startswith(EXTRACT_TASK):
            return w.brain(body)
        author = read_chunk(last_user_text(body))["speakers"][0]
        return json.dumps({"facts": [{"speaker": author, "text": "alice lives in \u2067Lisbon\u2069"}]})

    async with world(tmp_path) as w:
        w.gemini.generate_handler = extract_with_isolates
        await w.say(w.general, w.alice, "I live in \u2066Lisbon\u2069 \u2068near the river\u2069")
        await w.flush()
        [request] = w.gemini.of_kind("generate")
        assert "Lisbon" in last_user_text(request.json)
        assert not set(isolates) & set(last_user_text(request.json))
        assert [f.text for f in await w.facts(f"guild:{w.alpha.id}", w.alice)] == ["alice lives in Lisbon"]


async def test_a_reply_of_only_blanks_and_zero_width_characters_counts_as_empty(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.brain.chat_reply = " \u200b\u2060\n\u200d\ufeff\u2066 "
        await w.discord.send_message(w.general, w.bob, "say nothing", mention_bot=True)
        reply = await w.discord.wait_for_bot_message(w.general, timeout=10)
        assert reply["content"] == FAILED_REPLY


async def test_a_huge_message_is_cut_and_the_whole_chat_prompt_stays_bounded(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        limits = w.bot.settings
        for i in range(10):
            await w.say(w.general, w.carol, f"chapter {i}: " + "more words here " * 240)
        await w.say(w.general, w.bob, "I wrote a novel: " + "very long words " * 6_400)  # 102,417 characters
        await w.discord.send_message(w.general, w.alice, "what do you all think?", mention_bot=True)
        await w.discord.wait_for_bot_message(w.general, timeout=10)
        [request] = w.chat_requests()
        parts = [p["text"] for turn in request["contents"] for p in turn["parts"]]
        assert sum(map(len, parts)) + len(system_text(request)) <= limits.chat_prompt_max_chars
        lines = [line for p in parts for line in p.split("\n")]
        assert all(len(line) <= limits.chat_turn_max_chars + len("carol: ") for line in lines)
        assert lines[-2].startswith("bob: I wrote a novel") and lines[-1].endswith("what do you all think?")
        assert "chapter 9:" in lines[-3] and not any(
            "chapter 0:" in line for line in lines
        )  # oldest left out


def a_thousand_facts_each(body: dict[str, Any]) -> str:
    """An extraction answer of 3,000 distinct facts: a thousand for each of the chunk's speakers."""
    speakers = read_chunk(last_user_text(body))["speakers"]
    return json.dumps(
        {
            "facts": [
                {"speaker": s, "text": f"{s} knows word{i} and word{i * 7919 % 104729}"}
                for s in speakers
                for i in range(1000)
            ]
        }
    )


@contextlib.contextmanager
def collector_time_on_this_thread() -> Iterator[Callable[[], float]]:
    """The CPU seconds the garbage collector has spent on this thread since entering, as a callable."""
    thread, spent, started = threading.get_ident(), [0.0], [0.0]

    def on_collection(phase: str, _info: dict[str, int]) -> None:
        if threading.get_ident() != thread:
            return
        if phase == "start":
            started[0] = time.thread_time()
        else:
            spent[0] += time.thread_time() - started[0]

    gc.callbacks.append(on_collection)
    try:
        yield lambda: spent[0]
    finally:
        gc.callbacks.remove(on_collection)


async def test_a_huge_extraction_answer_is_capped_and_never_blocks_the_event_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with world(tmp_path) as w:
        w.gemini.ignores_max_tokens = True  # the bot's own caps hold where an endpoint's limit does not
        w.gemini.generate_handler = lambda body: (
            a_thousand_facts_each(body) if system_text(body).startswith(EXTRACT_TASK) else w.brain(body)
        )
        for person in (w.alice, w.bob, w.carol):
            await w.say(w.general, person, "I know many words")
        # The loop thread's CPU time between beats, which a busy machine cannot inflate, less the garbage
        # collector's: a pass over the whole heap of a test process that has run hundreds of tests is
        # the process's, not the bot's work.
        busy: list[float] = []
        with collector_time_on_this_thread() as collecting:

            async def heartbeat() -> None:
                while True:
                    before = time.thread_time() - collecting()
                    await asyncio.sleep(0.01)
                    busy.append(time.thread_time() - collecting() - before)

            beat = asyncio.create_task(heartbeat())
            with caplog.at_level(logging.WARNING, logger="bot.memory.extract"):
                await w.flush()
            beat.cancel()
        scope = f"guild:{w.alpha.id}"
        counts = [len(await w.facts(scope, person)) for person in (w.alice, w.bob, w.carol)]
        assert counts == [
            MAX_FACTS_PER_SPEAKER,
            MAX_FACTS_PER_SPEAKER,
            MAX_FACTS_PER_CHUNK - 2 * MAX_FACTS_PER_SPEAKER,
        ]
        assert f"dropped {3000 - MAX_FACTS_PER_CHUNK} of 3000" in caplog.text
        assert max(busy) < 0.2, f"the event loop was blocked for {max(busy):.2f}s of CPU"


async def test_shutdown_stays_within_ten_seconds_while_a_huge_answer_is_being_learned(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        w.gemini.ignores_max_tokens = True  # the bot's own caps hold where an endpoint's limit does not
        w.gemini.generate_handler = lambda body: (
            a_thousand_facts_each(body) if system_text(body).startswith(EXTRACT_TASK) else w.brain(body)
        )
        for person in (w.alice, w.bob, w.carol):
            await w.say(w.general, person, "I know many words")
        flushing = asyncio.create_task(w.flush())
        await eventually(lambda: _true(bool(w.gemini.of_kind("generate"))), what="the extraction request")
        started = time.monotonic()
        await w.bot.close()
        assert time.monotonic() - started < 10
        await asyncio.gather(flushing, return_exceptions=True)


async def _true(value: bool) -> bool:
    return value


async def test_rapid_mentions_from_one_person_cost_a_few_calls_and_one_short_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(tmp_path, chat_cooldown_replies=2, chat_cooldown_seconds=60) as w:
        # The cog's module as the bot loaded it (discord.py loads an extension as a module of its own).
        monkeypatch.setattr(sys.modules["bot.discord_bot.cogs.chat"], "COOLDOWN_NOTICE_SECONDS", 1.0)
        for i in range(15):
            await w.discord.send_message(w.general, w.bob, f"question {i}?", mention_bot=True)

        async def settled() -> bool:
            return len(w.discord.bot_messages(w.general)) >= 3

        await eventually(settled, what="two answers and a notice")
        await w.seen(w.general)
        await asyncio.sleep(0.3)
        contents = [m["content"] for m in w.discord.bot_messages(w.general)]
        notices = [c for c in contents if c != "Nice to hear from you!"]
        assert len(contents) == 3 and len(notices) == 1 and "slow down" in notices[0]
        assert len(w.chat_requests()) == 2

        async def notice_gone() -> bool:  # it was for bob, not for everyone reading the channel
            shown = [m["content"] for m in w.discord.bot_messages(w.general)]
            return shown == [c for c in contents if c not in notices]

        await eventually(notice_gone, timeout=5, what="the notice deleting itself")
        await w.discord.send_message(w.general, w.carol, "and me?", mention_bot=True)  # someone else
        await eventually(lambda: _true(len(w.chat_requests()) == 3), what="carol's answer")


async def test_a_rejected_gemini_key_is_told_to_admins_once_and_users_hear_the_bot_is_misconfigured(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        log_channel = w.alpha.channels["bot-log"]
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(log_channel))
        w.gemini.api_key = "the-key-google-knows"  # the bot's test-key is now rejected, as a revoked key is
        for text in ("hello?", "anyone there?"):
            await w.discord.send_message(w.general, w.bob, text, mention_bot=True)

        async def answered() -> bool:
            return len(w.discord.bot_messages(w.general)) == 2

        await eventually(answered, what="two answers")
        assert [m["content"] for m in w.discord.bot_messages(w.general)] == [MISCONFIGURED_REPLY] * 2
        await w.say(w.general, w.alice, "I live in Lisbon")
        with pytest.raises(ModelError):
            await w.flush()
        await w.discord.wait_for_bot_message(
            log_channel, predicate=lambda m: "GEMINI_API_KEY" in m["content"], timeout=10
        )
        await asyncio.sleep(0.5)  # anything else the log would say has been sent by now
        told = [
            line
            for m in w.discord.bot_messages(log_channel)
            for line in m["content"].splitlines()
            if "GEMINI_API_KEY" in line
        ]
        assert len(told) == 1 and "test-key" not in told[0]


@pytest.mark.usefixtures("world_model")
async def test_a_runaway_answer_is_cut_to_a_few_messages_and_every_chat_request_carries_a_limit(
    tmp_path: Path,
) -> None:
    """A model that loops (or is told to "repeat this forever") and an endpoint that ignores the output
    limit: the reply stops at CHAT_MAX_OUTPUT_TOKENS' characters, in a few messages, and says it was cut."""
    async with world(tmp_path) as w:
        w.brain.chat_reply = "again and again " * 2500  # 40,000 characters
        w.gemini.stream_chunk_size = 900
        asked = await w.discord.send_message(w.general, w.alice, "repeat this forever", mention_bot=True)

        async def finished() -> bool:
            shown = [m["content"] for m in w.discord.bot_messages(w.general)]
            return bool(shown) and shown[-1].endswith("(cut: the answer ran too long)")

        await eventually(finished, what="the cut reply", timeout=30)
        await asyncio.sleep(1.0)  # nothing more comes
        parts = [m["content"] for m in w.discord.bot_messages(w.general)]
        assert len(parts) <= 4 and sum(len(p) for p in parts) <= 1500 * 4 + 100
        assert all(len(p) <= 2000 for p in parts)
        [request] = w.chat_requests()
        # Gemini's limit leaves its thinking room on top; a local OpenAI-compatible server's is the reply's.
        thinking = THINKING_TOKENS if w.provider == "gemini" else 0
        assert request["generationConfig"]["maxOutputTokens"] == 1500 + thinking
        assert int(asked["id"]) > 0


async def test_ten_mentions_under_a_storm_of_429s_are_all_answered_once(tmp_path: Path) -> None:
    """Discord answers sends with 429 more times in a row than discord.py retries (5): each reply is sent
    again past the storm, in order, and none twice."""
    async with world(tmp_path) as w:
        w.discord.fail_route("POST", r"/channels/\d+/messages$", 429, count=12)
        people = [w.discord.add_user(f"asker{n}") for n in range(10)]  # one each: no cooldown applies
        asked = [
            await w.discord.send_message(w.general, person, f"question number {n}", mention_bot=True)
            for n, person in enumerate(people)
        ]

        def replies_to(message: dict[str, Any]) -> list[dict[str, Any]]:
            return [
                m
                for m in w.discord.bot_messages(w.general)
                if (m.get("message_reference") or {}).get("message_id") == message["id"]
            ]

        async def all_answered() -> bool:
            return all(replies_to(m) for m in asked)

        await eventually(all_answered, what="every mention answered", timeout=60)
        await asyncio.sleep(1.0)
        assert [len(replies_to(m)) for m in asked] == [1] * 10


async def test_a_partial_reply_whose_edits_keep_failing_never_keeps_its_writing_marker(
    tmp_path: Path,
) -> None:
    """The bot lost the right to edit its reply halfway (every edit a 403): the part already sent must not
    say it is still being written; it is deleted when it cannot be edited."""
    async with world(tmp_path) as w:
        w.brain.chat_reply = "a long answer that streams in pieces " * 40
        w.gemini.stream_chunk_size = 200
        w.discord.fail_route("PATCH", r"/channels/\d+/messages/\d+$", 403, count=None)
        await w.discord.send_message(w.general, w.alice, "tell me everything", mention_bot=True)

        async def settled() -> bool:
            return any(r.method == "DELETE" and r.status is not None for r in w.discord.requests)

        await eventually(settled, what="the marked part deleted", timeout=30)
        assert not any(m["content"].endswith(STREAMING_MARKER) for m in w.discord.bot_messages(w.general))


@pytest.mark.usefixtures("world_model")
async def test_a_lookup_with_a_5000_digit_id_still_gets_a_reply(tmp_path: Path) -> None:
    """A model can be made to write absurd arguments: a search_memory call with a 5,000-digit id (as text
    and as a number) is answered, and the reply arrives."""
    async with world(tmp_path) as w:
        await teach_alpha(w)
        brain = w.brain

        def odd_lookup(body: dict[str, Any]) -> str | list[dict[str, Any]]:
            if not system_text(body).startswith("You are") or any(
                "functionResponse" in p for c in body.get("contents", []) for p in c.get("parts") or []
            ):
                return brain(body) if not system_text(body).startswith("You are") else "I found nothing more."
            args = {"person": "bob", "ids": "9" * 5000, "query": "x" * 20_000}
            return [{"functionCall": {"name": "search_memory", "args": args}}]

        w.gemini.generate_handler = odd_lookup
        asked = await w.discord.send_message(
            w.general, w.alice, "do you remember bob's job?", mention_bot=True
        )
        reply = await w.discord.wait_for_bot_message(
            w.general,
            lambda m: (m.get("message_reference") or {}).get("message_id") == asked["id"],
            timeout=15,
        )
        assert "I found nothing more." in reply["content"]


@pytest.mark.usefixtures("world_model")
async def test_the_admin_log_names_the_provider_in_use_never_gemini_on_another(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        log_channel = w.alpha.channels["bot-log"]
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(log_channel))
        w.gemini.fail_next(500, count=10, kind="stream" if w.provider == "openai" else "generate")
        w.gemini.fail_next(500, count=10, kind="generate")
        await w.say(w.general, w.alice, "I live in Lisbon")
        with pytest.raises(ModelError):
            await w.bot.memory.flush_channel(str(w.general))
        named = "Gemini" if w.provider == "gemini" else "127.0.0.1"
        posted = await w.discord.wait_for_bot_message(
            log_channel, predicate=lambda m: "extract failed" in m["content"], timeout=10
        )
        assert named in posted["content"]
        if w.provider == "openai":
            assert "Gemini" not in "\n".join(m["content"] for m in w.discord.bot_messages(log_channel))
