"""Remembering on request: facts come from the person's own words; the model only points and phrases."""

from __future__ import annotations

from typing import Any

from bot.memory.models import MAX_FACT_CHARS, Origin
from bot.memory.remembering import (
    Refusal,
    RememberRequest,
    asks_to_remember,
    pointed_part,
    remembered_facts,
    said_in,
)
from bot.memory.text import clean, cut
from tests.fakes import FakeLLM


def answering(*facts: tuple[str, bool]) -> FakeLLM:
    def handler(payload: dict[str, Any]) -> dict[str, Any]:
        return {"facts": [{"text": text, "sensitive": sensitive} for text, sensitive in facts]}

    return FakeLLM(extract=handler)


async def propose(llm: FakeLLM, text: str, **options: Any) -> Any:
    return await remembered_facts(
        llm,
        RememberRequest(
            scope="dm", user_id="1", name="Ana", text=text, message_id="9", origin=Origin("5"), **options
        ),
    )


def test_a_fact_is_said_when_most_of_its_words_are_the_persons_own() -> None:
    assert said_in("Ana lives in Oslo", "I live in Oslo", "Ana")
    assert said_in("Ana plays the oboe", "I play the oboe!", "Ana")
    assert said_in("Ana likes cats", "I like cats", "Ana")  # "like" is a stop word, still her word
    assert not said_in("Ana is HIV positive", "what's the weather like today?", "Ana")
    assert not said_in("Ana likes cats and is HIV positive", "I like cats", "Ana")
    assert not said_in("Ana", "I am Ana", "Ana")  # nothing but the name says nothing


def test_the_models_pointer_selects_sentences_of_the_message_and_never_adds_any() -> None:
    message = "I like cats. The weather is nice. I moved to Oslo!"
    assert pointed_part(message, "") == message
    assert pointed_part(message, "moved to Oslo") == "I moved to Oslo!"
    assert pointed_part(message, "I am HIV positive") == ""


def test_consent_for_a_sensitive_fact_is_a_request_in_so_many_words() -> None:
    assert asks_to_remember("please remember that I have diabetes")
    assert asks_to_remember("Don't forget: I'm allergic to nuts")
    assert asks_to_remember("souviens-toi que je suis diabétique")
    assert not asks_to_remember("I have diabetes, any snack ideas?")


async def test_what_the_model_invents_is_refused_and_what_she_said_is_kept() -> None:
    llm = answering(("Ana lives in Oslo", False), ("Ana is HIV positive", True))
    proposal = await propose(llm, "I live in Oslo", asked=True)
    assert [f.text for f in proposal.facts] == ["Ana lives in Oslo"]
    assert proposal.facts[0].source_message_ids == ["9"]
    assert proposal.refused == [Refusal.NOT_SAID]


async def test_a_pointer_at_nothing_she_said_asks_no_model_and_is_refused() -> None:
    llm = answering(("Ana is HIV positive", True))
    proposal = await propose(llm, "what's the weather like?", pointer="I am HIV positive", asked=False)
    assert proposal.facts == [] and proposal.refused == [Refusal.NOT_SAID]
    assert llm.calls == []


async def test_a_sensitive_fact_needs_her_own_request() -> None:
    llm = answering(("Ana has diabetes", True))
    unasked = await propose(llm, "I have diabetes, any snack ideas?", asked=False)
    assert unasked.facts == [] and unasked.refused == [Refusal.SENSITIVE_UNASKED]
    asked = await propose(llm, "remember that I have diabetes", asked=True)
    assert [(f.text, f.sensitive) for f in asked.facts] == [("Ana has diabetes", True)]


async def test_a_fact_over_the_limit_is_refused_whole_never_cut() -> None:
    words = "really " * 80
    llm = answering((f"Ana {words}likes the oboe", False))
    proposal = await propose(llm, f"I {words}like the oboe")
    assert proposal.facts == [] and proposal.refused == [Refusal.TOO_LONG]
    assert Refusal.TOO_LONG.told.startswith(f"That's too long for one fact (at most {MAX_FACT_CHARS}")


def test_text_cut_for_length_ends_at_a_whole_word() -> None:
    text = "Carol really likes the oboe and the bassoon"
    assert cut(text, 20) == "Carol really likes"
    assert clean(text, 20) == "Carol really likes"
    assert cut("x" * 50, 20) == "x" * 20  # one word longer than the limit: cut where it must be
    assert cut(text, 100) == text


async def test_a_secret_is_never_kept_even_when_asked() -> None:
    llm = answering(
        ("Ana's wifi password is Tulip-42-river", False), ("Ana uses Tulip-42-river at home", False)
    )
    proposal = await propose(llm, "remember my wifi password is Tulip-42-river, I use it at home", asked=True)
    assert proposal.facts == [] and proposal.refused == [Refusal.SECRET, Refusal.SECRET]
    assert "never keep" in Refusal.SECRET.told
    kept = await propose(answering(("Ana lives in Oslo", False)), "remember that I live in Oslo")
    assert [f.text for f in kept.facts] == ["Ana lives in Oslo"]


async def test_a_copied_request_is_written_about_its_owner_without_the_request_words() -> None:
    llm = answering(("remember that my daughter's name is Ingrid", False))
    proposal = await propose(llm, "remember that my daughter's name is Ingrid")
    assert [f.text for f in proposal.facts] == ["Ana's daughter's name is Ingrid"]
