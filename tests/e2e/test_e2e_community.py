"""Community memory end to end: what a server talked about and decided, recalled where it may be heard
and erased with its sources, through the real discord.py and google-genai against the stand-ins."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

from bot.memory import recall
from bot.memory.models import COMMUNITY_ID, utcnow
from tests.e2e import world as world_module
from tests.e2e.test_e2e_lookup import ask as lookup_ask
from tests.e2e.test_e2e_lookup import responses
from tests.e2e.test_e2e_trust import ask, staff_only
from tests.e2e.world import World, world
from tests.integration.test_store import file_bytes, traces

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("world_database")]


def block_of(system: str) -> str:
    return system.split("<background_facts>", 1)[1] if "<background_facts>" in system else ""


async def community(w: World) -> list[str]:
    return [f.text for f in await w.bot.memory.list_facts(f"guild:{w.alpha.id}", COMMUNITY_ID, limit=100)]


async def episodes(w: World) -> list[str]:
    found = await w.bot.memory.list_episodes(f"guild:{w.alpha.id}", limit=100)
    return [e.summary for e in found]


def later(monkeypatch: pytest.MonkeyPatch, days: float) -> None:
    """The bot's recall believes it is `days` later (a question asked the next day)."""
    moved = utcnow() + timedelta(days=days)
    monkeypatch.setattr(recall, "utcnow", lambda: moved)


async def test_a_decision_is_answered_a_day_later_and_the_newer_one_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(tmp_path) as w:
        await w.say(w.general, w.alice, "Game night moves to Fridays at 20:00 UTC from now on")
        await w.flush()
        assert await community(w) == ["Game night moves to Fridays at 20:00 UTC from now on"]
        later(monkeypatch, 1)
        system = await ask(w, w.general, w.carol, "when is game night?")
        assert "Game night moves to Fridays at 20:00 UTC" in block_of(system)
        assert "<community>" in block_of(system)

        await w.say(w.general, w.bob, "Game night moves to Saturdays at 19:00 UTC, the vote is done")
        await w.flush()
        assert await community(w) == ["Game night moves to Saturdays at 19:00 UTC, the vote is done"]
        block = block_of(await ask(w, w.general, w.carol, "when is game night?"))
        assert "Saturdays at 19:00" in block and "Fridays at 20:00" not in block.split("<episodes>")[0]


async def test_what_we_talked_about_yesterday_comes_from_that_days_episodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(tmp_path) as w:
        await w.say(w.general, w.alice, "The raid schedule is posted in the pinned message")
        await w.say(w.general, w.bob, "Tuesday raids start at 21:00 from next week")
        await w.flush()
        [summary] = await episodes(w)
        assert "raid schedule is posted" in summary and "Tuesday raids start" in summary
        later(monkeypatch, 1)
        block = block_of(await ask(w, w.general, w.carol, "what did we talk about yesterday?"))
        assert "<episodes>" in block and "Tuesday raids start at 21:00" in block
        later(monkeypatch, 3)  # three days on, "yesterday" is another day: no episode of it
        block = block_of(await ask(w, w.general, w.carol, "what did we talk about yesterday?"))
        assert "<episodes>" not in block


async def test_a_staff_episode_and_decision_never_reach_general(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        staff = await staff_only(w)
        await w.say(staff, w.bob, "The tournament prize pool is 500 euros, keep it quiet until Friday")
        await w.flush()
        assert await episodes(w) and await community(w)
        in_general = block_of(await ask(w, w.general, w.carol, "what is the tournament prize pool?"))
        assert "prize pool" not in in_general and "500" not in in_general
        in_staff = block_of(await ask(w, staff, w.bob, "what is the tournament prize pool?"))
        assert "prize pool is 500 euros" in in_staff


async def test_an_opted_out_person_and_a_sensitive_statement_reach_no_episode(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        scope = f"guild:{w.alpha.id}"
        dave = w.discord.add_user("dave")
        await w.bot.memory.set_opt_out(scope, str(dave["id"]), True)
        await w.say(w.general, dave, "Our book club reads Dune this month", expect_capture=False)
        await w.say(w.general, w.bob, "I have diabetes so bring snacks without sugar to the meetup")
        await w.say(w.general, w.alice, "The meetup is at the library on Saturday afternoon")
        await w.flush()
        [summary] = await episodes(w)
        assert "library on Saturday" in summary
        assert "Dune" not in summary and "book club" not in summary
        assert "diabetes" not in summary and "sugar" not in summary


@pytest.mark.parametrize("erasure", ["delete the message", "forget one fact", "forget all"])
async def test_erasing_a_source_leaves_no_trace_in_episodes_and_community_facts(
    tmp_path: Path, erasure: str
) -> None:
    async with world(tmp_path) as w:
        scope = f"guild:{w.alpha.id}"
        said = await w.say(
            w.general, w.bob, "I moved to Zanzibar. Our server meetup moves to Zanzibar in May"
        )
        await w.say(w.general, w.alice, "The wiki lives at example.org for everyone")
        await w.flush()
        assert any("Zanzibar" in s for s in await episodes(w))
        assert any("Zanzibar" in t for t in await community(w))
        if erasure == "delete the message":
            await w.discord.delete_message(w.general, int(said["id"]))
        elif erasure == "forget one fact":
            [moved] = [f for f in await w.facts(scope, w.bob) if "Zanzibar" in f.text]
            assert await w.bot.memory.forget(scope, str(w.bob["id"]), [moved.id]) >= 1
        else:
            await w.bot.memory.forget(scope, str(w.bob["id"]))

        async def gone() -> bool:
            return not any("Zanzibar" in s for s in await episodes(w) + await community(w))

        await world_module.eventually(gone, what="the episode and community fact erased")
        store = w.bot.memory.store.sync
        backend = "sqlite" if isinstance(world_module.database, (Path, type(None))) else "postgres"
        assert traces(store, backend, ["Zanzibar"]) == []
        if backend == "sqlite":  # the file and its WAL too (forget checkpoints it)
            assert b"zanzibar" not in file_bytes(Path(w.bot.settings.database_location)).lower()


async def test_search_memory_looks_through_the_servers_memory_under_the_same_audience(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        staff = await staff_only(w)
        await w.say(staff, w.bob, "The tournament prize pool is 500 euros, keep it quiet until Friday")
        await w.say(w.general, w.alice, "The tournament brackets are in the pinned post")
        await w.flush()
        question = "do you remember what we said about the tournament prize?"
        reply, requests = await lookup_ask(w, w.general, w.carol, question)
        looked_up = [r for request in requests for r in responses(request)]
        assert looked_up and looked_up[0]["person"] == "The server"
        # The amount as a number of its own: a channel's id (a Discord snowflake, 19 digits) may hold "500".
        amount = re.compile(r"(?<!\d)500(?!\d)")
        assert not amount.search(str(looked_up)) and not amount.search(reply)
        reply, requests = await lookup_ask(w, staff, w.bob, question)
        assert "500 euros" in reply


async def test_a_question_naming_a_channel_gets_that_channels_episodes(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        raids = w.alpha.channels["random"]
        await w.say(raids, w.bob, "The raid starts at 21:00 UTC on Tuesdays from now on")
        await w.flush()
        await w.say(w.general, w.alice, "The wiki moved to a new host this week, links are pinned")
        await w.flush()
        block = block_of(await ask(w, w.general, w.carol, f"what did I miss in <#{w.general}> this week?"))
        episodes_part = block.split("<episodes>", 1)[1]
        assert "wiki moved" in episodes_part and "raid starts" not in episodes_part
