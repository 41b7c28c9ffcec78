"""/help, the welcome on joining a server, and a message's own menu ("Remember this", "Forget what you
learned from it"), through the wire: the real bot against the Discord and model stand-ins, on both
backends; what the menu changes is read back from the database."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from bot.discord_bot.cogs.help import welcome_text
from bot.discord_bot.cogs.message_menu import NOT_YOURS_TO_FORGET, NOTHING_LEARNED, ONLY_YOUR_OWN
from bot.discord_bot.menu_names import FORGET_TAUGHT, REMEMBER_THIS
from bot.discord_bot.remember_request import IGNORED, OPTED_OUT
from bot.memory.models import COMMUNITY_ID
from standins.discord.model import SEND_MESSAGES, overwrite
from tests.e2e import world as world_module
from tests.e2e.test_e2e_commands import EPHEMERAL, click, command, scope, sql, uncaptured
from tests.e2e.test_e2e_community_commands import log_lines
from tests.e2e.world import World, eventually, world
from tests.integration.test_store import traces

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("world_database")]

ZANZIBAR = "I moved to Zanzibar. Our server meetup moves to Zanzibar in May"


async def from_menu(w: World, user: dict[str, Any], name: str, message: dict[str, Any]) -> dict[str, Any]:
    """Run a message command on a message; the callback's data, checked to be private."""
    inter = await w.discord.invoke_message_command(user, name, message)
    body = await inter.wait_response()
    assert body["type"] == 4, body
    assert body["data"]["flags"] & EPHEMERAL, "every answer of the menu is private"
    return dict(body["data"])


def backend() -> str:
    return "sqlite" if isinstance(world_module.database, (Path, type(None))) else "postgres"


# ---- /help and the welcome -----------------------------------------------------------------------------------


async def test_help_is_private_and_names_only_commands_that_exist_and_the_marker_in_force(
    tmp_path: Path,
) -> None:
    async with world(tmp_path, memory_no_memory_marker="!private") as w:
        _, data = await command(w, w.bob, "help", w.alpha)
        text = data["content"]
        assert len(text) <= 2000
        assert "`!private`" in text and "!nomem" not in text  # the marker this bot runs with
        for words in (
            "/facts",
            "/forget all",
            "/memory optout",
            "/memory recap",
            REMEMBER_THIS,
            FORGET_TAUGHT,
        ):
            assert words in text, words
        synced = {(c["name"], c["type"]): c for c in w.discord.synced_commands[None]}
        for name, sub in re.findall(r"`/([a-z-]+)(?: ([a-z-]+))?", text):
            assert (name, 1) in synced, name  # every slash command it names is one Discord has
            if sub and synced[(name, 1)]["options"] and synced[(name, 1)]["options"][0]["type"] == 1:
                assert sub in {o["name"] for o in synced[(name, 1)]["options"]}, f"/{name} {sub}"
        assert (REMEMBER_THIS, 3) in synced and (FORGET_TAUGHT, 3) in synced
        dm = await w.discord.invoke_command(w.carol, "help")  # in DMs as well
        assert (await dm.wait_response())["data"]["flags"] & EPHEMERAL


