"""bench/quality_script_b.py, the second chat of `bench.quality --script b`: its size, its annotations
(every keyword matches its own line and no one else's), its independence from script a, and the
scoring of bench/quality.py on it."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from bench import quality, quality_script
from bench import quality_script_b as b
from bench.quality_script import Also, Change, Line, Refine, Repeat, Say, Trap, fold, kw, matches

LINES = b.script()
PHASES_OF = [i for i, phase in enumerate(b.PHASES) for _ in phase]  # phase of each annotated line
ANNOTATED = [line for phase in b.PHASES for line in phase]
SAYS = [line for line in ANNOTATED if isinstance(line.note, Say)]
TRAPS = [line for line in ANNOTATED if isinstance(line.note, Trap)]
REPEATS = [line for line in ANNOTATED if isinstance(line.note, Repeat)]


def notes(kind: type) -> list[Any]:
    return [line.note for line in ANNOTATED if isinstance(line.note, kind)]


def test_size_people_and_annotations() -> None:
    assert b.PHASE == 50 and len(b.PHASES) == 3
    assert all(len(phase) <= b.PHASE for phase in b.PHASES)
    assert len(LINES) >= 150 and len(LINES) == len(b.PHASES) * b.PHASE
    assert len(b.PEOPLE) >= 6
    assert {line.speaker for line in LINES} == {*b.PEOPLE.values(), b.BOT_NAME}
    assert len(SAYS) >= 35
    assert len(notes(Change)) >= 5
    assert len(notes(Refine)) >= 4
    assert len(notes(Repeat)) >= 4
    assert len(notes(Also)) >= 2
    kinds = Counter(note.kind for note in notes(Trap))
    assert set(kinds) >= {"gossip", "bot", "question", "mood", "joke", "meta", "hypothetical", "secret"}
    assert all(n >= 2 for n in kinds.values()), kinds
    assert len(b.PERFECT_CASES) >= 10


def test_the_script_places_every_annotated_line_in_its_phase_in_order() -> None:
    for i, phase in enumerate(b.PHASES):
        chunk = LINES[i * b.PHASE : (i + 1) * b.PHASE]
        assert [line for line in chunk if line.note is not None] == list(phase)
    assert b.script() == LINES, "the same seed, the same chat"
    assert b.script(seed=5) != LINES
    assert len(b.script(2)) == 2 * b.PHASE


def test_truth_expects_every_change() -> None:
    truth = b.Truth.of(LINES)
    assert len(truth.statements) == len(SAYS), "fact ids are unique"
    expected = Counter(e["kind"] for e in truth.expectations())
    assert expected["INVALIDATE"] == len(notes(Change))
    assert expected["MERGE"] == len(notes(Refine))
    assert expected["DUPLICATE"] == len(notes(Repeat))
    assert expected["KEEP"] == len(notes(Also))


def test_every_keyword_group_matches_its_own_line() -> None:
    facts = {line.note.fact: line for line in SAYS}
    for line in SAYS + TRAPS:
        note = line.note
        assert isinstance(note, Say | Trap)
        for group in note.keywords:
            assert matches(line.text, (group,)), (line.text, group)
    for line in REPEATS:  # a repeat says its fact again, in other words
        assert isinstance(line.note, Repeat)
        assert matches(line.text, facts[line.note.of].note.keywords), line.text


def test_every_fact_id_names_its_speaker() -> None:
    for line in SAYS:
        assert line.note.fact.split(".")[0] == line.speaker.lower(), line.note.fact


def referred(note: Any) -> str:
    if isinstance(note, Change):
        return note.replaces
    if isinstance(note, Refine):
        return note.base
    if isinstance(note, Also):
        return note.beside
    return str(note.of)


def test_every_change_refers_to_an_earlier_fact_of_the_same_person_in_an_earlier_phase() -> None:
    said: dict[str, tuple[str, int, int]] = {}  # fact id -> speaker, phase, position
    for position, (phase, line) in enumerate(zip(PHASES_OF, ANNOTATED, strict=True)):
        note = line.note
        if isinstance(note, Change | Refine | Also | Repeat):
            old = referred(note)
            assert old in said, f"{old} is not said before {line.text!r}"
            speaker, old_phase, old_position = said[old]
            assert speaker == line.speaker, (old, line.text)
            assert old_phase < phase and old_position < position, (old, line.text)
        if isinstance(note, Say):
            said[note.fact] = (line.speaker, phase, position)


def test_each_fact_changes_once_and_repeated_or_kept_facts_stay() -> None:
    changed = [referred(n) for n in notes(Change) + notes(Refine)]
    assert len(changed) == len(set(changed)), "one change per fact"
    stay = {referred(n) for n in notes(Also) + notes(Repeat)}
    assert not stay & set(changed), (
        "a repeated or kept fact is not replaced too (its outcome is judged at the end)"
    )


def test_keywords_are_their_speakers_own() -> None:
    """A fact matching a statement's keywords comes from that statement's speaker: no line of anyone
    else (chatter, traps, the bot) matches them; a trap's keywords match no statement and no chatter."""
    chatter = [line for line in LINES if line.note is None]
    for line in SAYS:
        for other in LINES:
            if other.speaker != line.speaker:
                assert not matches(other.text, line.note.keywords), (line.note.fact, other.text)
    for line in TRAPS:
        for other in [*SAYS, *REPEATS, *chatter]:
            assert not matches(other.text, line.note.keywords), (line.text, other.text)
        for other in TRAPS:
            if other is not line:
                assert not matches(other.text, line.note.keywords), (line.text, other.text)
    gossip = [line for line in TRAPS if line.note.kind == "gossip"]
    assert all(line.note.about in b.ID_OF and line.note.about != line.speaker for line in gossip)
    assert all(line.speaker == b.BOT_NAME for line in TRAPS if line.note.kind == "bot")


