"""What a flushed chunk says about the community: facts about the server itself, and one episode per
channel (what its conversation was about), from the same extraction answer as the people's facts, or
from the bot's own reading of the chunk when the answer names none (a small model counts line ids).

Shared memory is shown to a whole channel, so it is held to more than a person's memory. The model
proposes, the bot decides:
- only what was said: a point or community fact keeps no informative word that none of the lines it
  cites holds (by stem; the speakers' names and the words any summary uses aside). Where the model's
  wording adds one, the bot keeps the cited line itself, with its speaker ("Ana: ..."), or nothing;
- its sources, point by point: every point keeps the lines it came from (and their authors), so a
  deleted or edited line, or its author's erasure, takes that point and leaves the others; a community
  fact keeps its lines, whose authors it speaks for unless every one of them could decide for the
  server where they said it (`BufferedMessage.decides`: then it is the server's rule or decision);
- nothing private about anyone: a text that ties a person to a sensitive category or holds a secret
  is refused by the bot's own floor (`shared_floor.private_detail`, `durable.holds_secret`) whatever
  the model marked; and a line that asked the bot to remember something, that the answer marked
  sensitive, or whose words are sensitive, feeds no point and no fact at all;
- not the bot's business: the bot's own lines and the lines addressed to it (a question put to the
  bot, "remember that ...") make no point and no fact (`community_reading.bots_business`);
- a community fact is never a speaker's own (one that starts with their name is theirs, under a
  person's rules), never a question or of the moment; a point is never mostly a person's own fact
  (what people say of themselves stays in their facts: /facts, the mention rule, forget), nor another
  channel's words.
Servers only: DMs and the terminal keep people's own facts, never a shared memory of conversations.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bot.memory.community_reading import bots_business, community_lines
from bot.memory.durable import holds_secret, secret_values, statements
from bot.memory.models import (
    COMMUNITY_ID,
    COMMUNITY_NAME,
    MAX_FACT_CHARS,
    BufferedMessage,
    NewEpisode,
    NewFact,
    NewPoint,
    guild_id_of,
)
from bot.memory.prompts.community import CommunityFact, EpisodePoint
from bot.memory.prompts.extraction import ExtractionResult
from bot.memory.remembering import asks_to_remember
from bot.memory.shared_floor import private_detail
from bot.memory.text import clean, folded_words, stems, strip_background_blocks, worth_reading

log = logging.getLogger(__name__)

SENSITIVE_SHARE = 1 / 2  # of what was marked sensitive (names aside), repeated in a point or fact
MAX_COMMUNITY_PER_CHUNK = 20
MIN_COMMUNITY_WORDS = 3  # "brb, coffee" says nothing lasting about a server
# A statement of the moment is no durable fact about a server (a plan for tonight is an episode's point).
MOMENT_WORDS = frozenset("today tonight brb afk lol lmao rn atm weather".split())
MAX_POINTS_PER_EPISODE = 12
MAX_POINT_CHARS = 300
MAX_SUMMARY_CHARS = 1500  # of an episode's points written as lines, as a flush makes one
GROUNDED_SHARE = 1 / 2  # of a proposed text's words, in the one line kept in its place
# Words any summary of a conversation uses without anyone saying them: they add nothing to what was said.
SUMMARY_WORDS = stems(
    "discussed discussion discussing decided decision agreed agreement planned plans planning asked asking "
    "question questions mentioned talked talk shared sharing link links group members member server "
    "channel someone everyone people will going topic about proposed suggested suggestion confirmed "
    "announced announcement reminded reminder update updated new next said says noted"
)


@dataclass
class CommunityReading:
    facts: list[NewFact] = field(default_factory=list)
    episodes: list[NewEpisode] = field(default_factory=list)


@dataclass
class _Chunk:
    """What the checks read of a chunk: each line the community may be made of, by message id, with its
    speaker's name and channel; everyone's name stems; the secrets said; what the answer marked."""

    lines: dict[str, str]
    messages: dict[str, BufferedMessage]
    names: set[str]
    secrets: set[str]
    marked: list[set[str]]
    personal: list[set[str]]

    def cited(
        self, sources: Sequence[str], local_ids: dict[str, str], channel: str | None = None
    ) -> list[str]:
        """The message ids of `sources` (local ids or message ids) that are lines here (of `channel`)."""
        found = [local_ids.get(c.strip().lower(), c.strip()) for c in sources]
        return list(
            dict.fromkeys(
                mid
                for mid in found
                if mid in self.lines and (channel is None or self.messages[mid].channel_id == channel)
            )
        )

    def speaker(self, mid: str) -> str:
        return self.messages[mid].author_name


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
    """Validate the answer's community facts and episodes against the chunk (see the module's rules),
    or, when it names none, form them from the bot's own reading of the chunk.

    `local_ids` maps the transcript's m1, m2 ... to message ids; `about_speaker` tells a text that
    starts with a speaker's name (or the bot's); `accepted` are the people's facts the bot kept of the
    same answer (what a point must not restate; a fact the bot refused takes no point with it).
    """
    reading = CommunityReading()
    if guild_id_of(chunk[0].scope) is None:
        return reading
    seen = _read(result, chunk, local_ids, accepted)
    if not seen.lines:
        return reading
    community, episodes = result.community, [_Episode(e.channel, e.points) for e in result.episodes]
    if not community and not any(e.points for e in episodes):
        community, episodes = _own_reading(chunk, seen, local_ids)
        log.info(
            "the answer named no community memory; the bot read %d fact(s) and %d episode(s) itself",
            len(community),
            len(episodes),
        )
    reading.facts = _community_facts(community, chunk[0].scope, local_ids, seen, about_speaker)
    reading.episodes = _episodes(episodes, chunk, local_ids, seen)
    return reading


def _read(
    result: ExtractionResult, chunk: list[BufferedMessage], local_ids: dict[str, str], accepted: Sequence[str]
) -> _Chunk:
    """The lines shared memory may be made of: people's, worth reading, not the bot's business, not a
    request to remember, not private (marked sensitive by the answer, sensitive by its words, or tied
    to a private detail by the floor)."""
    names = set().union(*(stems(m.author_name) for m in chunk))
    speakers = {m.author_name for m in chunk if not m.is_bot}
    bots = bots_business(chunk, {m.author_name for m in chunk if m.is_bot})
    marked_lines = {
        local_ids.get(s.strip().lower(), s.strip()) for f in result.facts if f.sensitive for s in f.sources
    }
    lines: dict[str, str] = {}
    for m in chunk:
        text = clean(strip_background_blocks(m.content))
        if m.is_bot or m.message_id in bots or not worth_reading(text):
            continue
        if m.message_id in marked_lines or asks_to_remember(text) or private_detail(text, speakers):
            continue
        lines[m.message_id] = text
    flagged = [f.text for f in result.facts if f.sensitive] + [
        c.text for c in result.community if c.sensitive
    ]
    flagged += [p.text for e in result.episodes for p in e.points if p.sensitive]
    return _Chunk(
        lines=lines,
        messages={m.message_id: m for m in chunk},
        names=names,
        secrets=set().union(*(secret_values(clean(m.content)) for m in chunk)),
        marked=[words for text in flagged if (words := stems(text) - names)],
        personal=[words for text in accepted if (words := stems(text) - names)],
    )


def _own_reading(
    chunk: list[BufferedMessage], seen: _Chunk, local_ids: dict[str, str]
) -> tuple[list[CommunityFact], list[_Episode]]:
    """Community facts and episode points from the bot's reading of the chunk's lines: a decision, a
    rule or a recurring time may be a community fact; it and a plan, a link or an open question is a
    point of its channel's episode, the line itself with its speaker."""
    local_of = {mid: local for local, mid in local_ids.items()}
    channels = chunk_channels(chunk)
    facts: list[CommunityFact] = []
    points: dict[int, list[EpisodePoint]] = {}
    for line in community_lines(chunk, {m.author_name for m in chunk if m.is_bot}):
        if line.message_id not in seen.lines:
            continue
        local = local_of.get(line.message_id, line.message_id)
        text = statements(seen.lines[line.message_id]) or seen.lines[line.message_id]
        if line.durable:
            facts.append(CommunityFact(text=text, sources=[local]))
        number = channels.index(seen.messages[line.message_id].channel_id) + 1
        quoted = f"{seen.speaker(line.message_id)}: {text}"
        points.setdefault(number, []).append(EpisodePoint(text=quoted, sources=[local]))
    return facts, [_Episode(channel=n, points=p) for n, p in points.items()]


