"""/memory recap and /memory-admin community|episodes through the wire: the real discord.py and
google-genai against the stand-ins, on SQLite and PostgreSQL. Episodes and community facts are made by
posting messages and flushing (the stand-in brain makes an episode point of each sentence of three words
or more, and a community fact of a sentence like "Game night ..." or "Our ...")."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.discord_bot.cogs.admin import BUSY
from bot.discord_bot.cogs.memory_commands import RECAP_IN_DMS, RECAP_MEMORY_OFF, UNKNOWN_SINCE
from bot.discord_bot.error_replies import NEED_MANAGE_SERVER
from bot.discord_bot.ui.confirm import NOTHING_FORGOTTEN
from bot.memory.models import COMMUNITY_ID, COMMUNITY_NAME, NewFact, Origin, utcnow
from bot.memory.timespan import said_start
from standins.discord import InteractionRecord
from tests.e2e import world as world_module
from tests.e2e.test_e2e_commands import EPHEMERAL, buttons, click, message, stall_store
from tests.e2e.test_e2e_trust import staff_only
from tests.e2e.world import World, eventually, world
from tests.integration.test_store import file_bytes, traces

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("world_database")]

# "<#12> · <t:1714557600:f> · [where it began](https://discord.com/channels/1/12/99)", an admin's with "#7 · "
HEAD = re.compile(r"^(?:#(\d+) · )?<#(\d+)> · <t:\d+:f>(?: · \[where it began\]\((\S+)\))?$", re.M)


def scope(w: World) -> str:
    return f"guild:{w.alpha.id}"


def backend() -> str:
    return "sqlite" if isinstance(world_module.database, (Path, type(None))) else "postgres"


def midnight(days_back: int) -> str:
    """The start of the day `days_back` days ago, as a recap says it ("Wed 26 Nov, 00:00 UTC")."""
    now = utcnow()
    return said_start((now - timedelta(days=days_back)).replace(hour=0, minute=0, second=0), now)


def heads(content: str) -> list[tuple[str, str, str]]:
    """(id or "", channel, link or "") of each episode on a page, in order."""
    return [(m.group(1) or "", m.group(2), m.group(3) or "") for m in HEAD.finditer(content)]


def link(w: World, channel: int, sent: dict[str, Any]) -> str:
    return f"https://discord.com/channels/{w.alpha.id}/{channel}/{sent['id']}"


async def recap(
    w: World, user: dict[str, Any], *, where: int | None = None, **options: Any
) -> tuple[InteractionRecord, str]:
    """/memory recap as `user`, asked in `where` (default #general); the record and the answer's text."""
    inter = await w.discord.invoke_command(
        user, "memory", subcommand="recap", channel_id=where or w.general, options=options
    )
    body = await inter.wait_response()
    assert body["type"] == 4, body
    assert body["data"]["flags"] & EPHEMERAL
    return inter, str(body["data"]["content"])


async def episode_in(w: World, channel: int, *lines: tuple[dict[str, Any], str]) -> list[dict[str, Any]]:
    """Post each (author, text) in `channel` and flush: one episode of that channel."""
    sent = [await w.say(channel, author, text) for author, text in lines]
    await w.flush()
    return sent


async def log_lines(w: World, *expected: str) -> str:
    """The admin log of Alpha once it holds every expected line; its whole text."""
    log_channel = w.alpha.channels["bot-log"]

    async def logged() -> bool:
        text = "\n".join(m["content"] for m in w.discord.bot_messages(log_channel))
        return all(line in text for line in expected)

    await eventually(logged, what=f"admin log lines {expected}")
    return "\n".join(m["content"] for m in w.discord.bot_messages(log_channel))


async def admin(
    w: World, user: dict[str, Any], group: str, subcommand: str, **options: Any
) -> tuple[InteractionRecord, dict[str, Any]]:
    """/memory-admin <group> <subcommand> in #general; the record and the first response."""
    inter = await w.discord.invoke_command(
        user, "memory-admin", group=group, subcommand=subcommand, channel_id=w.general, options=options
    )
    return inter, await inter.wait_response()


async def submit(w: World, user: dict[str, Any], opened: InteractionRecord, text: str) -> str:
    """Fill the correction form `opened` showed with `text`; the bot's answer."""
    done = await (await w.discord.submit_modal(user, opened, {"correct:text": text})).wait_response()
    assert done["type"] == 4 and done["data"]["flags"] & EPHEMERAL
    return str(done["data"]["content"])


# ---- /memory recap -------------------------------------------------------------------------------------------


async def test_recap_shows_only_the_channels_the_caller_can_read_newest_first_with_jump_links(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        staff = await staff_only(w)  # bob has the staff role; carol has not, nor has alice
        random = w.alpha.channels["random"]
        general = await episode_in(
            w, w.general, (w.alice, "The raid schedule is posted in the pinned message"),
            (w.bob, "Tuesday raids start at nine sharp"),
        )  # fmt: skip
        await episode_in(w, staff, (w.bob, "The prize pool stays secret until Friday evening"))
        [cats] = await episode_in(w, random, (w.carol, "Cat pictures belong in this channel only"))

        _, seen_by_carol = await recap(w, w.carol)
        assert re.match(
            r"\*\*What was discussed since \w{3} \d{1,2} \w{3}, \d\d:\d\d UTC\*\*\n", seen_by_carol
        )
        assert heads(seen_by_carol) == [
            ("", str(random), link(w, random, cats)),
            ("", str(w.general), link(w, w.general, general[0])),  # where it began: its first message
        ]
        assert "alice: The raid schedule is posted in the pinned message" in seen_by_carol
        assert "bob: Tuesday raids start at nine sharp" in seen_by_carol
        assert "prize pool" not in seen_by_carol
        assert seen_by_carol.rstrip().endswith("Page 1/1 · 2 episodes")

        _, seen_by_bob = await recap(w, w.bob)
        assert [channel for _, channel, _ in heads(seen_by_bob)] == [str(random), str(staff), str(w.general)]
        assert "bob: The prize pool stays secret until Friday evening" in seen_by_bob

        _, only_general = await recap(w, w.bob, channel=w.general)
        assert only_general.startswith(f"**What was discussed in <#{w.general}> since")
        assert [channel for _, channel, _ in heads(only_general)] == [str(w.general)]
        _, hidden = await recap(w, w.carol, channel=staff)
        assert heads(hidden) == [] and "prize pool" not in hidden
        assert hidden.startswith(f"I remember no conversation in <#{staff}> since")
        assert w.discord.bot_messages(w.general) == []  # nothing of this was public


async def test_a_private_threads_episodes_are_recapped_only_inside_that_thread(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        thread = await w.discord.add_thread(
            w.alpha, w.general, "bob-and-alice", private=True, members=[w.bob, w.alice]
        )
        await episode_in(w, thread, (w.bob, "The surprise party for carol is on Sunday"))
        _, outside = await recap(w, w.bob)
        assert "surprise party" not in outside
        _, inside = await recap(w, w.bob, where=thread)
        assert [channel for _, channel, _ in heads(inside)] == [str(thread)]
        assert "bob: The surprise party for carol is on Sunday" in inside


async def test_recap_since_filters_by_time_and_a_phrase_it_cannot_read_gets_a_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(tmp_path) as w:
        await episode_in(w, w.general, (w.alice, "The library meetup was great fun"))
        _, today = await recap(w, w.carol, since="yesterday")
        assert "library meetup" in today
        # The answer says the span it understood: "the day before yesterday" is not yesterday.
        assert f"since {midnight(1)}**" in today
        _, two_before = await recap(w, w.carol, since="the day before yesterday")
        assert f"since {midnight(2)}**" in two_before

        # Ten days on: the default week no longer reaches it, "10 days ago" does, "yesterday" does not.
        live = w.bot.extensions["bot.discord_bot.cogs.memory_commands"]  # the module the bot loaded
        moved = utcnow() + timedelta(days=10)
        monkeypatch.setattr(live, "utcnow", lambda: moved)
        _, default = await recap(w, w.carol)
        assert heads(default) == [] and default.startswith(
            f"I remember no conversation since {said_start(moved - timedelta(days=7), moved)}"
        )
        _, back_then = await recap(w, w.carol, since="10 days ago")
        assert "library meetup" in back_then
        _, yesterday = await recap(w, w.carol, since="yesterday")
        assert heads(yesterday) == []

        _, unread = await recap(w, w.carol, since="when the moon was blue")
        assert unread == UNKNOWN_SINCE.format(since="when the moon was blue")
        assert "2 weeks" in unread and "2026-11-20" in unread  # it shows what it can read
        _, two_weeks = await recap(w, w.carol, since="2 weeks")
        assert (
            "library meetup" in two_weeks
            and f"since {said_start(moved - timedelta(weeks=2), moved)}" in two_weeks
        )


# Seven talks about nothing in common: each flush makes an episode of its own (a talk that goes on about
# the same thing extends the channel's latest episode instead).
TOPICS = [
    "Chess openings for absolute beginners",
    "Sourdough starter needs daily feeding",
    "Kayak routes along the northern fjords",
    "Modular synth patches sound eerie",
    "Bonsai pruning happens every spring",
    "Comet sightings peaked around midnight",
    "Origami cranes fold from square paper",
]


async def test_recap_pages_through_many_episodes_whole(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        for topic in TOPICS:
            await episode_in(w, w.general, (w.alice, topic))
        inter, first = await recap(w, w.carol)
        assert first.rstrip().endswith("Page 1/2 · 7 episodes")
        assert TOPICS[6] in first and TOPICS[2] in first and TOPICS[1] not in first
        page = inter.original_message_id
        assert page is not None
        assert buttons(message(w, page)) == {
            "recap:first": True,
            "recap:prev": True,
            "recap:next": False,
            "recap:last": False,
        }
        turned = await click(w, w.carol, page, "recap:next")
        assert turned["type"] == 7
        second = message(w, page)["content"]
        assert second.rstrip().endswith("Page 2/2 · 7 episodes")
        assert f"alice: {TOPICS[1]}" in second and TOPICS[0] in second


async def test_recap_in_dms_or_where_memory_is_off_says_why_there_is_none(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await episode_in(w, w.general, (w.alice, "The library meetup was great fun"))
        in_dm = await w.discord.invoke_command(w.carol, "memory", subcommand="recap")
        assert (await in_dm.wait_response())["data"]["content"] == RECAP_IN_DMS
        await w.bot.memory.update_guild(str(w.alpha.id), memory_enabled=False)
        _, off = await recap(w, w.carol)
        assert off == RECAP_MEMORY_OFF


# ---- /memory-admin community ---------------------------------------------------------------------------------


async def seed_community(w: World, channel: int, text: str) -> int:
    """A community fact said in `channel` (imported, so that no episode holds its words); its id."""
    source = f"seed{channel}"
    imported = NewFact(
        scope(w), COMMUNITY_ID, COMMUNITY_NAME, text, [source], origins={source: Origin(str(channel))}
    )
    assert await w.bot.memory.import_facts([imported]) == 1
    [fact] = [f for f in await w.bot.memory.list_facts(scope(w), COMMUNITY_ID, limit=100) if f.text == text]
    return fact.id


async def test_admins_list_correct_and_forget_community_facts_leaving_no_trace_and_members_are_refused(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(w.alpha.channels["bot-log"]))
        staff = await staff_only(w)  # alice manages the server but cannot read #staff-only
        night = await seed_community(w, w.general, "Game night moves to Fridays at 20:00 UTC")
        secret = await seed_community(w, staff, "The prize pool is 500 euros this year")

        for sub, options in (("list", {}), ("correct", {"fact": night}), ("forget", {"fact": night})):
            _, refused = await admin(w, w.bob, "community", sub, **options)
            assert refused["data"]["content"] == NEED_MANAGE_SERVER
        _, listed = await admin(w, w.alice, "community", "list")
        content = listed["data"]["content"]
        assert listed["data"]["flags"] & EPHEMERAL
        assert f"#{night} · " in content and "Game night moves to Fridays at 20:00 UTC" in content
        assert "prize pool" not in content and f"#{secret} " not in content
        for sub in ("correct", "forget"):
            _, refused = await admin(w, w.alice, "community", sub, fact=secret)
            assert refused["data"]["content"] == f"No community fact #{secret} here that you can read."

        opened, form = await admin(w, w.alice, "community", "correct", fact=night)
        assert form["type"] == 9 and "Game night moves to Fridays" in str(form["data"])
        answer = await submit(w, w.alice, opened, "Game night is on Saturdays at 19:00 UTC")
        assert answer == f"Corrected #{night}: Game night is on Saturdays at 19:00 UTC"
        facts = await w.bot.memory.list_facts(scope(w), COMMUNITY_ID, limit=10)
        assert {f.text for f in facts} == {
            "Game night is on Saturdays at 19:00 UTC",
            "The prize pool is 500 euros this year",
        }
        assert traces(w.bot.memory.store.sync, backend(), ["Fridays"]) == []
        if backend() == "sqlite":
            assert b"fridays" not in file_bytes(Path(w.bot.settings.database_location)).lower()

        inter, question = await admin(w, w.alice, "community", "forget", fact=night)
        assert "Forget this?" in question["data"]["content"]
        assert "Game night is on Saturdays" in question["data"]["content"]
        assert inter.original_message_id is not None
        done = await click(w, w.alice, inter.original_message_id, "forget:confirm")
        assert done["data"]["content"] == "Forgot 1 fact."
        assert [f.id for f in await w.bot.memory.list_facts(scope(w), COMMUNITY_ID, limit=10)] == [secret]
        assert traces(w.bot.memory.store.sync, backend(), ["Saturdays"]) == []

        logged = await log_lines(
            w,
            "alice looked at the community facts.",
            f"alice corrected community fact #{night}.",
            f"alice forgot community fact #{night}.",
        )
        assert "Game night" not in logged and "Saturdays" not in logged


async def test_a_correction_form_asked_for_while_the_database_is_busy_asks_to_try_again(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        night = await seed_community(w, w.general, "Game night moves to Fridays at 20:00 UTC")
        assert w.discord.interaction_ack_timeout == 3.0  # Discord's real limit: a form cannot be deferred
        stalled = stall_store(w, 3.5)
        _, busy = await admin(w, w.alice, "community", "correct", fact=night)
        await stalled
        assert busy["type"] == 4 and busy["data"]["content"] == BUSY
        _, form = await admin(w, w.alice, "community", "correct", fact=night)
        assert form["type"] == 9


# ---- /memory-admin episodes ----------------------------------------------------------------------------------


async def test_admins_list_correct_and_forget_episodes_leaving_no_trace_and_members_are_refused(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(w.alpha.channels["bot-log"]))
        staff = await staff_only(w)
        first = await episode_in(w, w.general, (w.bob, "Wednesday sessions suit most raiders best"))
        await episode_in(w, staff, (w.bob, "Nobody outside staff hears about the budget"))
        [general, in_staff] = sorted(
            await w.bot.memory.list_episodes(scope(w), limit=10),
            key=lambda e: e.origin.channel_id != str(w.general),
        )

        for sub, options in (
            ("list", {}),
            ("correct", {"episode": general.id}),
            ("forget", {"episode": general.id}),
        ):
            _, refused = await admin(w, w.carol, "episodes", sub, **options)
            assert refused["data"]["content"] == NEED_MANAGE_SERVER
        _, listed = await admin(w, w.alice, "episodes", "list")
        content = listed["data"]["content"]
        assert heads(content) == [(str(general.id), str(w.general), link(w, w.general, first[0]))]
        assert "bob: Wednesday sessions suit most raiders best" in content and "budget" not in content
        for sub in ("correct", "forget"):
            _, refused = await admin(w, w.alice, "episodes", sub, episode=in_staff.id)
            assert refused["data"]["content"] == f"No episode #{in_staff.id} here that you can read."

        assert traces(w.bot.memory.store.sync, backend(), ["Wednesday"])  # the words are there to be found
        opened, form = await admin(w, w.alice, "episodes", "correct", episode=general.id)
        assert form["type"] == 9 and "Wednesday sessions" in str(form["data"])
        refused = await submit(w, w.alice, opened, "   ")
        assert refused == "The corrected summary is empty; nothing was changed."
        opened, _ = await admin(w, w.alice, "episodes", "correct", episode=general.id)
        answer = await submit(w, w.alice, opened, "- Raids move to Thursdays")
        assert answer == f"Corrected episode #{general.id}:\n- Raids move to Thursdays"
        _, recapped = await recap(w, w.carol)
        assert "- Raids move to Thursdays" in recapped and "Wednesday" not in recapped
        assert traces(w.bot.memory.store.sync, backend(), ["Wednesday"]) == []
        if backend() == "sqlite":
            assert b"wednesday" not in file_bytes(Path(w.bot.settings.database_location)).lower()

        inter, question = await admin(w, w.alice, "episodes", "forget", episode=general.id)
        assert "Forget this?" in question["data"]["content"]
        assert inter.original_message_id is not None
        cancelled = await click(w, w.alice, inter.original_message_id, "forget:cancel")
        assert cancelled["data"]["content"] == NOTHING_FORGOTTEN
        inter, _ = await admin(w, w.alice, "episodes", "forget", episode=general.id)
        assert inter.original_message_id is not None
        done = await click(w, w.alice, inter.original_message_id, "forget:confirm")
        assert done["data"]["content"] == f"Forgot episode #{general.id}."
        assert [e.id for e in await w.bot.memory.list_episodes(scope(w), limit=10)] == [in_staff.id]
        assert traces(w.bot.memory.store.sync, backend(), ["Thursdays"]) == []

        logged = await log_lines(
            w,
            "alice looked at the episodes.",
            f"alice corrected episode #{general.id}.",
            f"alice forgot episode #{general.id}.",
        )
        assert "Thursdays" not in logged and "Wednesday" not in logged


async def test_a_servers_forget_everything_leaves_no_word_of_people_community_or_episodes(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(w.alpha.channels["bot-log"]))
        await episode_in(
            w,
            w.general,
            (w.bob, "I keep bees in Quimper. Our server meetup moves to Quimper in May"),
            (w.alice, "The Quimper meetup starts at noon"),
        )
        await w.say(w.general, w.carol, "Quimper again, still waiting to be learned")
        assert await w.bot.memory.list_episodes(scope(w)) and await w.facts(scope(w), w.bob)
        inter = await w.discord.invoke_command(
            w.bob, "memory-admin", subcommand="forget-server", channel_id=w.general
        )
        assert (await inter.wait_response())["data"]["content"] == NEED_MANAGE_SERVER
        inter = await w.discord.invoke_command(
            w.alice, "memory-admin", subcommand="forget-server", channel_id=w.general
        )
        asked = (await inter.wait_response())["data"]
        assert asked["flags"] & EPHEMERAL and "This can't be undone" in asked["content"]
        assert inter.original_message_id is not None
        done = await click(w, w.alice, inter.original_message_id, "forget:confirm")
        assert done["data"]["content"].startswith("Forgot everything learned in this server:")
        assert await w.bot.memory.list_episodes(scope(w)) == [] and await w.facts(scope(w), w.bob) == []
        assert traces(w.bot.memory.store.sync, backend(), ["Quimper"]) == []
        if backend() == "sqlite":
            assert b"quimper" not in file_bytes(Path(w.bot.settings.database_location)).lower()
        await log_lines(w, "alice forgot everything learned in this server")