def b_words() -> Iterator[str]:
    """Every text of script b: names, lines, chatter, perfect cases."""
    yield from b.PEOPLE.values()
    yield b.BOT_NAME
    yield from (line.text for line in LINES)
    yield from b.CHATTER
    for case in b.PERFECT_CASES:
        yield case.name
        yield case.new
        yield from case.known


def a_vocabulary() -> set[str]:
    """Script a's names, places, jobs, pets, hobbies and languages: its people and bot, every keyword
    of its statements and of its gossip, bot, question and hypothetical traps, and the capitalised words
    of its perfect cases (names, places, pets)."""
    words = {*quality_script.PEOPLE.values(), quality_script.BOT_NAME}
    for phase in quality_script.PHASES:
        for line in phase:
            note = line.note
            if isinstance(note, Say) or (
                isinstance(note, Trap) and note.kind in ("gossip", "bot", "question", "hypothetical")
            ):
                words |= {word for group in note.keywords for word in group}
    for case in quality_script.PERFECT_CASES:
        for text in (*case.known, case.new):
            words |= set(re.findall(r"\b[A-Z][a-z]+", text))
    return words


def test_no_name_place_job_pet_or_hobby_of_script_a() -> None:
    vocabulary = a_vocabulary()
    assert {"Ana", "Porto", "Oslo", "nurse", "carpent", "rex", "miso", "Gus", "Cork"} <= vocabulary
    texts = [fold(t) for t in b_words()]
    found = sorted({w for w in vocabulary if any(matches(t, kw(w)) for t in texts)})
    assert not found, f"script a's words in script b: {found}"
    assert not set(b.PEOPLE) & set(quality_script.PEOPLE)
    assert b.SCOPE != quality_script.SCOPE


def test_perfect_cases_are_new_and_well_formed() -> None:
    a_texts = {t for case in quality_script.PERFECT_CASES for t in (*case.known, case.new)}
    for case in b.PERFECT_CASES:
        assert case.expected in ("KEEP", "MERGE", "INVALIDATE", "DUPLICATE")
        if case.expected == "KEEP":
            assert case.target is None
        else:
            assert case.target is not None and 0 <= case.target < len(case.known)
        assert case.new not in a_texts and not set(case.known) & a_texts
        assert all(text.startswith(case.name) for text in (*case.known, case.new))
    kinds = Counter(case.expected for case in b.PERFECT_CASES)
    assert all(kinds[k] >= 3 for k in ("KEEP", "MERGE", "INVALIDATE", "DUPLICATE")), kinds


def test_messages_are_the_bots_turns_and_the_peoples() -> None:
    batch = b.messages(LINES)
    assert len(batch) == len(LINES) and len({m.message_id for m in batch}) == len(batch)
    for message, line in zip(batch, LINES, strict=True):
        assert message.is_bot == (line.speaker == b.BOT_NAME)
        assert message.author_id == (b.BOT_ID if message.is_bot else b.ID_OF[line.speaker])
        assert message.scope == b.SCOPE and message.channel_id == b.CHANNEL


# ---- bench/quality.py on script b ------------------------------------------------------------------------


@pytest.fixture
def script_b() -> Iterator[None]:
    quality.use_script("b")
    yield
    quality.use_script("a")


def perfect_run(lines: list[Line]) -> dict[str, Any]:
    """A run whose extraction proposed every statement (its own line as the fact) and one fact per
    trap of a person, and whose final memory holds exactly the facts the script expects to stay."""
    truth = b.Truth.of(lines)
    replaced = truth.replaced()
    proposed, final = [], {}
    for line in lines:
        if isinstance(line.note, Say | Trap) and line.speaker in b.ID_OF:
            uid = b.ID_OF[line.speaker]
            proposed.append({"user_id": uid, "person": line.speaker, "text": line.text, "sources": []})
            if isinstance(line.note, Say):
                status = "superseded" if line.note.fact in replaced else "active"
                final.setdefault(uid, []).append({"id": len(proposed), "text": line.text, "status": status})
    return {
        "lines": lines,
        "proposed": proposed,
        "raw_proposals": [{"user_id": p["user_id"], "text": p["text"]} for p in proposed],
        "final": final,
        "applied": [],
        "calls": [],
        "extraction_mode": "enumerate",
    }


@pytest.mark.usefixtures("script_b")
def test_quality_scores_script_b() -> None:
    score = quality.score_chat(perfect_run(LINES))
    assert score["self_statements"] == len(SAYS) and not score["missed"]
    assert score["changes_right"] == score["changes_expected"] == 19
    assert score["final_expected_active_present"] == score["final_expected_active"]
    assert not score["final_stale"]
    people_traps = Counter(
        "wrong_person" if line.note.kind == "gossip" else line.note.kind
        for line in TRAPS
        if line.speaker in b.ID_OF
    )
    assert score["classes"] == {"correct": len(SAYS), **people_traps}


def test_script_b_result_files_and_rescore(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        quality.main(["--help"])
    assert "--script {a,b}" in capsys.readouterr().out
    run = perfect_run(LINES)
    run["messages"], run["flushes"], run["per_100"] = len(LINES), [], {}
    run.pop("lines")
    path = tmp_path / "quality_b.json"
    path.write_text(json.dumps({"script": "b", "endpoint": "hand-made", "chat": run}))
    try:
        quality.main(["--rescore", str(path)])
        assert quality.SCRIPT is b
        printed = capsys.readouterr().out
        assert "6 people" in printed and "script b" in printed
        rescored = json.loads(path.read_text())["chat"]["score"]
        assert rescored["changes_right"] == 19 and not rescored["missed"]
    finally:
        quality.use_script("a")
