"""What a flushed chunk says about the community: facts about the server itself, and one episode per
channel (what its conversation was about), from the same extraction answer as the people's facts.

The model proposes, the bot decides, and what is made from messages follows them:
- a community fact is kept only when most of its words are in the messages it cites (or, citing none,
  in the messages that say it best), never when it is sensitive, holds a secret (`durable.py`), reads
  as a fact about one speaker (a person's facts are theirs, with their own rules), or only asks (a
  question after a statement is dropped, the statement kept);
- an episode's point is kept only when most of its words were said in its own channel by a person, so
  no point carries another channel's words or the bot's; a sensitive point or a secret is left out, and so is one
  that repeats what the same answer marked sensitive anywhere else, or that is mostly a person's own
  fact (what people say of themselves stays in their facts, under their rules: /facts, the mention
  rule, forget);
- an episode's sources are every human message of its channel in the chunk (its participants being
  their authors): deleting any of them, or any of its authors erasing what they said, removes it.
Servers only: DMs and the terminal keep people's own facts, never a shared memory of conversations.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bot.memory.durable import holds_secret, secret_values, sensitive, statements
from bot.memory.models import (
    COMMUNITY_ID,
    COMMUNITY_NAME,
    MAX_FACT_CHARS,
    BufferedMessage,
    NewEpisode,
    NewFact,
    guild_id_of,
)
from bot.memory.prompts import ExtractionResult
from bot.memory.text import clean, folded_words, stems, strip_background_blocks, worth_reading

log = logging.getLogger(__name__)

COMMUNITY_SHARE = 2 / 3  # of a community fact's words, in the messages it comes from
POINT_SHARE = 1 / 2  # of an episode point's words, said by people in its channel
SENSITIVE_SHARE = 1 / 2  # of what was marked sensitive (names aside), repeated in a point or fact
MAX_COMMUNITY_PER_CHUNK = 20
MIN_COMMUNITY_WORDS = 3  # "brb, coffee" says nothing lasting about a server
# A statement of the moment is no durable fact about a server (a plan for tonight is an episode's point).
MOMENT_WORDS = frozenset("today tonight brb afk lol lmao rn atm weather".split())
MAX_POINTS_PER_EPISODE = 12
MAX_POINT_CHARS = 300
MAX_SUMMARY_CHARS = 1500


@dataclass
class CommunityReading:
    facts: list[NewFact] = field(default_factory=list)
    episodes: list[NewEpisode] = field(default_factory=list)


def chunk_channels(chunk: list[BufferedMessage]) -> list[str]:
    """The chunk's channels in the order the transcript numbers them ("== channel 2 ==")."""
    return list(dict.fromkeys(m.channel_id for m in chunk))


def accept_community(
    result: ExtractionResult,
    chunk: list[BufferedMessage],
    local_ids: dict[str, str],
    about_speaker: Callable[[str], bool],
    accepted: Sequence[str] = (),
) -> CommunityReading:
    """Validate the answer's community facts and episodes against the chunk (see the module's rules).

    `local_ids` maps the transcript's m1, m2 ... to message ids; `about_speaker` tells a text that
    starts with a speaker's name (or the bot's); `accepted` are the people's facts the bot kept of the
    same answer (what a point must not restate; a fact the bot refused takes no point with it).
    """
    reading = CommunityReading()
    if guild_id_of(chunk[0].scope) is None:
        return reading
    said = {
        m.message_id: clean(strip_background_blocks(m.content))
        for m in chunk
        if not m.is_bot and worth_reading(m.content)
    }
    if not said:
        return reading
    names = set().union(*(stems(m.author_name) for m in chunk))
    flagged = [f.text for f in result.facts if f.sensitive] + [
        c.text for c in result.community if c.sensitive
    ]
    flagged += [p.text for e in result.episodes for p in e.points if p.sensitive]
    marked = [words for text in flagged if (words := stems(text) - names)]
    personal = [words for text in accepted if (words := stems(text) - names)]
    secrets = set().union(*(secret_values(t) for t in said.values()))
    reading.facts = _community_facts(result, chunk, local_ids, said, marked, about_speaker, secrets)
    reading.episodes = _episodes(result, chunk, said, marked, personal, names, secrets)
    return reading


def _touches(words: set[str], marked: list[set[str]]) -> bool:
    """Whether `words` hold most of what the answer marked sensitive anywhere (names aside): "Bob has
    diabetes, bring sugar-free snacks" repeats the sensitive "bob has diabetes"."""
    return any(len(words & m) >= SENSITIVE_SHARE * len(m) for m in marked)


def _restates(words: set[str], personal: list[set[str]]) -> bool:
    """Whether a point is mostly one of the people's own facts: those stay theirs (seen with /facts,
    recalled with their rules), so an episode holds what was discussed, not who said what of themselves."""
    return any(len(words & p) >= SENSITIVE_SHARE * max(len(p), len(words)) for p in personal)


