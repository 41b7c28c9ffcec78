"""Shared memory a server can trust, end to end on both backends, with a model that does what the
messages tell it (the worst case the bot must survive): only what was said, by whom, nothing private
about anyone; edits, opt-outs, repeats and an admin's corrections followed exactly. Through the real
discord.py and google-genai against the stand-ins."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.memory.models import COMMUNITY_ID, Episode, Fact, NewFact
from bot.memory.prompts.extraction import EXTRACT_TASK
from standins.brain import FakeBrain, extract, last_user_text, read_chunk, system_text
from tests.e2e.test_e2e_community_commands import admin, backend, click, log_lines, recap, scope
from tests.e2e.test_e2e_trust import ask
from tests.e2e.world import World, eventually, world
from tests.integration.test_store import file_bytes, traces

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("world_database")]


class Gullible:
    """A model that copies every person's line into shared memory, a community fact and an episode point
    each, marking nothing sensitive; `rewrite` puts its own words into what it proposes. People's own
    facts and every other task are the stand-in brain's."""

    def __init__(self, brain: FakeBrain, rewrite: Callable[[str], str] = lambda text: text) -> None:
        self.brain = brain
        self.rewrite = rewrite

    def __call__(self, body: dict[str, Any]) -> str | list[dict[str, Any]]:
        if not system_text(body).startswith(EXTRACT_TASK):
            return self.brain(body)
        chunk = read_chunk(last_user_text(body))
        facts = [{**f, "sensitive": False} for f in extract(chunk)["facts"]]
        lines = [m for m in chunk["messages"] if not m["bot"]]
        community = [{"text": self.rewrite(m["text"]), "sources": [m["id"]]} for m in lines]
        episodes: dict[int, list[dict[str, Any]]] = {}
        for m in lines:
            episodes.setdefault(m["channel"], []).append(
                {"text": self.rewrite(m["text"]), "sources": [m["id"]]}
            )
        answer = {
            "facts": facts,
            "community": community,
            "episodes": [{"channel": n, "points": points} for n, points in episodes.items()],
        }
        return json.dumps(answer)


def gullible(w: World, rewrite: Callable[[str], str] = lambda text: text) -> None:
    w.gemini.generate_handler = Gullible(w.brain, rewrite)


async def shared_texts(w: World) -> list[str]:
    """Every community fact and episode point of Alpha (all statuses), as stored."""
    facts = await w.bot.memory.store.call(
        lambda store: store.list_facts(scope(w), COMMUNITY_ID, all_statuses=True, limit=500)
    )
    episodes = await w.bot.memory.store.call(lambda store: store.list_episodes(scope(w), limit=500))
    return [f.text for f in facts] + [p.text for e in episodes for p in e.points]


def block_of(system: str) -> str:
    return system.split("<background_facts>", 1)[1] if "<background_facts>" in system else ""


