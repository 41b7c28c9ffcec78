"""Community memory from a chunk: community facts and episodes, checked against what people said."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.memory.community import accept_community
from bot.memory.extract import render_chunk
from bot.memory.models import COMMUNITY_ID, BufferedMessage
from bot.memory.prompts import ExtractionResult

NOW = datetime(2026, 11, 24, 14, 30, tzinfo=UTC)
NAMES = {"11": "alice", "12": "bob"}


def message(
    n: int, author: str, text: str, *, channel: str = "c1", scope: str = "guild:1"
) -> BufferedMessage:
    return BufferedMessage(
        message_id=f"9{n:03d}",
        scope=scope,
        channel_id=channel,
        author_id=author,
        author_name=NAMES.get(author, "memory-bot"),
        content=text,
        created_at=f"2026-11-24T14:{n:02d}:00Z",
        is_bot=author == "bot",
    )


def accept(chunk: list[BufferedMessage], answer: dict[str, Any]) -> Any:
    view = render_chunk(chunk, NOW)
    result = ExtractionResult.model_validate({"facts": [], **answer})
    kept = [f.text for f in result.facts if not f.text.startswith("refused:")]  # what the bot accepted
    return accept_community(
        result, chunk, view.local_ids, lambda text: text.lower().startswith(("alice", "bob")), accepted=kept
    )


CHUNK = [
    message(1, "11", "Game night moves to Fridays at 20:00 UTC from now on"),
    message(2, "12", "Great, and the Minecraft server address is play.example.org"),
    message(3, "bot", "Noted! Bob also told me in #staff that he is quitting"),
    message(4, "12", "I have diabetes so bring snacks without sugar please"),
    message(5, "11", "The tournament brackets are in the pinned post", channel="c2"),
]


def test_community_facts_kept_only_when_their_messages_say_them() -> None:
    reading = accept(
        CHUNK,
        {
            "community": [
                {"text": "Game night is on Fridays at 20:00 UTC", "sources": ["m1"]},
                {"text": "The Minecraft server address is play.example.org"},  # no sources: found
                {"text": "Bob is quitting the server", "sources": ["m3"]},  # the bot's words, about bob
                {"text": "The server bans swearing", "sources": ["m1"]},  # nobody said it
                {"text": "Members share their medical needs", "sources": ["m4"], "sensitive": True},
                {"text": "When is the next raid?", "sources": ["m2"]},
            ]
        },
    )
    kept = {f.text: f for f in reading.facts}
    assert set(kept) == {
        "Game night is on Fridays at 20:00 UTC",
        "The Minecraft server address is play.example.org",
    }
    assert all(f.user_id == COMMUNITY_ID and f.scope == "guild:1" for f in reading.facts)
    assert kept["Game night is on Fridays at 20:00 UTC"].source_message_ids == ["9001"]
    assert kept["The Minecraft server address is play.example.org"].source_message_ids == ["9002"]


def test_an_episode_per_channel_from_its_own_peoples_words_without_sensitive_points() -> None:
    reading = accept(
        CHUNK,
        {
            "facts": [{"speaker": "bob", "text": "bob has diabetes", "sources": ["m4"], "sensitive": True}],
            "episodes": [
                {
                    "channel": 1,
                    "points": [
                        {"text": "Game night moves to Fridays at 20:00 UTC", "sources": ["m1"]},
                        {"text": "Minecraft server address: play.example.org", "sources": ["m2"]},
                        {"text": "Bob is quitting", "sources": ["m3"]},  # only the bot said it
                        {"text": "Tournament brackets are pinned", "sources": ["m5"]},  # channel 2's words
                        {
                            "text": "Bob has diabetes, bring sugar-free snacks"
                        },  # what the answer marked sensitive
                        {"text": "Snacks without sugar requested", "sensitive": True},
                    ],
                },
                {"channel": "channel 2", "points": [{"text": "Tournament brackets are in the pinned post"}]},
                {"channel": 7, "points": [{"text": "Game night moves to Fridays"}]},  # no such channel
            ],
        },
    )
    by_channel = {e.origin.channel_id: e for e in reading.episodes}
    assert set(by_channel) == {"c1", "c2"}
    general = by_channel["c1"]
    assert general.summary == (
        "- Game night moves to Fridays at 20:00 UTC\n- Minecraft server address: play.example.org"
    )
    assert general.sources == {
        "9001": "11",
        "9002": "12",
        "9004": "12",
    }  # every person's message, not the bot's
    assert (general.started_at, general.ended_at) == ("2026-11-24T14:01:00Z", "2026-11-24T14:04:00Z")
    assert by_channel["c2"].summary == "- Tournament brackets are in the pinned post"


def test_dms_keep_no_community_memory() -> None:
    dm = [message(1, "11", "Game night moves to Fridays at 20:00 UTC", scope="dm")]
    reading = accept(
        dm,
        {
            "community": [{"text": "Game night moves to Fridays at 20:00 UTC", "sources": ["m1"]}],
            "episodes": [{"channel": 1, "points": [{"text": "Game night moves to Fridays"}]}],
        },
    )
    assert reading.facts == [] and reading.episodes == []


def test_an_answer_without_community_parts_is_still_a_good_answer() -> None:
    result = ExtractionResult.model_validate({"facts": []})
    assert result.community == [] and result.episodes == []


def test_a_point_that_is_mostly_someones_own_fact_stays_out_of_the_episode() -> None:
    chunk = [
        message(1, "11", "I am a marathon runner"),
        message(2, "12", "Our meetup moves to the marathon finish line in May"),
    ]
    reading = accept(
        chunk,
        {
            "facts": [{"speaker": "alice", "text": "alice is a marathon runner", "sources": ["m1"]}],
            "episodes": [
                {
                    "points": [
                        {"text": "alice: I am a marathon runner"},  # her fact: hers, under her rules
                        {"text": "The meetup moves to the marathon finish line in May"},
                    ]
                }
            ],
        },
    )
    [episode] = reading.episodes
    assert episode.summary == "- The meetup moves to the marathon finish line in May"


def test_a_refused_persons_fact_takes_no_point_and_small_talk_is_no_community_fact() -> None:
    chunk = [
        message(1, "11", "The tournament final moves to the main stage on Sunday"),
        message(2, "12", "brb, coffee"),
        message(3, "12", "the weather is wild today"),
    ]
    reading = accept(
        chunk,
        {
            # the model copied the line as a fact of alice's, and the bot refused it
            "facts": [{"speaker": "alice", "text": "refused: The tournament final moves to the main stage"}],
            "community": [
                {"text": "The tournament final is on the main stage", "sources": ["m1"]},
                {"text": "brb, coffee", "sources": ["m2"]},  # copied chatter, said word for word
                {"text": "The weather is wild today", "sources": ["m3"]},
            ],
            "episodes": [{"points": [{"text": "The tournament final moves to the main stage on Sunday"}]}],
        },
    )
    assert [f.text for f in reading.facts] == ["The tournament final is on the main stage"]
    [episode] = reading.episodes
    assert "main stage on Sunday" in episode.summary


def test_a_point_copied_from_another_channels_line_is_not_that_channels() -> None:
    chunk = [
        message(1, "11", "Anyone know when it starts? UTC times please"),
        message(2, "12", "The raid starts at 21:00 UTC on Tuesdays", channel="c2"),
    ]
    reading = accept(
        chunk,
        {"episodes": [{"channel": 1, "points": [{"text": "The raid starts at 21:00 UTC on Tuesdays"}]}]},
    )
    assert [e.origin.channel_id for e in reading.episodes] == []


def test_the_instruction_holds_no_example_a_model_could_return_as_a_fact() -> None:
    from bot.memory.prompts import extract_system

    instruction = extract_system(community=True)
    assert "Game night" not in instruction and "Fridays" not in instruction  # it once held one


def test_a_shared_secret_is_no_community_fact_nor_an_episode_point_and_a_question_keeps_its_statement() -> (
    None
):
    chunk = [
        message(1, "11", "The wiki login is guild / Tulip-42-river, keep it between us"),
        message(2, "12", "Raids are on Sundays at 18:00 UTC from now on. Who brings snacks?"),
    ]
    reading = accept(
        chunk,
        {
            "community": [
                {"text": "The wiki login is guild / Tulip-42-river", "sources": ["m1"]},
                {"text": "The wiki is reached with Tulip-42-river", "sources": ["m1"]},
                {"text": "Raids are on Sundays at 18:00 UTC. Who brings snacks?", "sources": ["m2"]},
            ],
            "episodes": [
                {
                    "channel": 1,
                    "points": [
                        {"text": "the wiki login is Tulip-42-river", "sources": ["m1"]},
                        {"text": "raids moved to Sundays at 18:00 UTC", "sources": ["m2"]},
                    ],
                }
            ],
        },
    )
    assert [f.text for f in reading.facts] == ["Raids are on Sundays at 18:00 UTC."]
    [episode] = reading.episodes
    assert "Tulip" not in episode.summary and "Sundays" in episode.summary