async def test_the_welcome_goes_to_a_joined_servers_system_channel_only_where_the_bot_may_write(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        name = w.bot.user.display_name if w.bot.user else ""
        muted = overwrite(w.discord.bot_id, member=True, deny=SEND_MESSAGES)
        silent = w.discord.add_guild("Silent", system_channel="general", overwrites={"general": [muted]})
        bare = w.discord.add_guild("Bare")  # no system channel at all
        gamma = w.discord.add_guild("Gamma", system_channel="random")

        def welcomed() -> list[dict[str, Any]] | None:
            return w.discord.bot_messages(gamma.channels["random"]) or None

        [welcome] = await w.discord._changes.wait_until(welcomed, 10, "the welcome in Gamma")
        assert welcome["content"] == welcome_text(name, marker="!nomem", community=True)
        assert len(welcome["content"].splitlines()) == 3
        # Joins are handled in order: Gamma's welcome came after Silent's and Bare's were decided.
        await asyncio.sleep(0.2)
        for guild in (silent, bare):
            for channel in guild.channels.values():
                assert w.discord.bot_messages(channel) == []
                assert not [r for r in w.discord.requests if r.path == f"/channels/{channel}/messages"]
        for channel in w.alpha.channels.values():  # servers it was already in get no welcome on start
            assert all("/help" not in m["content"] for m in w.discord.bot_messages(channel))


# ---- "Remember this" -----------------------------------------------------------------------------------------


async def test_remember_this_stores_the_authors_own_message_through_the_same_checks(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        here = scope(w.alpha)
        oboe = await w.say(w.general, w.bob, "I play the oboe")
        data = await from_menu(w, w.bob, REMEMBER_THIS, oboe)
        [fact] = await w.facts(here, w.bob)
        assert fact.text == "bob plays the oboe"
        assert data["content"].startswith(f"I'll remember that: #{fact.id}: bob plays the oboe")
        assert fact.source_message_ids == (
            oboe["id"],
        )  # learned from that message: deleting it takes it back

        health = await w.say(w.general, w.bob, "I have diabetes")  # asked for: kept, marked sensitive
        data = await from_menu(w, w.bob, REMEMBER_THIS, health)
        assert "(sensitive: used only when I talk with you)" in data["content"]
        assert [f.sensitive for f in await w.facts(here, w.bob)].count(True) == 1

        data = await from_menu(w, w.alice, REMEMBER_THIS, oboe)  # someone else's message
        assert data["content"] == ONLY_YOUR_OWN
        assert await w.facts(here, w.alice) == []

        random = w.alpha.channels["random"]
        await w.bot.memory.set_channel_ignored(str(w.alpha.id), str(random), True)
        ignored = await uncaptured(w, random, w.bob, "I play the tuba")
        data = await from_menu(w, w.bob, REMEMBER_THIS, ignored)
        assert data["content"] == IGNORED.format(channel=random)

        await command(w, w.carol, "memory", w.alpha, subcommand="optout")
        harp = await uncaptured(w, w.general, w.carol, "I play the harp")
        data = await from_menu(w, w.carol, REMEMBER_THIS, harp)
        assert data["content"] == OPTED_OUT
        assert sql(w, "SELECT count(*) FROM facts WHERE user_id = ?", w.carol["id"]) == [(0,)]
        assert len(await w.facts(here, w.bob)) == 2


# ---- "Forget what you learned from it" -----------------------------------------------------------------------


async def test_its_author_forgets_everything_a_message_taught_after_confirming(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        here = scope(w.alpha)
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(w.alpha.channels["bot-log"]))
        said = await w.say(w.general, w.bob, ZANZIBAR)
        kept = await w.say(w.general, w.bob, "I play the oboe")
        await w.flush()
        [moved] = [f for f in await w.facts(here, w.bob) if "Zanzibar" in f.text]

        data = await from_menu(w, w.carol, FORGET_TAUGHT, said)  # neither its author nor an admin
        assert data["content"] == NOT_YOURS_TO_FORGET

        inter = await w.discord.invoke_message_command(w.bob, FORGET_TAUGHT, said)
        question = (await inter.wait_response())["data"]
        assert question["flags"] & EPHEMERAL
        assert f"#{moved.id} · {moved.text}" in question["content"]
        assert (
            "1 community fact" in question["content"] and "conversation summary point" in question["content"]
        )
        assert any("Zanzibar" in f.text for f in await w.facts(here, w.bob))  # nothing before the confirm

        done = await click(w, w.bob, inter.original_message_id or 0, "forget:confirm")
        assert done["data"]["content"].startswith("Forgot ")
        assert traces(w.bot.memory.store.sync, backend(), ["Zanzibar"]) == []  # facts, community, episodes
        assert sql(w, "SELECT count(*) FROM fact_sources WHERE message_id = ?", said["id"]) == [(0,)]
        assert [f.text for f in await w.facts(here, w.bob)] == ["bob plays the oboe"]  # another message's
        assert w.discord.get_message(int(said["id"])) is not None  # the message itself stays
        assert kept
        await log_lines(w, "Forgot 1 fact of bob (what one message taught).")  # names and counts, no text

        stamps = await w.say(w.general, w.bob, "I collect stamps")  # not learned yet: nothing to confirm
        data = await from_menu(w, w.bob, FORGET_TAUGHT, stamps)
        assert data["content"] == NOTHING_LEARNED and not data.get("components")
        assert not await w.captured(stamps["id"])
        await w.flush()
        assert not any("stamps" in f.text for f in await w.facts(here, w.bob))  # and it is not learned later


async def test_an_admin_forgets_only_what_the_servers_memory_made_of_someone_elses_message(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        here = scope(w.alpha)
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(w.alpha.channels["bot-log"]))
        said = await w.say(w.general, w.bob, ZANZIBAR)
        await w.flush()
        inter = await w.discord.invoke_message_command(w.alice, FORGET_TAUGHT, said)
        question = (await inter.wait_response())["data"]["content"]
        assert question.startswith("Forget what the server's memory made of bob's message (1 community fact")
        assert "Zanzibar" not in question  # bob's own facts are not the admin's to see or forget
        await click(w, w.alice, inter.original_message_id or 0, "forget:confirm")

        async def shared_gone() -> bool:
            episodes = await w.bot.memory.list_episodes(here, limit=100)
            community = await w.bot.memory.list_facts(here, COMMUNITY_ID, limit=100)
            return not any(
                "Zanzibar" in x for x in [e.summary for e in episodes] + [f.text for f in community]
            )

        await eventually(shared_gone, what="the community fact and episode points forgotten")
        [still] = await w.facts(here, w.bob)  # what the message taught about bob stays his to forget
        assert "Zanzibar" in still.text and still.source_message_ids == (said["id"],)
        await log_lines(w, "of the server (community memory) (by alice, what one message taught).")