async def test_a_word_nobody_said_is_refused_and_the_line_kept_with_its_speaker_and_its_link(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        gullible(w, lambda text: f"{text}, and Bob pocketed the float money")
        said = await w.say(w.general, w.alice, "The bake sale moves to the parish hall on Saturday")
        await w.flush()
        assert await shared_texts(w) == [
            "The bake sale moves to the parish hall on Saturday",
            "alice: The bake sale moves to the parish hall on Saturday",
        ]
        assert traces(w.bot.memory.store.sync, backend(), ["pocketed"]) == []
        block = block_of(await ask(w, w.general, w.carol, "where is the bake sale?"))
        link = f"https://discord.com/channels/{w.alpha.id}/{w.general}/{said['id']}"
        assert (
            f'<point source="{link}">alice: The bake sale moves to the parish hall on Saturday</point>'
            in block
        )
        _, shown = await recap(w, w.carol)
        assert f"- alice: The bake sale moves to the parish hall on Saturday [↗]({link})" in shown


async def test_a_members_rule_is_served_as_their_word_and_an_admins_as_the_servers(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        gullible(w)
        await w.say(w.general, w.alice, "Rule: no selling in the general channel, use the market channel")
        await w.say(w.general, w.bob, "Server rule: the admins must buy everyone pizza every week")
        await w.flush()
        block = block_of(await ask(w, w.general, w.carol, "what are the rules about selling and pizza?"))
        assert re.search(
            r'<fact id="\d+" said="[^"]+" learned_in="[^"]+" voice="server">Rule: no selling', block
        )
        assert re.search(r'said_by="bob">Server rule: the admins must buy everyone pizza', block)
        assert 'voice="server">Server rule' not in block


# Private details about members who are not in the talk, in words of this test's own (the floor's word
# lists and its unit tests were written from others).
PRIVATE = {
    "Priyanka's on lithium for her bipolar, go easy on her this week": "lithium",
    "Dmitri lives at 42 Heron Close, apartment 7B if you need the tools back": "Heron Close",
    "Fergal's gambling again, he lost the rent money at the bookies": "gambling",
    "if you get lost call Abebe on +44 7700 900123": "900123",
    "Katja told me her salary is 38k now": "38k",
    "Sione was locked up for assault last year, keep an eye on him": "assault",
    "Noor is a practising Muslim so no pork at the barbecue please": "Muslim",
    "the door code for the workshop is 5519, don't share it": "5519",
    "Tamsin finally came out as bi to her parents last weekend": "came out",
    "Olek votes Reform every time and campaigns for them on Saturdays": "campaigns",
    "Amara's family is Yoruba, her gran still speaks it at home": "Yoruba",
    "Dariusz is the Unite rep at the depot, he's leading the strike ballot": "strike ballot",
    "you can reach Ines at ines.moreau.private@example.net for the keys": "ines.moreau",
}


async def test_private_details_about_absent_members_reach_no_shared_memory_whatever_the_model_marks(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        gullible(w)
        for line in PRIVATE:
            await w.say(w.general, w.alice, line)
        await w.say(w.general, w.bob, "The barbecue is on Sunday at the riverside park")
        await w.flush()
        shared = await shared_texts(w)
        assert "The barbecue is on Sunday at the riverside park" in shared  # shared memory did form
        assert [word for word in PRIVATE.values() if any(word in text for text in shared)] == []
        _, shown = await recap(w, w.carol)
        assert "riverside park" in shown
        assert [word for word in PRIVATE.values() if word in shown] == []


async def test_a_line_asking_the_bot_to_remember_reaches_no_episode(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        gullible(w)
        asked = await w.discord.send_message(
            w.general, w.bob, "remember that I have coeliac disease", mention_bot=True
        )
        await eventually(lambda: w.captured(asked["id"]), what="the request captured")
        await w.say(w.general, w.alice, "The potluck moves to Saturday at 6pm")
        await w.flush()
        shared = await shared_texts(w)
        assert "alice: The potluck moves to Saturday at 6pm" in shared
        assert not [text for text in shared if "coeliac" in text]
        [kept] = await w.facts(scope(w), w.bob)
        assert "coeliac" in kept.text  # the person's own, kept as they asked


async def test_an_edit_after_learning_takes_the_old_words_from_every_table_and_learns_the_new(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        gullible(w)
        moved = await w.say(w.general, w.bob, "I moved to Quillonby last spring")
        meet = await w.say(w.general, w.alice, "The swap meet is at Wharfside pier this Sunday")
        await w.flush()
        assert any("Quillonby" in f.text for f in await w.facts(scope(w), w.bob))
        assert any("Wharfside" in text for text in await shared_texts(w))

        await w.discord.edit_message(w.general, int(moved["id"]), "I moved to Bergen last spring")
        await w.discord.edit_message(
            w.general, int(meet["id"]), "The swap meet is at the library this Sunday"
        )

        async def old_words_gone() -> bool:
            raw = file_bytes(Path(w.bot.settings.database_location)).lower() if backend() == "sqlite" else b""
            in_file = b"quillonby" in raw or b"wharfside" in raw  # the SQLite file and its WAL
            return (
                not in_file and traces(w.bot.memory.store.sync, backend(), ["Quillonby", "Wharfside"]) == []
            )

        await eventually(old_words_gone, what="the old words gone from every table, the file and its WAL")
        await eventually(lambda: w.captured(moved["id"]), what="the edited message captured again")
        await eventually(lambda: w.captured(meet["id"]), what="the edited message captured again")
        await w.flush()
        assert ["Bergen" in f.text for f in await w.facts(scope(w), w.bob)] == [True]
        assert "alice: The swap meet is at the library this Sunday" in await shared_texts(w)


async def test_an_opted_out_members_shared_memory_is_not_served_until_they_opt_in(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        gullible(w)
        await w.say(w.general, w.bob, "Our book swap is every first Friday at the corner cafe")
        await w.say(w.general, w.alice, "The quiz night moves to Thursdays from now on")
        await w.flush()
        question = "when are the book swap and the quiz night?"
        before = block_of(await ask(w, w.general, w.carol, question))
        assert "book swap" in before and "quiz night" in before

        await w.bot.memory.set_opt_out(scope(w), str(w.bob["id"]), True)
        during = block_of(await ask(w, w.general, w.carol, question))
        assert "book swap" not in during and "quiz night" in during
        _, shown = await recap(w, w.carol)
        assert "book swap" not in shown and "quiz night" in shown
        assert "book swap" in " ".join(await shared_texts(w))  # kept, as they chose: only not served

        await w.bot.memory.set_opt_out(scope(w), str(w.bob["id"]), False)
        assert "book swap" in block_of(await ask(w, w.general, w.carol, question))


async def test_deleting_a_repeat_keeps_the_community_fact_whose_words_are_anothers(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        rule = "Rule: no spoilers outside the spoilers channel"
        await w.say(w.general, w.alice, rule)
        await w.flush()
        [fact] = await w.bot.memory.list_facts(scope(w), COMMUNITY_ID)
        repeat = await w.say(w.general, w.carol, rule)
        await w.flush()
        [confirmed] = await w.bot.memory.list_facts(scope(w), COMMUNITY_ID)
        assert confirmed.id == fact.id and str(repeat["id"]) in confirmed.source_message_ids
        events = await w.bot.memory.store.call(lambda store: store.events(scope(w), COMMUNITY_ID))
        assert [e for e in events if e["kind"] == "duplicate"] and all(
            "text" not in e["detail"] for e in events
        )

        await w.discord.delete_message(w.general, int(repeat["id"]))

        async def unlinked() -> bool:
            facts = await w.bot.memory.list_facts(scope(w), COMMUNITY_ID)
            return [(f.id, str(repeat["id"]) in f.source_message_ids) for f in facts] == [(fact.id, False)]

        await eventually(unlinked, what="the repeat unlinked and the fact kept")


async def two_members_points(w: World) -> tuple[Fact, Episode]:
    """Alice's decision and Bob's note in one flush, with the admin log on: the community fact made of
    Alice's line, and the episode holding both their points."""
    await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(w.alpha.channels["bot-log"]))
    gullible(w)
    await w.say(w.general, w.alice, "Game night moves to Fridays at eight")
    await w.say(w.general, w.bob, "The raid roster is posted in the pinned message")
    await w.flush()
    [night] = [f for f in await w.bot.memory.list_facts(scope(w), COMMUNITY_ID) if "Game night" in f.text]
    [episode] = await w.bot.memory.list_episodes(scope(w))
    return night, episode


async def test_forgetting_a_community_fact_keeps_the_other_members_points_and_says_what_went(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        night, episode = await two_members_points(w)
        assert len(episode.points) == 2

        inter, question = await admin(w, w.alice, "community", "forget", fact=night.id)
        assert f"This also removes 1 point of episode #{episode.id}" in question["data"]["content"]
        assert inter.original_message_id is not None
        done = await click(w, w.alice, inter.original_message_id, "forget:confirm")
        assert done["data"]["content"] == f"Forgot 1 fact. Also removed 1 point of episode #{episode.id}."
        [kept] = await w.bot.memory.list_episodes(scope(w))
        assert (kept.id, [p.text for p in kept.points]) == (
            episode.id,
            ["bob: The raid roster is posted in the pinned message"],
        )
        assert traces(w.bot.memory.store.sync, backend(), ["Fridays at eight"]) == []
        await log_lines(
            w, f"alice forgot community fact #{night.id} (also removed 1 point of episode #{episode.id})."
        )


async def test_a_talk_read_in_two_chunks_is_one_episode(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.say(w.general, w.alice, "The hackathon theme is ocean cleanup robots with sonar")
        await w.flush()
        await w.say(w.general, w.bob, "The hackathon ocean cleanup robots need sonar sensors")
        await w.flush()
        [episode] = await w.bot.memory.list_episodes(scope(w))
        assert [p.text for p in episode.points] == [
            "alice: The hackathon theme is ocean cleanup robots with sonar",
            "bob: The hackathon ocean cleanup robots need sonar sensors",
        ]
        assert episode.participants == (str(w.alice["id"]), str(w.bob["id"]))


async def test_a_moderator_role_an_admin_names_speaks_for_the_server(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.bot.memory.update_guild(str(w.alpha.id), log_channel_id=str(w.alpha.channels["bot-log"]))
        gullible(w)
        mods = await w.discord.add_role(w.alpha, "mods")
        await w.discord.set_roles(w.alpha, w.carol, [mods])
        _, refused = await admin(w, w.bob, "moderators", "set", role=mods)
        assert "Manage Server" in refused["data"]["content"]  # only admins name it
        _, done = await admin(w, w.alice, "moderators", "set", role=mods)
        assert f"<@&{mods}>" in done["data"]["content"]
        await w.say(w.general, w.carol, "Rule: voice chat is muted during the movie night")
        await w.say(w.general, w.bob, "Rule: bob always picks the movie on movie night")
        await w.flush()
        block = block_of(await ask(w, w.general, w.alice, "what are the movie night rules?"))
        assert re.search(r'voice="server">Rule: voice chat is muted', block)
        assert re.search(r'said_by="bob">Rule: bob always picks the movie', block)
        await log_lines(w, f"alice named <@&{mods}> as the moderators' role.")


async def test_a_recap_since_a_huge_number_of_days_ago_answers_with_everything(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.say(w.general, w.alice, "The bake sale moves to the parish hall on Saturday")
        await w.flush()
        for since in ("99999999 days ago", "9" * 90 + " days ago"):
            _, shown = await recap(w, w.carol, since=since)
            assert "parish hall" in shown and "went wrong" not in shown


async def test_a_server_that_removes_the_bot_loses_its_memory_after_the_grace_period(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.say(w.general, w.bob, "I moved to Quillonby last spring")
        await w.say(w.general, w.alice, "The swap meet is at Wharfside pier this Sunday")
        await w.flush()
        beta = f"guild:{w.beta.id}"
        await w.bot.memory.import_facts(
            [NewFact(beta, str(w.bob["id"]), "bob", "bob keeps bees in Beta", ["b1"])]
        )  # another server's memory stays
        await w.discord.remove_bot(w.alpha)

        async def counting_down() -> bool:
            return w.bot.memory.guild(str(w.alpha.id)).removed_at is not None

        await eventually(counting_down, what="the removal recorded")
        assert await w.bot.memory.forget_removed_servers() == []  # within the grace period: kept
        assert await w.facts(scope(w), w.bob)
        later = datetime.now(UTC) + timedelta(days=31)
        assert await w.bot.memory.forget_removed_servers(now=later) == [str(w.alpha.id)]
        assert traces(w.bot.memory.store.sync, backend(), ["Quillonby", "Wharfside"]) == []
        assert [f.text for f in await w.bot.memory.list_facts(beta, str(w.bob["id"]))] == [
            "bob keeps bees in Beta"
        ]
        assert w.bot.memory.guild(str(w.alpha.id)).removed_at is None


async def test_a_server_that_adds_the_bot_back_in_time_keeps_its_memory(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.say(w.general, w.bob, "I moved to Quillonby last spring")
        await w.flush()
        await w.bot.memory.server_removed(str(w.alpha.id))
        await w.bot.memory.servers_present([str(w.alpha.id)])  # as on_guild_join and on_ready do
        later = datetime.now(UTC) + timedelta(days=31)
        assert await w.bot.memory.forget_removed_servers(now=later) == []
        assert await w.facts(scope(w), w.bob)


async def test_correcting_a_community_fact_keeps_the_other_members_points_and_says_what_went(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        night, episode = await two_members_points(w)

        opened, form = await admin(w, w.alice, "community", "correct", fact=night.id)
        assert form["type"] == 9
        done = await (
            await w.discord.submit_modal(w.alice, opened, {"correct:text": "Game night is on Saturdays"})
        ).wait_response()
        assert done["data"]["content"] == (
            f"Corrected #{night.id}: Game night is on Saturdays\nAlso removed 1 point of episode #{episode.id}."
        )
        [kept] = await w.bot.memory.list_episodes(scope(w))
        assert [p.text for p in kept.points] == ["bob: The raid roster is posted in the pinned message"]
        assert traces(w.bot.memory.store.sync, backend(), ["Fridays at eight"]) == []
        await log_lines(
            w, f"alice corrected community fact #{night.id} (also removed 1 point of episode #{episode.id})."
        )
