"""End-to-end: a fact serves only the audience it was told to (staff channels, private threads,
permission changes, DMs), through the real discord.py and google-genai against the stand-ins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.discord_standin.model import VIEW_CHANNEL, overwrite
from tests.e2e import World, world
from tests.fake_brain import system_text

pytestmark = pytest.mark.e2e


async def ask(w: World, channel_id: int, author: dict[str, Any], text: str) -> str:
    """Mention the bot and return the system instruction its reply was written with."""
    before = len(w.brain.chat_requests)
    sent = await w.discord.send_message(channel_id, author, text, mention_bot=True)
    await w.discord.wait_for_bot_message(
        channel_id, lambda m: (m.get("message_reference") or {}).get("message_id") == sent["id"], timeout=10
    )
    assert len(w.brain.chat_requests) == before + 1
    return system_text(w.brain.chat_requests[-1])


async def staff_only(w: World) -> int:
    """A #staff-only channel hidden from @everyone, open to a staff role that bob has (and the bot)."""
    staff_role = await w.discord.add_role(w.alpha, "staff")
    await w.discord.set_roles(w.alpha, w.bob, [staff_role])
    return await w.discord.add_text_channel(
        w.alpha,
        "staff-only",
        overwrites=[
            overwrite(w.alpha.id, deny=VIEW_CHANNEL),
            overwrite(staff_role, allow=VIEW_CHANNEL),
            overwrite(w.alpha.bot_role_id, allow=VIEW_CHANNEL),
        ],
    )


async def test_words_from_a_hidden_staff_channel_never_reach_a_public_reply(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        staff = await staff_only(w)
        await w.say(staff, w.bob, "I live in Oslo. My project is Falcon.")
        await w.say(w.general, w.bob, "I like green tea. See you later")
        await w.flush()
        scope = f"guild:{w.alpha.id}"
        assert {f.text for f in await w.facts(scope, w.bob)} == {
            "bob lives in Oslo",
            "bob's project is Falcon",
            "bob likes green tea",
        }
        public = await ask(w, w.general, w.alice, "what do you know about bob? Oslo, Falcon, tea?")
        assert "green tea" in public
        assert "Oslo" not in public.split("<background_facts>")[1]
        assert "Falcon" not in public
        private = await ask(w, staff, w.bob, "what do you know about me? Oslo, Falcon, tea?")
        assert "bob lives in Oslo" in private and "Falcon" in private and "green tea" in private


async def test_opening_or_closing_a_channel_changes_what_replies_may_use(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        staff = await staff_only(w)
        random = w.alpha.channels["random"]
        await w.say(staff, w.bob, "I live in Oslo")
        await w.say(random, w.bob, "I play the cello")
        await w.flush()
        before = await ask(w, w.general, w.bob, "remind me: Oslo? cello?")
        assert "cello" in before and "Oslo" not in before.split("<background_facts>")[1]
        # The admins open #staff-only to everyone and close #random to all but staff.
        await w.discord.set_overwrites(staff, [])
        await w.discord.set_overwrites(random, [overwrite(w.alpha.id, deny=VIEW_CHANNEL)])
        after = await ask(w, w.general, w.bob, "remind me: Oslo? cello?")
        block = after.split("<background_facts>")[1]
        assert "bob lives in Oslo" in block and "cello" not in block


async def test_a_private_thread_keeps_its_words_to_its_members(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        thread = await w.discord.add_thread(
            w.alpha, w.general, "bob-and-alice", private=True, members=[w.bob, w.alice]
        )
        await w.say(thread, w.bob, "I live in Bergen")
        await w.say(w.general, w.bob, "I like chess")
        await w.flush()
        facts = {f.text: f for f in await w.facts(f"guild:{w.alpha.id}", w.bob)}
        [source] = facts["bob lives in Bergen"].sources
        assert source.origin is not None and source.origin.private_thread
        outside = await ask(w, w.general, w.bob, "Bergen? chess?")
        assert "chess" in outside and "Bergen" not in outside.split("<background_facts>")[1]
        inside = await ask(w, thread, w.bob, "Bergen? chess?")
        assert "bob lives in Bergen" in inside and "chess" in inside


async def test_the_public_thread_of_a_channel_shares_its_audience(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        assert w.alpha.thread_id is not None
        await w.say(w.alpha.thread_id, w.bob, "I live in Turku")
        await w.flush()
        reply = await ask(w, w.general, w.bob, "Turku?")
        assert "bob lives in Turku" in reply