def _best_line(words: set[str], texts: list[str]) -> float:
    """The largest share of `words` one of `texts` holds: a point copied from another channel's line
    is that line's, whatever words it shares with its own channel's talk."""
    return max((_support(words, [t]) for t in texts), default=0.0)


def _support(words: set[str], texts: list[str]) -> float:
    said = set().union(*(stems(t, every_word=True) for t in texts)) if texts else set()
    return len(words & said) / len(words) if words else 0.0


def _community_facts(
    result: ExtractionResult,
    chunk: list[BufferedMessage],
    local_ids: dict[str, str],
    said: dict[str, str],
    marked: list[set[str]],
    about_speaker: Callable[[str], bool],
    secrets: set[str],
) -> list[NewFact]:
    scope = chunk[0].scope
    facts: dict[str, NewFact] = {}
    for item in result.community:
        text = statements(clean(strip_background_blocks(item.text), len(item.text)))
        words = stems(text)
        if not worth_reading(text) or item.sensitive or sensitive(text):  # sensitive, or a question
            continue
        if holds_secret(text, secrets):
            log.info("refused a community fact: it holds a secret")
            continue
        if len(words) < MIN_COMMUNITY_WORDS or folded_words(text) & MOMENT_WORDS:
            log.info("refused a community fact: small talk or of the moment, not durable")
            continue
        if len(text) > MAX_FACT_CHARS or text.casefold() in facts:
            continue
        if about_speaker(text):  # "Alice runs ..." is Alice's, with the rules of a person's fact
            log.info("refused a community fact that is about a speaker: it starts with their name")
            continue
        if _touches(words, marked):
            log.info("refused a community fact: it repeats what the answer marked sensitive")
            continue
        cited = [mid for c in item.sources if (mid := local_ids.get(c.strip().lower(), c.strip())) in said]
        if not cited:  # the messages that say it best
            best = max(_support(words, [t]) for t in said.values())
            cited = [mid for mid, t in said.items() if best and _support(words, [t]) == best]
        if _support(words, [said[mid] for mid in cited]) < COMMUNITY_SHARE:
            log.info("refused a community fact: its messages do not say it")
            continue
        if len(facts) >= MAX_COMMUNITY_PER_CHUNK:
            log.warning("extraction answered more than %d community facts; dropped the rest", len(facts))
            break
        facts[text.casefold()] = NewFact(
            scope=scope, user_id=COMMUNITY_ID, user_name=COMMUNITY_NAME, text=text, source_message_ids=cited
        )
    return list(facts.values())


def _episodes(
    result: ExtractionResult,
    chunk: list[BufferedMessage],
    said: dict[str, str],
    marked: list[set[str]],
    personal: list[set[str]],
    names: set[str],
    secrets: set[str],
) -> list[NewEpisode]:
    channels = chunk_channels(chunk)
    points: dict[str, list[str]] = {}
    for item in result.episodes:
        if not 1 <= item.channel <= len(channels):
            continue
        channel = channels[item.channel - 1]
        own = [said[m.message_id] for m in chunk if m.channel_id == channel and m.message_id in said]
        others = [said[m.message_id] for m in chunk if m.channel_id != channel and m.message_id in said]
        kept = points.setdefault(channel, [])
        for point in item.points:
            text = " ".join(clean(strip_background_blocks(point.text), len(point.text)).split())
            words = stems(text)
            if not worth_reading(text) or point.sensitive or sensitive(text) or len(text) > MAX_POINT_CHARS:
                continue
            if holds_secret(text, secrets):
                log.info("left a point out of an episode: it holds a secret")
                continue
            if text in kept or len(kept) >= MAX_POINTS_PER_EPISODE:
                continue
            if _touches(words, marked) or _support(words, own) < POINT_SHARE:
                log.info("left a point out of an episode: sensitive, or not said in its channel")
                continue
            if others and _best_line(words, others) > _best_line(words, own):
                log.info("left a point out of an episode: another channel's line says it better")
                continue
            if _restates(words - names, personal):
                continue
            kept.append(text)
    episodes = []
    for channel, kept in points.items():
        summary = _summary(kept)
        messages = [m for m in chunk if m.channel_id == channel and m.message_id in said]
        if not summary or not messages:
            continue
        episodes.append(
            NewEpisode(
                scope=chunk[0].scope,
                origin=messages[0].origin,
                summary=summary,
                started_at=min(m.created_at for m in messages),
                ended_at=max(m.created_at for m in messages),
                sources={m.message_id: m.author_id for m in messages},
            )
        )
    return episodes


def _summary(points: list[str]) -> str:
    """The points as lines, whole, as many as fit in MAX_SUMMARY_CHARS."""
    lines: list[str] = []
    for point in points:
        if sum(len(x) + 3 for x in lines) + len(point) + 2 > MAX_SUMMARY_CHARS:
            break
        lines.append(f"- {point}")
    return "\n".join(lines)
