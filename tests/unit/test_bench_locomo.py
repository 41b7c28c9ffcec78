"""bench/locomo.py's pure parts: a LOCOMO conversation as captured messages, the reference facts the fed
turns could teach, and their scoring against the facts kept (a fake embedder; no data file, no network)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from bench import locomo


def conversation() -> dict[str, Any]:
    """Shaped as locomo10.json's `conversation`: two speakers, dated sessions, a date without turns."""
    return {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo! I adopted a dog last week."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Congrats! I moved to Oslo."},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "Oslo sounds lovely."},
        ],
        "session_10_date_time": "9:00 am on 1 August, 2023",
        "session_10": [{"speaker": "Bo", "dia_id": "D10:1", "text": "Back from the fjords."}],
        "session_2_date_time": "10:04 am on 2 June, 2023",
        "session_2": [
            {
                "speaker": "Bo",
                "dia_id": "D2:1",
                "text": "Look at my new bike!",
                "img_url": ["https://example.invalid/bike.jpg"],
                "blip_caption": "a photo of a red bike",
            },
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Nice one."},
        ],
        "session_3_date_time": "4:00 pm on 9 June, 2023",  # a date with no turns: skipped
    }


def sample(observation: dict[str, Any]) -> dict[str, Any]:
    return {"sample_id": "conv-x", "conversation": conversation(), "observation": observation}


def test_turns_follow_the_sessions_in_order_up_to_the_limit_a_minute_apart() -> None:
    fed = locomo.turns(conversation(), 4)
    assert [t.dia_id for t in fed] == ["D1:1", "D1:2", "D1:3", "D2:1"]
    assert [t.speaker for t in fed] == ["Ann", "Bo", "Ann", "Bo"]
    assert [t.at for t in fed] == [
        datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        datetime(2023, 5, 8, 13, 57, tzinfo=UTC),
        datetime(2023, 5, 8, 13, 58, tzinfo=UTC),
        datetime(2023, 6, 2, 10, 4, tzinfo=UTC),
    ]
    every = locomo.turns(conversation(), 100)
    assert [t.dia_id for t in every][-1] == "D10:1"  # session 10 after session 2, not after 1
    assert len(every) == 6


def test_a_shared_photo_carries_its_caption_unless_left_out() -> None:
    [*_, bike] = locomo.turns(conversation(), 4)
    assert bike.text == "Look at my new bike! [shares a photo: a photo of a red bike]"
    [*_, plain] = locomo.turns(conversation(), 4, captions=False)
    assert plain.text == "Look at my new bike!"


def test_messages_are_one_channel_of_two_members_in_turn_order() -> None:
    fed = locomo.turns(conversation(), 5)
    ids = locomo.speaker_ids(conversation(), fed)
    assert ids == {"Ann": "5101", "Bo": "5102"}
    batch = locomo.messages(fed, ids)
    assert [m.author_name for m in batch] == ["Ann", "Bo", "Ann", "Bo", "Ann"]
    assert [m.author_id for m in batch] == ["5101", "5102", "5101", "5102", "5101"]
    assert {m.channel_id for m in batch} == {locomo.CHANNEL}
    assert {m.scope for m in batch} == {locomo.SCOPE}
    assert not any(m.is_bot for m in batch)
    assert [int(m.message_id) for m in batch] == sorted(int(m.message_id) for m in batch)
    assert len({m.message_id for m in batch}) == 5
    assert batch[0].content == "Hi Bo! I adopted a dog last week."
    assert batch[0].created_at == "2023-05-08T13:56:00+00:00"
    assert batch[4].created_at == "2023-06-02T10:05:00+00:00"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:30 am on 1 January, 2024", datetime(2024, 1, 1, 0, 30, tzinfo=UTC)),
        ("12:05 pm on 15 July, 2023", datetime(2023, 7, 15, 12, 5, tzinfo=UTC)),
        ("8 May, 2023", datetime(2023, 5, 8, 12, 0, tzinfo=UTC)),
    ],
)
def test_session_dates_as_locomo_writes_them(text: str, expected: datetime) -> None:
    assert locomo.session_start(text) == expected


def test_a_session_date_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError):
        locomo.session_start("sometime")


def test_evidence_ids_from_a_string_a_list_or_a_misspelt_id() -> None:
    assert locomo.evidence_ids("D1:3") == ("D1:3",)
    assert locomo.evidence_ids("D8:6; D9:17") == ("D8:6", "D9:17")
    assert locomo.evidence_ids("D2:1, D2:2") == ("D2:1", "D2:2")
    assert locomo.evidence_ids(["D2:1", ["D2:5", "D3:1"]]) == ("D2:1", "D2:5", "D3:1")
    assert locomo.evidence_ids(["D1:3", "D:2:4", "D1:3"]) == ("D1:3", "D2:4")
    assert locomo.evidence_ids(None) == ()


