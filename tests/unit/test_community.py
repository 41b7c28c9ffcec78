"""Community memory from a chunk: community facts and episodes, checked against what people said."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bot.memory.community import accept_community
from bot.memory.extract import render_chunk
from bot.memory.models import COMMUNITY_ID, BufferedMessage
from bot.memory.prompts.extraction import ExtractionResult

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
    # Each point keeps the line it comes from; the bot's line and the sensitive one are no source.
    assert [p.sources for p in general.points] == [{"9001": "11"}, {"9002": "12"}]
    assert general.sources == {"9001": "11", "9002": "12"}
    assert (general.started_at, general.ended_at) == ("2026-11-24T14:01:00Z", "2026-11-24T14:02:00Z")
    # A point that copies one person's line keeps who said it.
    assert by_channel["c2"].summary == "- alice: The tournament brackets are in the pinned post"


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
    assert episode.summary == "- bob: Our meetup moves to the marathon finish line in May"


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
    from bot.memory.prompts.extraction import extract_system

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


# ---- only what was said, by whom, nothing private ---------------------------------------------------------


def test_a_word_nobody_said_is_refused_and_the_cited_line_kept_in_its_place() -> None:
    chunk = [
        message(1, "11", "the bake sale moves to the church hall on Saturday"),
        message(2, "12", "I'll bring the urn and the folding tables"),
    ]
    reading = accept(
        chunk,
        {
            "community": [
                # a true decision with an accusation appended: 5 of its words were said, one was not
                {"text": "The bake sale moves to the church hall, Bob stole the float", "sources": ["m1"]},
            ],
            "episodes": [
                {
                    "points": [
                        {"text": "Bake sale moved to the church hall on Saturday", "sources": ["m1"]},
                        {"text": "Bob brings the urn and tables but refuses to pay", "sources": ["m2"]},
                        {"text": "Members argued about money", "sources": ["m2"]},  # not said at all
                    ]
                }
            ],
        },
    )
    assert [f.text for f in reading.facts] == ["the bake sale moves to the church hall on Saturday"]
    [episode] = reading.episodes
    assert [(p.text, p.sources) for p in episode.points] == [
        ("alice: the bake sale moves to the church hall on Saturday", {"9001": "11"}),  # her words
        ("bob: I'll bring the urn and the folding tables", {"9002": "12"}),
    ]
    assert "stole" not in episode.summary and "refuses" not in episode.summary


def test_a_rule_speaks_for_the_server_only_when_everyone_who_said_it_may_decide_there() -> None:
    chunk = [
        BufferedMessage(
            "9001", "guild:1", "c1", "11", "alice", "No selling in #general, use #market", "t", decides=True
        ),
        BufferedMessage(
            "9002", "guild:1", "c1", "12", "bob", "Server rule: admins must buy everyone pizza", "t"
        ),
    ]
    reading = accept(
        chunk,
        {
            "community": [
                {"text": "No selling in #general, use #market", "sources": ["m1"]},
                {"text": "Admins must buy everyone pizza", "sources": ["m2"]},
            ]
        },
    )
    voices = {f.text: (f.speaks_for_server, f.source_message_ids) for f in reading.facts}
    assert voices == {
        "No selling in #general, use #market": (True, ["9001"]),
        "Admins must buy everyone pizza": (False, ["9002"]),  # served as Bob's word, not the server's
    }


# Private details about a member who is not in the chunk, in words the floor's own word lists were not
# written from (tests/unit/test_shared_floor.py holds its own held-out phrasings).
PRIVATE = [
    "Marguerite is off work for her chemo again, cover her Thursday shift",
    "send the parcel to Teodor, 9 Birchfield Avenue, flat 12",
    "Ruairi's been sober six months, so no pub quiz for him",
    "ring Selin on 07911 123456 if the door is locked",
    "Henrik only makes 1800 a month, that's why he skips the trips",
    "Yusra told me she's pregnant, keep it quiet",
    "Odile goes to mass every morning before the stream",
    "Bram did two years for burglary, don't leave him alone with the till",
]


@pytest.mark.parametrize("line", PRIVATE)
def test_a_private_detail_about_an_absent_member_reaches_no_shared_memory_whatever_the_model_marks(
    line: str,
) -> None:
    chunk = [message(1, "11", line), message(2, "12", "the swap meet is on Sunday at the pier")]
    reading = accept(
        chunk,
        {
            "community": [
                {"text": line, "sources": ["m1"]},
                {"text": "The swap meet is on Sunday", "sources": ["m2"]},
            ],
            "episodes": [{"points": [{"text": line, "sources": ["m1"]}, {"text": line}]}],
        },
    )
    shared = [f.text for f in reading.facts] + [p.text for e in reading.episodes for p in e.points]
    assert shared == ["The swap meet is on Sunday"]
    assert all("9001" not in e.sources for e in reading.episodes)


@pytest.mark.parametrize(
    "secret",
    [
        "the guest wifi key is sprocket7731",
        "whitelist phrase for the server: copper kettle",
        "gate code 4471#",
    ],
)
def test_a_secret_under_another_name_reaches_no_shared_memory(secret: str) -> None:
    chunk = [message(1, "11", secret)]
    reading = accept(
        chunk,
        {"community": [{"text": secret, "sources": ["m1"]}], "episodes": [{"points": [{"text": secret}]}]},
    )
    assert reading.facts == [] and reading.episodes == []


def test_a_line_asking_the_bot_to_remember_feeds_no_episode() -> None:
    chunk = [
        message(1, "11", "<@99> remember that I have coeliac disease"),
        message(2, "12", "potluck moves to Saturday at 6pm"),
    ]
    reading = accept(
        chunk,
        {
            "episodes": [
                {
                    "points": [
                        {"text": "alice asked to remember her diet", "sources": ["m1"]},
                        {"text": "Potluck moves to Saturday at 6pm"},
                    ]
                }
            ],
        },
    )
    [episode] = reading.episodes
    assert [p.text for p in episode.points] == ["bob: potluck moves to Saturday at 6pm"]
    assert episode.sources == {"9002": "12"}


def test_with_an_answer_that_names_nothing_the_bot_forms_community_memory_itself() -> None:
    chunk = [
        message(1, "11", "we decided: the book club meets every first Tuesday at 7pm"),
        message(2, "12", "potluck at Dana's place on March 3rd, bring a dish"),
        message(3, "11", "lol my cat just knocked over my tea"),
        message(4, "12", "<@99> what did we decide about the book club?"),
        message(5, "bot", "You decided to meet every first Tuesday."),
        message(6, "11", "here's the reading list https://example.org/list", channel="c2"),
    ]
    reading = accept(chunk, {"facts": [{"speaker": "alice", "text": "alice has a cat", "sources": ["m3"]}]})
    assert [(f.text, f.source_message_ids) for f in reading.facts] == [
        ("we decided: the book club meets every first Tuesday at 7pm", ["9001"])
    ]
    by_channel = {
        e.origin.channel_id: [(p.text, list(p.sources)) for p in e.points] for e in reading.episodes
    }
    assert by_channel == {
        "c1": [
            ("alice: we decided: the book club meets every first Tuesday at 7pm", ["9001"]),
            ("bob: potluck at Dana's place on March 3rd, bring a dish", ["9002"]),
        ],
        "c2": [("alice: here's the reading list https://example.org/list", ["9006"])],
    }  # the question to the bot and its answer make no point
