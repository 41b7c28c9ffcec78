"""What a person explicitly asks to be remembered -> facts of theirs, made from their own words only.

The model proposes, the bot decides. The model may point at the part of the person's message to keep
(the chat's `remember` tool) and writes it in the third person, marking what is sensitive; the bot keeps
a fact only when the person's own message says it, and a sensitive one only when that message asks to
be remembered. Another member's message, an attachment or a recalled fact can therefore never make the
bot store something for someone: the only text read is the author's own, and what the model adds to it
is refused. A fact longer than `MAX_FACT_CHARS` is refused whole, never cut, and a secret (a password,
key, code or card number: `durable.holds_secret`) is refused even when asked.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from enum import StrEnum

from bot.memory.durable import holds_secret, secret_values
from bot.memory.model_ports import JsonModel, Purpose, answer_budget
from bot.memory.models import MAX_FACT_CHARS, Decision, Fact, NewFact, Origin
from bot.memory.prompts.remembering import REMEMBER_SYSTEM, RememberResult, remember_prompt
from bot.memory.text import clean, stems, strip_background_blocks, worth_reading
from bot.memory.third_person import third_person

log = logging.getLogger(__name__)

# The share of a fact's informative words (its owner's name aside) that the person's message must hold:
# a model rewrites "I live in Oslo" as "Ana lives in Oslo", but a fact with words of its own is refused.
SAID_SHARE = 2 / 3
# An explicit request to be remembered, in the languages people most often chat in here.
_ASKS = re.compile(
    r"\b(?:remember|don'?t forget|do not forget|keep in mind|make a note|note that|take note"
    r"|merk dir|vergiss nicht|souviens[- ]toi|rappelle[- ]toi|n'oublie pas|retiens"
    r"|recuerda|no olvides|ricorda|lembr[ae]|onthoud|kom ihåg|husk)",
    re.I,
)
# The words of a request left at the start of a fact a model copied from it.
_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:remember|note|don'?t forget|do not forget|keep in mind)(?:\s+that)?[\s:,]+", re.I
)
_SENTENCES = re.compile(r"[^.!?;\n]+[.!?;]*")


class Refusal(StrEnum):
    """Why a proposed fact was not kept; each is said to the person."""

    NOT_SAID = "not said in their message"
    SENSITIVE_UNASKED = "sensitive, and their message does not ask to remember it"
    TOO_LONG = f"longer than {MAX_FACT_CHARS} characters"
    SECRET = "a password, key, code or card number"

    @property
    def told(self) -> str:
        """What the person is told, in Discord and in the terminal alike."""
        return _TOLD[self]


@dataclass(frozen=True)
class RememberRequest:
    """A person's request to remember something about themselves, passed whole from the front-end
    (`/remember`, "remember that ...", the terminal, an MCP client) through the service to
    `remembered_facts`.

    `text` is what the person wrote (the /remember option, or the chat message being answered, never
    anyone else's words); `message_id` and `origin` where they wrote it; `pointer` the model's hint at
    which part, `asked` whether the person asked in so many words (a sensitive fact needs it).
    """

    scope: str
    user_id: str
    name: str
    text: str
    message_id: str
    origin: Origin
    pointer: str = ""
    asked: bool = True


@dataclass
class Proposal:
    """The facts to store, and what was refused (so the person hears why nothing, or less, was kept)."""

    facts: list[NewFact] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


_TOLD = {
    Refusal.NOT_SAID: (
        "I only remember what you say about yourself in the message you ask me in, and that wasn't in it."
    ),
    Refusal.SENSITIVE_UNASKED: (
        "That looks private (health, beliefs, money, contact details ...): I keep such things only when "
        'you ask me to, e.g. "remember that ..." or /remember.'
    ),
    Refusal.TOO_LONG: (
        f"That's too long for one fact (at most {MAX_FACT_CHARS} characters once written about you); "
        "tell me in shorter pieces."
    ),
    Refusal.SECRET: (
        "That looks like a password, key, code or card number: I never keep those, even when asked. "
        "A password manager is the place for them."
    ),
}


def asks_to_remember(text: str) -> bool:
    """Whether a message itself asks the bot to remember something (consent for a sensitive fact)."""
    return bool(_ASKS.search(text))


def pointed_part(text: str, pointer: str) -> str:
    """The sentences of `text` that share a word with `pointer` (the model's hint at what to keep); the
    whole text when there is no pointer, nothing when the pointer names what the text does not say."""
    if not pointer.strip():
        return text
    wanted = stems(pointer)
    return " ".join(s.strip() for s in _SENTENCES.findall(text) if stems(s) & wanted).strip()


def said_in(fact: str, message: str, name: str) -> bool:
    """Whether `message` says `fact`: most of the fact's informative words, besides its owner's name."""
    words = stems(fact) - stems(name)
    return bool(words) and len(words & stems(message, every_word=True)) >= SAID_SHARE * len(words)


@dataclass
class Remembered:
    """What became of a request to remember: each fact stored, updated or already known, and why
    anything the model proposed was refused."""

    changes: list[tuple[Decision, Fact]] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)


async def remembered_facts(llm: JsonModel, request: RememberRequest) -> Proposal:
    """The facts about themselves that a person's own words (`request.text`) ask to be remembered.

    Sensitive facts that pass are kept and marked, so recall uses them only with their owner.
    """
    name, user_id = request.name, request.user_id
    message = clean(strip_background_blocks(request.text))
    part = pointed_part(message, clean(request.pointer))
    proposal = Proposal()
    if not worth_reading(part):
        if worth_reading(request.pointer):  # the model named something the person did not say
            log.info("refused a remember request for %r: the model's text is not in their message", user_id)
            proposal.refused.append(Refusal.NOT_SAID)
        return proposal
    result = await llm.generate_json(
        Purpose.EXTRACT,
        system=REMEMBER_SYSTEM,
        prompt=remember_prompt(name, part),
        schema=RememberResult,
        max_output_tokens=answer_budget(part.count("\n") + 1),  # a line or a few facts each
    )
    seen: set[str] = set()
    secrets = secret_values(message)
    for item in result.facts:
        # A small model copies the request ("remember that my dog is Rex"): the request words go, and
        # the rest is written about its owner, as extraction writes a copied line.
        fact_text = clean(strip_background_blocks(item.text), len(item.text))
        fact_text = third_person(_REQUEST.sub("", fact_text, count=1), name)
        if not worth_reading(fact_text) or fact_text.casefold() in seen:
            continue
        refusal = _refusal(
            fact_text, message, name, sensitive=item.sensitive, asked=request.asked, secrets=secrets
        )
        if refusal is not None:
            log.info("refused a fact %s asked to be remembered: %s", user_id, refusal.value)
            proposal.refused.append(refusal)
            continue
        seen.add(fact_text.casefold())
        proposal.facts.append(
            NewFact(
                scope=request.scope,
                user_id=user_id,
                user_name=name,
                text=fact_text,
                source_message_ids=[request.message_id],
                origins={request.message_id: request.origin},
                sensitive=item.sensitive,
            )
        )
    return proposal


def _refusal(
    fact: str, message: str, name: str, *, sensitive: bool, asked: bool, secrets: set[str]
) -> Refusal | None:
    if holds_secret(fact, secrets):
        return Refusal.SECRET
    if len(fact) > MAX_FACT_CHARS:
        return Refusal.TOO_LONG
    if not said_in(fact, message, name):
        return Refusal.NOT_SAID
    if sensitive and not asked:
        return Refusal.SENSITIVE_UNASKED
    return None