@dataclass
class _Episode:
    """An episode's proposed points for one channel (by its transcript number)."""

    channel: int
    points: list[EpisodePoint]


def _touches(words: set[str], marked: list[set[str]]) -> bool:
    """Whether `words` hold most of what the answer marked sensitive anywhere (names aside): "Bob has
    diabetes, bring sugar-free snacks" repeats the sensitive "bob has diabetes"."""
    return any(len(words & m) >= SENSITIVE_SHARE * len(m) for m in marked)


def _restates(words: set[str], personal: list[set[str]]) -> bool:
    """Whether a point is mostly one of the people's own facts: those stay theirs (seen with /facts,
    recalled with their rules), so an episode holds what was discussed, not who said what of themselves."""
    return any(len(words & p) >= SENSITIVE_SHARE * max(len(p), len(words)) for p in personal)


def _support(words: set[str], texts: list[str]) -> float:
    said = set().union(*(stems(t, every_word=True) for t in texts)) if texts else set()
    return len(words & said) / len(words) if words else 0.0


def _added(text: str, lines: list[str], names: set[str]) -> set[str]:
    """The informative words of `text` none of `lines` holds: what a model's wording adds to what was said."""
    said = set().union(*(stems(t, every_word=True) for t in lines)) if lines else set()
    return stems(text) - said - names - SUMMARY_WORDS


