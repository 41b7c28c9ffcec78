"""Through the wire: the sign on a reply that used memory and what it shows its asker, people's own
settings (/memory settings) and the channels an admin sets the bot to answer in without a mention."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from bot.discord_bot.discord_text import STREAMING_MARKER
from bot.discord_bot.error_replies import NEED_MANAGE_SERVER
from bot.discord_bot.ui.used_memories import LABEL, NONE_LEFT, NOT_THE_ASKER
from standins.brain import system_text
from standins.discord.model import VIEW_CHANNEL, overwrite
from tests.e2e.world import World, eventually, world

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("world_database")]

EPHEMERAL = 64


def signs(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The buttons of a message."""
    return [c for row in message.get("components") or [] for c in row.get("components") or []]


async def ask(
    w: World, channel_id: int, user: dict[str, Any], text: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Mention the bot; its finished reply, and the trigger."""
    trigger = await w.discord.send_message(channel_id, user, text, mention_bot=True)
    reply = await w.discord.wait_for_bot_message(
        channel_id,
        lambda m: (
            str((m.get("message_reference") or {}).get("message_id")) == str(trigger["id"])
            and bool(m["content"])
            and not m["content"].endswith(STREAMING_MARKER)
        ),
        timeout=10,
    )
    return reply, trigger


async def press(w: World, user: dict[str, Any], message: dict[str, Any], custom_id: str) -> dict[str, Any]:
    """Press a button; the data of the bot's answer, which is always private."""
    body = await (await w.discord.click_button(user, message, custom_id)).wait_response()
    assert body["type"] == 4 and body["data"]["flags"] & EPHEMERAL, body
    data: dict[str, Any] = body["data"]
    return data


async def settings(w: World, user: dict[str, Any], **options: Any) -> str:
    inter = await w.discord.invoke_command(
        user, "memory", subcommand="settings", channel_id=w.general, options=options
    )
    body = await inter.wait_response()
    assert body["data"]["flags"] & EPHEMERAL
    content: str = body["data"]["content"]
    return content


async def lisbon(w: World) -> int:
    """alice says where she lives in #general; the id of the fact learned."""
    await w.say(w.general, w.alice, "I live in Lisbon")
    await w.flush()
    [fact] = await w.facts(f"guild:{w.alpha.id}", w.alice)
    assert fact.text == "alice lives in Lisbon"
    return fact.id


# ---- the sign and what it shows ------------------------------------------------------------------------------


async def test_a_reply_that_used_memory_shows_a_sign_that_tells_its_asker_alone_what_it_used(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        fact_id = await lisbon(w)
        reply, trigger = await ask(w, w.general, w.alice, "do you remember where I live? Lisbon?")
        [button] = signs(reply)
        assert (button["label"], button["custom_id"]) == (LABEL, f"memories:{trigger['id']}")
        assert button["style"] == 2  # grey: a quiet sign
        shown = await press(w, w.alice, reply, button["custom_id"])
        assert f"#{fact_id} · " in shown["content"] and "alice lives in Lisbon" in shown["content"]
        assert f"said in <#{w.general}>" in shown["content"]  # where it was learned
        refused = await press(w, w.bob, reply, button["custom_id"])
        assert refused["content"] == NOT_THE_ASKER
        # Where nothing is remembered (Beta), the reply carries no sign.
        beta_reply, _ = await ask(w, w.beta.channels["general"], w.alice, "do you remember where I live?")
        assert signs(beta_reply) == []


async def test_what_a_reply_used_is_shown_only_as_far_as_its_place_may_show_it_now(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await lisbon(w)
        random = w.alpha.channels["random"]
        reply, trigger = await ask(w, random, w.alice, "where do I live? Lisbon?")
        assert "alice lives in Lisbon" in system_text(w.chat_requests()[-1])
        custom_id = f"memories:{trigger['id']}"
        assert "alice lives in Lisbon" in (await press(w, w.alice, reply, custom_id))["content"]
        # #general closes to everyone but the bot: a fact said there no longer serves #random's readers.
        await w.discord.set_overwrites(
            w.general,
            [overwrite(w.alpha.id, deny=VIEW_CHANNEL), overwrite(w.alpha.bot_role_id, allow=VIEW_CHANNEL)],
        )

        async def hidden() -> bool:
            return (await press(w, w.alice, reply, custom_id))["content"] == NONE_LEFT

        await eventually(hidden, what="the fact hidden from the view")


# ---- /memory settings --------------------------------------------------------------------------------------


async def test_memory_off_for_replies_keeps_a_persons_facts_out_of_the_prompt_but_still_learns(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await lisbon(w)
        answer = await settings(w, w.alice, use_in_replies=False)
        assert "Use what I remember about you in replies: **off**" in answer
        status = await w.discord.invoke_command(w.alice, "memory", subcommand="status", channel_id=w.general)
        assert (
            "not to use what I remember about you in replies"
            in (await status.wait_response())["data"]["content"]
        )
        reply, _ = await ask(w, w.general, w.alice, "where do I live? Lisbon?")
        assert "alice lives in Lisbon" not in system_text(w.chat_requests()[-1])
        assert signs(reply) == []
        # bob's reply in the same conversation leaves her out too, while his own facts are used.
        await w.say(w.general, w.bob, "I work as a carpenter")
        await w.flush()
        await ask(w, w.general, w.bob, "what do you know about me and alice? Lisbon? carpenter?")
        system = system_text(w.chat_requests()[-1])
        assert "bob works as a carpenter" in system and "alice lives in Lisbon" not in system
        # Capture follows the opt-out alone: what she says is still learned.
        await w.say(w.general, w.alice, "I play the violin")
        await w.flush()
        assert "alice plays the violin" in {f.text for f in await w.facts(f"guild:{w.alpha.id}", w.alice)}
        # Back on: her facts serve replies again.
        assert "**on**" in await settings(w, w.alice, use_in_replies=True)
        await ask(w, w.general, w.alice, "where do I live? Lisbon?")
        assert "alice lives in Lisbon" in system_text(w.chat_requests()[-1])


async def test_a_person_who_asks_is_told_by_dm_what_was_learned_about_them_and_others_are_not(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        answer = await settings(w, w.alice, tell_me=True)
        assert "Tell you by DM when I learn something about you: **on**" in answer
        await w.say(w.general, w.alice, "I play the violin")
        await w.say(w.general, w.bob, "I play the drums")
        await w.flush()
        [fact] = await w.facts(f"guild:{w.alpha.id}", w.alice)
        note = await w.discord.wait_for_bot_message(w.discord.dm_channel_id(w.alice), timeout=10)
        assert "Alpha" in note["content"] and f"#{fact.id} · " in note["content"]
        assert "alice plays the violin" in note["content"]
        await w.seen(w.general)
        assert w.discord.bot_messages(w.discord.dm_channel_id(w.bob)) == []


async def test_remember_me_off_in_settings_is_the_opt_out(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        answer = await settings(w, w.bob, remember_me=False)
        assert "Remember what you say: **off**" in answer
        assert w.bot.memory.is_opted_out(f"guild:{w.alpha.id}", str(w.bob["id"]))
        await w.say(w.general, w.bob, "I live in Krakow", expect_capture=False)
        assert "**on**" in await settings(w, w.bob, remember_me=True)
        assert not w.bot.memory.is_opted_out(f"guild:{w.alpha.id}", str(w.bob["id"]))


# ---- auto-reply channels -----------------------------------------------------------------------------------


async def autoreply(w: World, user: dict[str, Any], subcommand: str, channel_id: int) -> str:
    inter = await w.discord.invoke_command(
        user,
        "memory-admin",
        group="autoreply",
        subcommand=subcommand,
        channel_id=w.general,
        options={"channel": channel_id},
    )
    body = await inter.wait_response()
    content: str = body["data"]["content"]
    return content


async def test_an_admin_sets_an_auto_reply_channel_without_a_restart_and_a_member_cannot(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        random = w.alpha.channels["random"]
        assert await autoreply(w, w.bob, "on", random) == NEED_MANAGE_SERVER
        await w.say(random, w.bob, "anyone around this evening?")
        await w.seen(random)
        assert w.discord.bot_messages(random) == []
        assert "answer every message" in await autoreply(w, w.alice, "on", random)
        message = await w.say(random, w.bob, "anyone around this evening?")
        reply = await w.discord.wait_for_bot_message(random, timeout=10)
        assert reply["message_reference"]["message_id"] == message["id"]
        assert "only when mentioned" in await autoreply(w, w.alice, "off", random)
        await w.say(random, w.bob, "still nobody?")
        await w.seen(random)
        assert len(w.discord.bot_messages(random)) == 1


async def test_the_environments_auto_reply_channel_answers_until_an_admin_turns_it_off(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        random = w.alpha.channels["random"]
        # As AUTO_REPLY_CHANNEL_IDS would have it at start-up (the channel's id is the stand-in's).
        w.bot.settings = dataclasses.replace(w.bot.settings, auto_reply_channel_ids=frozenset({random}))
        await w.say(random, w.bob, "anyone around this evening?")
        await w.discord.wait_for_bot_message(random, timeout=10)
        await autoreply(w, w.alice, "off", random)
        await w.say(random, w.bob, "still nobody?")
        await w.seen(random)
        assert len(w.discord.bot_messages(random)) == 1
        await autoreply(w, w.alice, "on", random)
        await w.say(random, w.bob, "hello again?")
        await w.discord.wait_for_bot_message(
            random, lambda m: len(w.discord.bot_messages(random)) == 2, timeout=10
        )
