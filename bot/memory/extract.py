"""A flushed chunk of conversation -> durable facts per human speaker, in one call of the memory model.

The model proposes; this module disposes: a fact is accepted only for a human who spoke in the chunk,
never from the bot's own turns, and its sources are narrowed to that person's own messages, so that
one person's words can never become another person's memory. Sensitive facts (health, beliefs,
finances, contact data ...) are never kept from ordinary chat: only when their owner asks
(`remembering.py`); secrets, moods, hypotheticals, chatter and questions never (`durable.py`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import date, datetime

from bot.memory.community import accept_community, chunk_channels
from bot.memory.counting import CountingWatch
from bot.memory.dates import absolute_dates
from bot.memory.durable import chatter, holds_secret, of_the_moment, secret_values, sensitive, statements
from bot.memory.model_ports import JsonModel, ModelCutOff, Purpose, answer_budget
from bot.memory.models import MAX_FACT_CHARS, BufferedMessage, NewEpisode, NewFact, guild_id_of, utcnow
from bot.memory.prompts.extraction import REWRITE_SYSTEM, ExtractionResult, extract_system, extraction_prompt
from bot.memory.prompts.selection import SelectionResult, select_system
from bot.memory.selection import counting, human_lines, select_budget, selection_check, write_selected
from bot.memory.text import (
    clean,
    content_words,
    fold,
    folded_words,
    stems,
    strip_background_blocks,
    worth_reading,
)
from bot.memory.third_person import third_person

log = logging.getLogger(__name__)

# A chunk is at most 50 messages by default; an answer with thousands of facts is a model run away, and
# everything after extraction (embedding, de-duplication, candidates) grows with the number of facts.
MAX_FACTS_PER_SPEAKER = 40
MAX_FACTS_PER_CHUNK = 100
COPIED_SHARE = (
    0.6  # a fact is another speaker's copied line when one of their lines holds this share of its words
)


def _valid_date(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        return None


BOT_HANDLE = "BOT"
# How the extraction call asks (EXTRACTION_MODE): the model lists every fact, or points at lines.
ENUMERATE, SELECT = "enumerate", "select"
EXTRACTION_MODES = (ENUMERATE, SELECT)


@dataclass
class ChunkView:
    """The chunk as the model reads it, and the way back from its short names to Discord ids."""

    prompt: str
    handles: dict[str, str]  # user id -> the speaker's name as listed (unique within the chunk)
    local_ids: dict[str, str]  # m1, m2 ... -> message id


def _speaker_handles(chunk: list[BufferedMessage]) -> dict[str, str]:
    """Each human speaker's name, one line's worth, made unique ("alex", "alex (2)") and never "BOT"."""
    handles: dict[str, str] = {}
    taken: set[str] = {BOT_HANDLE.casefold()}
    for m in chunk:
        if m.is_bot or m.author_id in handles:
            continue
        base = " ".join(clean(m.author_name).replace(":", " ").split()) or "someone"
        handle, n = base, 1
        while handle.casefold() in taken:
            n += 1
            handle = f"{base} ({n})"
        taken.add(handle.casefold())
        handles[m.author_id] = handle
    return handles


def render_chunk(
    chunk: list[BufferedMessage], now: datetime, only: Collection[str] | None = None, *, times: bool = True
) -> ChunkView:
    """One line per message, 'm3 14:02 alice: text', times to the minute, a date line when the day
    changes, a '== channel 2 ==' line where another channel's messages start (when quiet channels share
    a call); background blocks stripped and text cleaned, line breaks shown as ' / '.

    `only` (local ids) shows just those lines, numbered as in the whole chunk, for a call about them.
    Without `times` a line is 'm3 alice: text' (the date lines stay): the selection call writes no fact
    and needs no minute, and a small model reads 50 lines 200 tokens sooner.
    """
    handles = _speaker_handles(chunk)
    local_ids: dict[str, str] = {}
    lines: list[str] = []
    day = ""
    channels = chunk_channels(chunk)
    channel = ""
    for m in chunk:
        text = clean(strip_background_blocks(m.content))
        if not text:
            continue
        local = f"m{len(local_ids) + 1}"
        local_ids[local] = m.message_id
        if only is not None and local not in only:
            continue
        if len(channels) > 1 and m.channel_id != channel:  # several channels share the call
            channel, day = m.channel_id, ""
            lines.append(f"== channel {channels.index(channel) + 1} ==")
        when = _minute(m.created_at)
        if when[:10] != day:
            day = when[:10]
            lines.append(f"-- {day} --")
        speaker = BOT_HANDLE if m.is_bot else handles[m.author_id]
        stamp = f"{when[11:]} " if times else ""
        lines.append(f"{local} {stamp}{speaker}: {' / '.join(text.splitlines())}")
    speakers = [*handles.values(), f"{BOT_HANDLE} (this bot: context only)"]
    prompt = extraction_prompt(now.strftime("%Y-%m-%d %H:%M UTC (%A)"), speakers, lines)
    return ChunkView(prompt, handles, local_ids)


def _minute(stamp: str) -> str:
    """'2026-11-24T14:02:33.123Z' -> '2026-11-24 14:02' (what the model needs of a message's time)."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return (stamp[:10] + " " + stamp[11:16]).strip()


@dataclass
class Extraction:
    """What one extraction call taught: people's facts and community facts (for consolidation alike)
    and the episodes of the chunk's channels."""

    facts: list[NewFact] = field(default_factory=list)
    episodes: list[NewEpisode] = field(default_factory=list)


async def extract_chunk(
    llm: JsonModel,
    chunk: list[BufferedMessage],
    now: datetime | None = None,
    *,
    community: bool = True,
    mode: str = ENUMERATE,
    watch: CountingWatch | None = None,
) -> Extraction:
    """Ask the model for the chunk's durable facts and (`community`, in a server) community facts and
    episodes, and keep only what this chunk can vouch for (`accept_facts`, `accept_community`).

    `mode` is how the model is asked: ENUMERATE (it writes every fact) or SELECT (it points at lines,
    the bot writes their facts: `selection.py`; `watch` says whether the model's selections are worth
    asking for: `counting.py`). No call is made when no human said anything worth reading. Model errors
    propagate, so the caller leaves the messages pending.
    """
    if not any(not m.is_bot and worth_reading(m.content) for m in chunk):
        return Extraction()
    now = now or utcnow()
    view = render_chunk(chunk, now)
    community = community and guild_id_of(chunk[0].scope) is not None
    if mode == SELECT:
        untimed = render_chunk(chunk, now, times=False).prompt
        result = await _select(llm, chunk, view, untimed, now, community=community, watch=watch)
    else:
        result = await llm.generate_json(
            Purpose.EXTRACT,
            system=extract_system(community=community),
            prompt=view.prompt,
            schema=ExtractionResult,
            max_output_tokens=answer_budget(len(chunk)),
        )
    # The rules read every fact of the answer; an endpoint that ignores the answer budget can send
    # thousands, which would hold the event loop (heartbeats, interactions) for a second or more.
    return await asyncio.to_thread(_accept, result, chunk, view, community)


def _accept(
    result: ExtractionResult, chunk: list[BufferedMessage], view: ChunkView, community: bool
) -> Extraction:
    """What of the model's answer this chunk vouches for: its speakers' facts, then (`community`) what
    the community decided and talked about."""
    facts = accept_facts(result, chunk, view)
    if not community:
        return Extraction(facts)
    told = accept_community(
        result,
        chunk,
        view.local_ids,
        lambda text: _named_subject(text, view) is not None,
        accepted=[f.text for f in facts],
    )
    return Extraction(facts + told.facts, told.episodes)


async def _select(
    llm: JsonModel,
    chunk: list[BufferedMessage],
    view: ChunkView,
    untimed: str,
    now: datetime,
    *,
    community: bool,
    watch: CountingWatch | None = None,
) -> ExtractionResult:
    """The selection call (on the transcript `untimed`: it writes no fact, and its episodes' dates come
    from the day lines; skipped while `watch` has stopped asking), the bot's writing, and (only for
    lines the bot cannot write) the short rewrite call, with times; together, one answer for the same
    checks an enumerated answer gets."""
    humans = human_lines(chunk, view.local_ids)
    every_line = SelectionResult.model_validate({"self": list(view.local_ids)})  # bot lines are skipped
    if watch is not None and not watch.ask():
        log.debug("a model that counts is not asked to select; every line is read by the bot's rules")
        selection = every_line
    else:
        try:
            selection = await llm.generate_json(
                Purpose.EXTRACT,
                system=select_system(community=community),
                prompt=untimed,
                schema=SelectionResult,
                max_output_tokens=select_budget(len(chunk), community=community),
                stop_early=selection_check(humans),
            )
            counted = counting(selection, humans)
        except ModelCutOff as exc:  # listing every line, past its budget or stopped: as choosing all
            log.info("the selection was cut off (%s); read as choosing every line", exc)
            selection, counted = every_line, counting(every_line, humans)
        if watch is not None:
            watch.answered(counted)
    written = write_selected(selection, chunk, view.local_ids, view.handles, community=community)
    result = ExtractionResult(facts=written.facts, community=written.community, episodes=selection.episodes)
    if not written.rewrite:
        return result
    rewritten = await llm.generate_json(
        Purpose.EXTRACT,
        system=REWRITE_SYSTEM,
        prompt=render_chunk(chunk, now, only=set(written.rewrite)).prompt,
        schema=ExtractionResult,
        max_output_tokens=answer_budget(len(written.rewrite)),
    )
    result.facts += rewritten.facts
    result.community += rewritten.community if community else []
    return result


def _speaker_of(value: str, view: ChunkView, humans: dict[str, str]) -> str | None:
    """The user id a model's `speaker` names: a listed name (any case, '@' or not) or a user id."""
    wanted = value.strip().lstrip("@").strip().casefold()
    for user_id, handle in view.handles.items():
        if handle.casefold() == wanted:
            return user_id
    return value.strip() if value.strip() in humans else None


def _named_subject(text: str, view: ChunkView) -> str | None:
    """The speaker (user id, or BOT) a fact's text starts with, the longest name matching; None if none."""
    folded = fold(text).lstrip()
    names = [(fold(h), uid) for uid, h in view.handles.items()] + [(fold(BOT_HANDLE), BOT_HANDLE)]
    best: tuple[int, str] | None = None
    for name, who in names:
        whole = folded.startswith(name) and (len(folded) == len(name) or not folded[len(name)].isalnum())
        if whole and (best is None or len(name) > best[0]):
            best = (len(name), who)
    return best[1] if best else None


# Letters of the scripts written without spaces between words: Thai, Lao, Myanmar, Khmer, kana, CJK.
_SPACELESS = re.compile(
    r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
)


def _grounded(text: str, said: list[str], name_stems: set[str]) -> bool:
    """Whether a fact holds any word its owner said, compared as stems ("I knit" grounds "Carol knits",
    "I'm 34" grounds "Dev is 34"), the speakers' names (`name_stems`) aside. A fact without one is made
    up, however well it reads: "Ana is a friendly and outgoing person", written by a small model from
    "good morning everyone"."""
    words = stems(text) - name_stems
    heard = " ".join(said)
    if not words or words & stems(heard):
        return True
    # Chinese, Japanese or Thai is written without spaces, a sentence one "word": two characters in a
    # row that its owner wrote ground it ("alice 住在上海" from "我住在上海").
    pairs = {a + b for a, b in itertools.pairwise(text) if _SPACELESS.match(a) and _SPACELESS.match(b)}
    return any(pair in heard for pair in pairs)


def _support(fact_words: set[str], texts: list[str]) -> int:
    """How many of a fact's informative words the texts contain."""
    said = set().union(*(content_words(t) for t in texts)) if texts else set()
    return len(fact_words & said)


# First-person words of the languages people most often chat in here: a fact a model copied in the
# first person speaks as its owner even when it cannot be rewritten (third_person is English only).
FIRST_PERSON = frozenset(
    "i me my mine myself je j moi mon ma mes ich mich mir mein meine meinen yo mi mis eu meu minha io mio "
    "mia ik mijn jag mig min mitt".split()
)


def _about_owner(text: str, names: tuple[str, ...]) -> bool:
    """Whether a fact names its owner or speaks as them: a copied "the weather is wild today" or
    "apparently Ben is moving" (about nobody, or someone else) is no fact about the speaker."""
    words = folded_words(text)
    own = set().union(*(folded_words(name) for name in names))
    return bool(words & own) or bool(words & FIRST_PERSON)


def _copied_from(
    words: set[str], user_id: str, chunk: list[BufferedMessage], texts: dict[str, str]
) -> str | None:
    """The author (BOT for the bot's turns) whose one line holds most of a fact's words when none of
    `user_id`'s lines holds as many: the model copied someone else's line. None when the owner's lines
    do as well."""
    if not words:
        return None
    best: dict[str, float] = {}
    for m in chunk:
        author = BOT_HANDLE if m.is_bot else m.author_id
        share = _support(words, [texts[m.message_id]]) / len(words)
        best[author] = max(best.get(author, 0.0), share)
    own = best.get(user_id, 0.0)
    leader = max(best, key=lambda uid: best[uid])
    return leader if leader != user_id and best[leader] >= COPIED_SHARE and best[leader] > own else None


def _said_at(cited: list[str], own: list[str], chunk: list[BufferedMessage]) -> datetime:
    """When a fact was said, for its relative dates: its first cited message of the chunk, else its
    owner's last message."""
    stamps = {m.message_id: m.created_at for m in chunk}
    said = next((mid for mid in cited if mid in stamps), own[-1])
    return datetime.fromisoformat(stamps[said].replace("Z", "+00:00"))


def accept_facts(result: ExtractionResult, chunk: list[BufferedMessage], view: ChunkView) -> list[NewFact]:
    """Validate the model's answer against the chunk: right speaker, own sources, no duplicates.

    Attribution does not rest on cited ids alone. A fact whose text is about another speaker (or the
    bot) is refused whatever it cites; one whose words only someone else said is refused even when it
    cites the owner; one that cites a neighbour's message but whose words its owner did say is kept,
    with the owner's messages as sources. A line copied in the first person belongs to whoever wrote
    it (small models copy lines and file them under the wrong speaker), and is rewritten about them;
    one copied from the bot's line is nobody's; one holding no word its owner said is made up. Secrets,
    moods, hypotheticals, chatter and questions are refused (a statement before a question keeps the
    statement). A relative date is written as the date it meant when its line was said (`dates`).
    """
    scope = chunk[0].scope
    humans = {m.author_id: m.author_name for m in chunk if not m.is_bot}
    texts = {m.message_id: clean(strip_background_blocks(m.content)) for m in chunk}
    bot_name = fold(BOT_HANDLE)
    own_messages: dict[str, list[str]] = {}
    for m in chunk:
        if not m.is_bot:
            own_messages.setdefault(m.author_id, []).append(m.message_id)
    accepted: list[NewFact] = []
    seen: set[tuple[str, str]] = set()
    per_speaker: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    names = {fold(h) for h in view.handles.values()} | {bot_name}
    name_stems = set().union(*(stems(n) for n in names))
    secrets = set().union(*(secret_values(t) for t in texts.values()))  # however a fact words them
    for item in result.facts:
        # A fact without a speaker (a bare string) is the speaker's whose name it starts with.
        user_id = _speaker_of(item.speaker or _named_subject(item.text, view) or "", view, humans)
        if user_id is None:
            log.info("refused an extracted fact about %r: not a human speaker of this chunk", item.speaker)
            continue
        text = clean(strip_background_blocks(item.text), len(item.text))
        if not worth_reading(text):
            continue
        if holds_secret(text, secrets):
            log.info("refused an extracted fact for %r: it holds a secret", user_id)
            continue
        text = statements(text)  # "We adopted a puppy! Any tips?" keeps its statement
        if not worth_reading(text):  # a copied question ("should I get a tattoo?") states nothing
            log.info("refused an extracted fact for %r: it is a question", user_id)
            continue
        if of_the_moment(text):
            log.info("refused an extracted fact for %r: a mood or a hypothetical, nothing lasting", user_id)
            continue
        if chatter(text):
            log.info(
                "refused an extracted fact for %r: chatter (a feeling, a joke, talk about the talk)", user_id
            )
            continue
        if item.sensitive or sensitive(text):  # kept only when the person asks (remember), never from chat
            log.info("did not keep a sensitive fact about %r learned from chat", user_id)
            continue
        subject = _named_subject(text, view)
        if subject is not None and subject != user_id:
            log.info(
                "refused an extracted fact for %r: it is about %r", user_id, humans.get(subject, subject)
            )
            continue
        words = {w for w in content_words(text) if w not in names}
        copied = _copied_from(words, user_id, chunk, texts)
        if copied == BOT_HANDLE:  # the bot's words are no one's fact, whomever they address
            log.info("refused an extracted fact for %r: the bot's line says it", user_id)
            continue
        if copied is not None:
            if subject is not None:  # it names its speaker, but only someone else's line says it
                log.info("refused an extracted fact for %r: another speaker's line says it", user_id)
                continue
            # A line copied in the first person is about whoever wrote that line.
            user_id = copied
        cited = [view.local_ids.get(c.strip().lower(), c.strip()) for c in item.sources]
        text = absolute_dates(
            third_person(text, humans[user_id]), _said_at(cited, own_messages[user_id], chunk)
        )
        if len(text) > MAX_FACT_CHARS:  # never cut: a statement that long is no single fact
            log.info("refused an extracted fact for %r: over %d characters", user_id, MAX_FACT_CHARS)
            continue
        if not _about_owner(text, (view.handles[user_id], humans[user_id])):
            log.info("refused an extracted fact for %r: it neither names them nor speaks as them", user_id)
            continue
        if (user_id, text.casefold()) in seen:
            continue
        if per_speaker[user_id] >= MAX_FACTS_PER_SPEAKER or len(accepted) >= MAX_FACTS_PER_CHUNK:
            dropped[user_id] += 1
            continue
        own = own_messages[user_id]
        others = [mid for uid, mids in own_messages.items() if uid != user_id for mid in mids]
        own_texts = [texts[mid] for mid in own]
        owner_support = _support(words, own_texts)
        if words and not owner_support and _support(words, [texts[mid] for mid in others]):
            log.info("refused an extracted fact for %r: only someone else said it", user_id)
            continue
        if not _grounded(text, own_texts, name_stems):
            log.info("refused an extracted fact for %r: its owner said none of its words", user_id)
            continue
        sources = [mid for mid in cited if mid in own]
        if cited and not sources:
            if words and not owner_support:
                # It cites only someone else's words (or the bot's), and its owner said none of it.
                log.info("refused an extracted fact about %r: its sources are not their messages", user_id)
                continue
            # The model cited a neighbour's line, but the owner said it: their own lines are the sources.
            best = max(_support(words, [texts[mid]]) for mid in own)
            sources = [mid for mid in own if _support(words, [texts[mid]]) == best]
        seen.add((user_id, text.casefold()))
        per_speaker[user_id] += 1
        accepted.append(
            NewFact(
                scope=scope,
                user_id=user_id,
                user_name=humans[user_id],
                text=text,
                source_message_ids=sources or list(own),
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


# `check --online`'s selection: a talk of 24 lines in which 3 say something lasting.
_PROBE_LINES = (
    ("Ana", "morning all"),
    ("Ben", "hey"),
    ("Ana", "I moved to Lisbon last spring"),
    ("Cai", "did anyone watch the match?"),
    ("Ben", "yeah, what a finish"),
    ("Cai", "unreal"),
    ("Dee", "lol"),
    ("Ben", "I work as a plumber, so weekends are my only free time"),
    ("Ana", "same here honestly"),
    ("Cai", "anyone up for a game tonight?"),
    ("Dee", "maybe later"),
    ("Ana", "I'm in"),
    ("Ben", "me too"),
    ("Cai", "cool, 8pm then"),
    ("Dee", "ok"),
    ("Dee", "my cat is called Miso by the way"),
    ("Ana", "cute"),
    ("Ben", "haha"),
    ("Cai", "brb"),
    ("Ana", "k"),
    ("Ben", "back?"),
    ("Cai", "yep"),
    ("Dee", "nice"),
    ("Ana", "see you all"),
)


async def counts_lines(llm: JsonModel) -> bool | None:
    """Whether the memory model counts every line when asked to select (as a 1.5B model does), on a fixed
    talk of 24 lines; None when the answer could not tell. One selection call."""
    stamp = "2026-01-01T12:00:00+00:00"
    chunk = [
        BufferedMessage(f"p{i}", "dm:probe", "probe", f"u{name}", name, text, stamp)
        for i, (name, text) in enumerate(_PROBE_LINES)
    ]
    view = render_chunk(chunk, utcnow(), times=False)
    humans = human_lines(chunk, view.local_ids)
    try:
        selection = await llm.generate_json(
            Purpose.EXTRACT,
            system=select_system(community=False),
            prompt=view.prompt,
            schema=SelectionResult,
            max_output_tokens=select_budget(len(chunk), community=False),
            stop_early=selection_check(humans),
        )
    except ModelCutOff:
        return True
    return counting(selection, humans)