def _best(words: set[str], mids: list[str], seen: _Chunk) -> str | None:
    """Of `mids`, the line holding most of `words` (the first on a tie); None when none holds any."""
    scored = [(_support(words, [seen.lines[mid]]), -i, mid) for i, mid in enumerate(mids)]
    best = max(scored, default=None)
    return best[2] if best is not None and best[0] > 0 else None


def _grounded(
    text: str, sources: Sequence[str], cited: list[str], candidates: list[str], seen: _Chunk, *, quoted: bool
) -> tuple[str, list[str]] | None:
    """The text to keep and the lines it comes from, or None.

    With lines cited (`cited`, the `sources` that are lines here): the model's `text` when those lines
    hold every informative word of it, else the cited line that holds most of it, itself (with its
    speaker when `quoted`), if it holds at least GROUNDED_SHARE. Sources that are no line here (the
    bot's, another channel's, a private line's) cite nothing: the text is refused. Without sources, the
    `candidates` line that holds most of it stands for the cited line.
    """
    words = stems(text)
    if sources and not cited:
        return None
    pool = cited or candidates
    if cited and not _added(text, [seen.lines[mid] for mid in cited], seen.names):
        return _as_theirs(text, cited, seen, quoted), cited
    best = _best(words, pool, seen)
    if best is None or _support(words, [seen.lines[best]]) < GROUNDED_SHARE:
        return None
    if not _added(text, [seen.lines[best]], seen.names):
        return _as_theirs(text, [best], seen, quoted), [best]
    line = statements(seen.lines[best]) or seen.lines[best]
    log.info("a proposed point or fact added words nobody said; kept the line it comes from instead")
    return (f"{seen.speaker(best)}: {line}" if quoted else line), [best]


def _as_theirs(text: str, cited: list[str], seen: _Chunk, quoted: bool) -> str:
    """A point that copies one person's line (every informative word of it, and no other) is their
    words: it keeps who said it ("Ana: ..."), as a quoted line does. A summary in other words stays."""
    if not quoted or len(cited) != 1:
        return text
    line = statements(seen.lines[cited[0]]) or seen.lines[cited[0]]
    copied = stems(text) - seen.names == stems(line) - seen.names
    return f"{seen.speaker(cited[0])}: {line}" if copied and stems(line) - seen.names else text


def _shareable(text: str, seen: _Chunk) -> bool:
    """The floor for anything a channel is shown: no private detail tied to a person, no secret,
    nothing that repeats what the answer marked sensitive. A quoted line is judged by its words: the
    speaker's name before them says who said it, not whom it is about (their "I" ties it to them)."""
    speakers = {m.author_name for m in seen.messages.values()}
    said = next((text[len(s) + 2 :] for s in speakers if text.startswith(f"{s}: ")), text)
    if private_detail(said, speakers) is not None:
        return False
    if holds_secret(text, seen.secrets):
        log.info("refused shared memory that holds a secret")
        return False
    return not _touches(stems(text), seen.marked)


