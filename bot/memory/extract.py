"""A flushed chunk of conversation -> durable facts per human speaker, in one Gemini call.

The model proposes; this module disposes: a fact is accepted only for a human who spoke in the chunk,
never from the bot's own turns, and its sources are narrowed to that person's own messages, so that
one person's words can never become another person's memory. Sensitive facts (health, beliefs,
finances, contact data ...) are never kept from ordinary chat: only when their owner asks
(`remembered_facts`).
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import date, datetime
from typing import Protocol, TypeVar

from pydantic import BaseModel

from bot.llm.gemini import Purpose
from bot.llm.prompts import (
    EXTRACT_SYSTEM,
    REMEMBER_SYSTEM,
    ExtractionResult,
    RememberResult,
    extraction_prompt,
    remember_prompt,
)
from bot.memory.models import BufferedMessage, NewFact, Origin, iso, utcnow
from bot.memory.text import clean, strip_background_blocks, worth_reading

log = logging.getLogger(__name__)

MAX_FACT_CHARS = 500
# A chunk is at most 50 messages by default; an answer with thousands of facts is a model run away, and
# everything after extraction (embedding, de-duplication, candidates) grows with the number of facts.
MAX_FACTS_PER_SPEAKER = 40
MAX_FACTS_PER_CHUNK = 100
T = TypeVar("T", bound=BaseModel)


class JsonModel(Protocol):
    """What the pipeline needs from Gemini for structured answers (GeminiClient, or a fake in tests)."""

    async def generate_json(self, purpose: Purpose, *, system: str, prompt: str, schema: type[T]) -> T: ...


def _valid_date(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        return None


def chunk_payload(chunk: list[BufferedMessage]) -> tuple[list[dict[str, object]], list[dict[str, str]]]:
    """Messages and human speakers as the model sees them: background blocks stripped, text cleaned."""
    messages: list[dict[str, object]] = []
    speakers: dict[str, str] = {}
    for m in chunk:
        text = clean(strip_background_blocks(m.content))
        if not text:
            continue
        messages.append(
            {
                "id": m.message_id,
                "author_id": m.author_id,
                "author": m.author_name,
                "time": m.created_at,
                "bot": m.is_bot,
                "text": text,
            }
        )
        if not m.is_bot:
            speakers[m.author_id] = m.author_name
    return messages, [{"user_id": uid, "name": name} for uid, name in speakers.items()]


async def extract_facts(
    llm: JsonModel, chunk: list[BufferedMessage], now: datetime | None = None
) -> list[NewFact]:
    """Ask Gemini for the chunk's durable facts and keep only the ones this chunk can vouch for.

    No call is made when no human said anything worth reading. Gemini errors propagate, so the caller
    leaves the messages pending.
    """
    if not any(not m.is_bot and worth_reading(m.content) for m in chunk):
        return []
    messages, speakers = chunk_payload(chunk)
    prompt = extraction_prompt(messages, speakers, iso(now or utcnow()))
    result = await llm.generate_json(
        Purpose.EXTRACT, system=EXTRACT_SYSTEM, prompt=prompt, schema=ExtractionResult
    )
    return accept_facts(result, chunk)


def accept_facts(result: ExtractionResult, chunk: list[BufferedMessage]) -> list[NewFact]:
    """Validate the model's answer against the chunk: right speaker, own sources, no duplicates."""
    scope = chunk[0].scope
    humans = {m.author_id: m.author_name for m in chunk if not m.is_bot}
    own_messages: dict[str, list[str]] = {}
    for m in chunk:
        if not m.is_bot:
            own_messages.setdefault(m.author_id, []).append(m.message_id)
    accepted: list[NewFact] = []
    seen: set[tuple[str, str]] = set()
    per_speaker: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for item in result.facts:
        user_id = item.user_id.strip()
        if user_id not in humans:
            log.info("refused an extracted fact about %r: not a human speaker of this chunk", user_id)
            continue
        if per_speaker[user_id] >= MAX_FACTS_PER_SPEAKER or len(accepted) >= MAX_FACTS_PER_CHUNK:
            dropped[user_id] += 1
            continue
        text = clean(strip_background_blocks(item.text), MAX_FACT_CHARS)
        if not worth_reading(text) or (user_id, text.casefold()) in seen:
            continue
        if item.sensitive:  # kept only when the person asks for it (remember), never from chat
            log.info("did not keep a sensitive fact about %r learned from chat", user_id)
            continue
        sources = [mid for mid in item.source_message_ids if mid in own_messages[user_id]]
        if item.source_message_ids and not sources:
            # It cites only someone else's words (or the bot's): that is not the person saying it.
            log.info("refused an extracted fact about %r: its sources are not their messages", user_id)
            continue
        seen.add((user_id, text.casefold()))
        per_speaker[user_id] += 1
        accepted.append(
            NewFact(
                scope=scope,
                user_id=user_id,
                user_name=humans[user_id],
                text=text,
                source_message_ids=sources or list(own_messages[user_id]),
                valid_from=_valid_date(item.valid_from),
            )
        )
    if dropped:
        log.warning(
            "extraction answered too many facts: dropped %d of %d past the caps of %d per speaker and %d "
            "per chunk (%s)",
            dropped.total(),
            len(result.facts),
            MAX_FACTS_PER_SPEAKER,
            MAX_FACTS_PER_CHUNK,
            ", ".join(f"{humans[uid]}: {count}" for uid, count in dropped.items()),
        )
    return accepted


async def remembered_facts(
    llm: JsonModel,
    *,
    scope: str,
    user_id: str,
    name: str,
    text: str,
    message_id: str,
    origin: Origin,
) -> list[NewFact]:
    """What a person explicitly asked to be remembered about themselves, as facts of theirs.

    Sensitive facts are kept here (they asked) and marked, so recall uses them only with their owner.
    """
    request = clean(strip_background_blocks(text))
    if not worth_reading(request):
        return []
    result = await llm.generate_json(
        Purpose.EXTRACT, system=REMEMBER_SYSTEM, prompt=remember_prompt(name, request), schema=RememberResult
    )
    facts: dict[str, NewFact] = {}
    for item in result.facts:
        fact_text = clean(strip_background_blocks(item.text), MAX_FACT_CHARS)
        if worth_reading(fact_text) and fact_text.casefold() not in facts:
            facts[fact_text.casefold()] = NewFact(
                scope=scope,
                user_id=user_id,
                user_name=name,
                text=fact_text,
                source_message_ids=[message_id],
                origins={message_id: origin},
                sensitive=item.sensitive,
            )
    return list(facts.values())