def test_references_are_the_observations_resting_on_a_fed_turn() -> None:
    data = sample(
        {
            "session_1_observation": {
                "Ann": [["Ann adopted a dog.", "D1:1"], ["Ann likes Oslo.", "D1:3"]],
                "Bo": [["Bo moved to Oslo.", "D1:2"]],
            },
            "session_2_observation": {
                "Bo": [["Bo has a new red bike.", "D2:1"], ["Bo cycles.", ["D2:1", "D9:9"]]]
            },
            "session_10_observation": {"Bo": [["Bo visited the fjords.", "D10:1"]]},
        }
    )
    refs, rule = locomo.references(data, locomo.turns(data["conversation"], 4))
    assert rule == "evidence"
    assert [(r.speaker, r.text) for r in refs] == [
        ("Ann", "Ann adopted a dog."),
        ("Ann", "Ann likes Oslo."),
        ("Bo", "Bo moved to Oslo."),
        ("Bo", "Bo has a new red bike."),
        ("Bo", "Bo cycles."),  # one of its ids was fed
    ]
    assert refs[-1].evidence == ("D2:1", "D9:9")
    assert refs[0].key == "S1/Ann/0"


def test_without_ids_the_references_are_the_sessions_fed_whole() -> None:
    data = sample(
        {
            "session_1_observation": {"Ann": ["Ann adopted a dog."], "Bo": [["Bo moved to Oslo."]]},
            "session_2_observation": {"Bo": ["Bo has a new red bike."]},
        }
    )
    refs, rule = locomo.references(data, locomo.turns(data["conversation"], 4))  # session 2 only begun
    assert rule == "sessions"
    assert [r.text for r in refs] == ["Ann adopted a dog.", "Bo moved to Oslo."]


VECTORS = {
    "ref dog": [1.0, 0.0, 0.0],
    "ref oslo": [0.0, 1.0, 0.0],
    "ref bike": [0.0, 0.0, 1.0],
    "fact close": [0.8, 0.6, 0.0],  # cosine 0.8 with "ref dog"
    "fact loose": [0.0, 0.6, 0.8],  # cosine 0.6 with "ref oslo" and 0.8 with "ref bike"
    "fact oslo": [0.0, 2.0, 0.0],  # cosine 1.0 with "ref oslo" (not a unit vector)
    "fact other": [-1.0, 0.0, 0.0],
}


def fake_embed(texts: Sequence[str]) -> list[list[float]]:
    return [VECTORS[t] for t in texts]


def ref(speaker: str, text: str, index: int = 0) -> locomo.Reference:
    return locomo.Reference(1, index, speaker, text, ("D1:1",))


def test_a_reference_is_found_by_a_fact_of_its_speaker_at_each_threshold() -> None:
    refs = [ref("Ann", "ref dog"), ref("Bo", "ref oslo"), ref("Bo", "ref bike", 1)]
    result = locomo.score(refs, {"Ann": ["fact close", "fact other"], "Bo": ["fact loose"]}, fake_embed)
    assert result["references"] == 3
    # dog: 0.8 (both thresholds); oslo: 0.6 (only 0.55); bike: 0.8 (both)
    assert result["found"] == {"0.55": 3, "0.7": 2}
    assert result["share_found"] == {"0.55": 1.0, "0.7": pytest.approx(0.6667)}
    rows = {r["key"]: r for r in result["rows"]}
    assert rows["S1/Ann/0"]["best"] == pytest.approx(0.8)
    assert rows["S1/Ann/0"]["best_fact"] == "fact close"
    assert rows["S1/Bo/0"]["best"] == pytest.approx(0.6)
    assert result["per_speaker"]["Ann"] == {
        "references": 1,
        "active_facts": 2,
        "backed_facts": 1,  # "fact other" says nothing Ann's references say
        "found_0.55": 1,
        "found_0.7": 1,
    }
    assert result["per_speaker"]["Bo"]["found_0.7"] == 1
    assert result["active_facts"] == 3
    assert result["backed_facts"] == {"threshold": 0.55, "count": 2}


def test_a_fact_of_the_other_speaker_does_not_find_a_reference() -> None:
    refs = [ref("Bo", "ref oslo")]
    result = locomo.score(refs, {"Ann": ["fact oslo"], "Bo": []}, fake_embed)
    assert result["found"] == {"0.55": 0, "0.7": 0}
    assert result["rows"][0]["best"] == 0.0
    assert result["rows"][0]["best_fact"] is None
    assert result["rows"][0]["best_other_speaker"] == pytest.approx(1.0)
    assert result["wrong_speaker_only"] == {"0.55": 1, "0.7": 1}
    assert result["backed_facts"]["count"] == 0  # Ann's fact backs none of Ann's (no) references


def test_nothing_to_score() -> None:
    result = locomo.score([], {}, fake_embed)
    assert result["references"] == 0
    assert result["share_found"] == {"0.55": 0.0, "0.7": 0.0}