def _community_facts(
    items: Sequence[CommunityFact],
    scope: str,
    local_ids: dict[str, str],
    seen: _Chunk,
    about_speaker: Callable[[str], bool],
) -> list[NewFact]:
    facts: dict[str, NewFact] = {}
    for item in items:
        if item.sensitive:
            continue
        proposed = statements(clean(strip_background_blocks(item.text), len(item.text)))
        if not worth_reading(proposed):  # a question only
            continue
        cited = seen.cited(item.sources, local_ids)
        kept = _grounded(proposed, item.sources, cited, list(seen.lines), seen, quoted=False)
        if kept is None:
            log.info("refused a community fact: its messages do not say it")
            continue
        text, cited = kept
        if not worth_reading(text) or not _shareable(text, seen):
            continue
        if len(stems(text)) < MIN_COMMUNITY_WORDS or folded_words(text) & MOMENT_WORDS:
            log.info("refused a community fact: small talk or of the moment, not durable")
            continue
        if len(text) > MAX_FACT_CHARS or text.casefold() in facts:
            continue
        if about_speaker(text):  # "Alice runs ..." is Alice's, with the rules of a person's fact
            log.info("refused a community fact that is about a speaker: it starts with their name")
            continue
        if len(facts) >= MAX_COMMUNITY_PER_CHUNK:
            log.warning("extraction answered more than %d community facts; dropped the rest", len(facts))
            break
        facts[text.casefold()] = NewFact(
            scope=scope,
            user_id=COMMUNITY_ID,
            user_name=COMMUNITY_NAME,
            text=text,
            source_message_ids=cited,
            speaks_for_server=all(seen.messages[mid].decides for mid in cited),
        )
    return list(facts.values())


def _episodes(
    items: Sequence[_Episode],
    chunk: list[BufferedMessage],
    local_ids: dict[str, str],
    seen: _Chunk,
) -> list[NewEpisode]:
    channels = chunk_channels(chunk)
    points: dict[str, list[NewPoint]] = {}
    for item in items:
        if not 1 <= item.channel <= len(channels):
            continue
        channel = channels[item.channel - 1]
        own = [mid for mid in seen.lines if seen.messages[mid].channel_id == channel]
        others = [seen.lines[mid] for mid in seen.lines if seen.messages[mid].channel_id != channel]
        kept = points.setdefault(channel, [])
        for point in item.points:
            if point.sensitive or not own:
                continue
            text = " ".join(clean(strip_background_blocks(point.text), len(point.text)).split())
            if not worth_reading(text):
                continue
            cited = seen.cited(point.sources, local_ids, channel)
            grounded = _grounded(text, point.sources, cited, own, seen, quoted=True)
            if grounded is None:
                log.info("left a point out of an episode: not said in its channel")
                continue
            text, cited = grounded
            if len(text) > MAX_POINT_CHARS or not _shareable(text, seen):
                continue
            if any(p.text == text for p in kept) or len(kept) >= MAX_POINTS_PER_EPISODE:
                continue
            words = stems(text)
            if others and max(_support(words, [t]) for t in others) > max(
                _support(words, [seen.lines[mid]]) for mid in own
            ):
                log.info("left a point out of an episode: another channel's line says it better")
                continue
            if _restates(words - seen.names, seen.personal):
                continue
            kept.append(NewPoint(text, {mid: seen.messages[mid].author_id for mid in cited}))
    episodes = []
    for kept in points.values():
        if not kept:
            continue
        said = [seen.messages[mid] for p in kept for mid in p.sources]
        episodes.append(
            NewEpisode.of_points(
                chunk[0].scope,
                said[0].origin,
                _fitting(kept),
                min(m.created_at for m in said),
                max(m.created_at for m in said),
            )
        )
    return episodes


def _fitting(points: list[NewPoint]) -> list[NewPoint]:
    """The points, whole, as many as fit in MAX_SUMMARY_CHARS once written as lines."""
    kept: list[NewPoint] = []
    for point in points:
        if sum(len(p.text) + 3 for p in kept) + len(point.text) + 2 > MAX_SUMMARY_CHARS:
            break
        kept.append(point)
    return kept
