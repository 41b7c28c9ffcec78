"""The model's memory lookup end to end: Gemini's functionCall of search_memory, the bot's
functionResponse, and the answer streamed after it, through the real clients and both stand-ins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.memory.lookup import SHORT_CHARS
from standins.brain import offered_tools, system_text
from standins.gemini import function_parts
from tests.e2e.test_e2e_chat import block_of
from tests.e2e.test_e2e_trust import staff_only
from tests.e2e.world import World, world

pytestmark = pytest.mark.e2e

DOG = "I have a dog called Rex who loves chasing the red ball in the park every single Sunday morning"


async def ask(
    w: World, channel_id: int, author: dict[str, Any], text: str
) -> tuple[str, list[dict[str, Any]]]:
    """Mention the bot; its finished reply, and the chat requests made for it."""
    before = len(w.chat_requests())
    sent = await w.discord.send_message(channel_id, author, text, mention_bot=True)

    def answered(m: dict[str, Any]) -> bool:
        replied = (m.get("message_reference") or {}).get("message_id") == sent["id"]
        return replied and not m["content"].endswith(" ⚪")

    reply = await w.discord.wait_for_bot_message(channel_id, answered, timeout=10)
    return reply["content"], w.chat_requests()[before:]


def responses(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [r["response"] for r in function_parts(request, "functionResponse")]


@pytest.mark.usefixtures("world_model")
async def test_a_lookup_round_trip_returns_only_what_the_audience_rules_allow(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        scope = f"guild:{w.alpha.id}"
        staff = await staff_only(w)
        await w.say(w.general, w.bob, DOG)
        await w.say(staff, w.bob, "I have a boat called Wave")
        await w.say(w.general, w.carol, "I play the oboe")
        await w.say(w.alpha.channels["random"], w.discord.add_user("dave"), "I have a cat called Tom")
        await w.flush()
        asked = await w.discord.send_message(
            w.general, w.bob, "remember that my salary is 100k", mention_bot=True
        )
        await w.discord.wait_for_bot_message(w.general, lambda m: "#" in m["content"], timeout=10)
        facts = {f.text: f for f in await w.facts(scope, w.bob)}
        assert facts["bob's salary is 100k"].sensitive and asked
        await w.bot.memory.set_opt_out(scope, str(w.carol["id"]), True)

        # Alice in #general: bob's boat was told in #staff-only, which not everyone here can read.
        reply, requests = await ask(w, w.general, w.alice, "do you remember bob's boat?")
        assert [offered_tools(r) >= {"search_memory"} for r in requests] == [True, True]
        [call] = function_parts(requests[1], "functionCall")
        assert call["name"] == "search_memory" and call["args"] == {"person": "bob", "query": "boat"}
        assert responses(requests[1]) == [
            {"person": "bob", "facts": [], "hint": "nothing remembered about that; say so rather than guess"}
        ]
        assert reply == "I don't remember anything about that."
        # Bob asks in #staff-only: there the boat is his to hear (in the block, or found by the lookup), so
        # it was the audience that left it out.
        reply, requests = await ask(w, staff, w.bob, "do you remember anything about me?")
        [listed] = responses(requests[1])
        heard = system_text(requests[0]) + json.dumps(listed)
        assert "bob has a boat called Wave" in heard and "bob's salary is 100k" in heard

        # What alice may hear of bob: the dog (told in #general), not the boat, not his salary (sensitive,
        # and alice is not bob). Asked about bob in general, the block holds it, and a lookup of
        # everything about him finds nothing more.
        reply, requests = await ask(w, w.general, w.alice, "do you remember anything about bob?")
        dog = facts[DOG.replace("I have", "bob has")]
        assert f'<fact id="{dog.id}"' in system_text(requests[0])
        assert "Wave" not in system_text(requests[0]) and "100k" not in system_text(requests[0])
        assert responses(requests[1])[0]["hint"] == "what matched is already in the background block"
        # Asked with a subject of its own, the block is led by the message; the lookup finds the dog,
        # whose text is cut, so the model asks for it in full by id.
        reply, requests = await ask(
            w, w.general, w.alice, "do you remember anything about bob? he is my partner for the quiz"
        )
        assert f'<fact id="{dog.id}"' not in system_text(requests[0])
        assert len(requests) == 3
        [listed] = responses(requests[1])
        assert [f["id"] for f in listed["facts"]] == [dog.id]
        assert listed["facts"][0]["text"] == dog.text[: SHORT_CHARS - 1].rstrip() + "…"
        [again] = function_parts(requests[2], "functionCall")[-1:]
        assert again["args"]["ids"] == str(dog.id)
        [full] = responses(requests[2])[-1:]
        assert full["facts"] == [{"id": dog.id, "text": dog.text, "said": dog.said_at[:10]}]
        assert reply == f"From memory: {dog.text}"
        said = json.dumps([responses(r) for r in requests])
        assert "Wave" not in said and "100k" not in said

        # Carol opted out: nothing, as if nothing were known. Dave is not in this conversation.
        reply, requests = await ask(w, w.general, w.alice, "do you remember anything about carol?")
        assert responses(requests[1])[0]["facts"] == [] and "oboe" not in json.dumps(responses(requests[1]))
        reply, requests = await ask(w, w.general, w.alice, "do you remember anything about dave?")
        [refused] = responses(requests[1])
        assert refused["error"].startswith("dave is not in this conversation") and "Tom" not in json.dumps(
            refused
        )


@pytest.mark.usefixtures("world_model", "world_database")
async def test_what_do_you_know_about_someone_brings_their_newest_facts_the_readers_may_hear(
    tmp_path: Path,
) -> None:
    async with world(tmp_path) as w:
        staff = await staff_only(w)
        for channel, said in [
            (w.general, "I work as a carpenter restoring old oak furniture for churches"),
            (w.general, "I play the oboe in a small chamber orchestra on Thursdays"),
            (w.general, "I live in Porto near the river with three noisy parrots"),
            (staff, "I have a boat called Wave"),  # the newest, but not everyone in #general may read it
        ]:
            await w.say(channel, w.bob, said)
            await w.flush()  # one flush each: each fact is newer than the one before

        _, [request] = await ask(w, w.general, w.alice, "what do you know about bob?")
        block = block_of(request)
        assert block is not None
        [bob] = [u for u in block if u.get("id") == str(w.bob["id"])]
        # None of them shares a word with the question but his name; newest first; the boat left out.
        assert [f.text for f in bob] == [
            "bob lives in Porto near the river with three noisy parrots",
            "bob plays the oboe in a small chamber orchestra on Thursdays",
            "bob works as a carpenter restoring old oak furniture for churches",
        ]
        assert "Wave" not in system_text(request)


async def test_after_two_lookups_the_model_must_answer_and_the_rest_streams(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        await w.say(w.general, w.bob, DOG)
        await w.flush()
        brain = w.brain

        def insistent(body: dict[str, Any]) -> Any:
            """A model that would look things up forever, and answers only when it no longer may."""
            offered = offered_tools(body)
            if "search_memory" in offered:
                return [
                    {"functionCall": {"name": "search_memory", "args": {"person": "bob", "query": "dog"}}}
                ]
            return "Rex, I believe. " * 8 if offered else brain(body)

        w.gemini.generate_handler = insistent
        w.gemini.stream_chunk_size = 30
        reply, requests = await ask(w, w.general, w.alice, "what is the name of bob's dog?")
        assert len(requests) == 3
        assert [len(function_parts(r, "functionCall")) for r in requests] == [0, 1, 2]
        assert [len(function_parts(r, "functionResponse")) for r in requests] == [0, 1, 2]
        assert "search_memory" not in offered_tools(requests[2])  # the third request must be answered
        assert {"remember", "forget"} <= offered_tools(requests[2])
        assert reply == ("Rex, I believe. " * 8).strip()
        # Both lookups were answered with what the block had not already shown.
        assert all("facts" in resp for r in requests for resp in responses(r))
