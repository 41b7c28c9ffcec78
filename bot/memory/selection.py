"""Selection, then writing: the model points at the lines that state something durable, the bot writes
the facts.

Asked to list every fact of a 50-message chunk, a small local model (bench/quality.py, Qwen2.5 1.5B)
proposed a third of the self-statements or none, and looped when it did list them. Asked only for the
ids of the lines that state something durable, it answers in a few dozen tokens and finds most of them.
The bot then writes each chosen line's facts itself where it can: an English first-person clause ("I
live in Porto", "my dog is Rex") is the speaker's own statement (`clauses.own_clauses`), rewritten by
`third_person` in `accept_facts`. Where it cannot (another language, a statement without its subject, a line about the
server), the line goes to a short second call that writes only those lines (`REWRITE_SYSTEM`).
Whatever writes a fact, `accept_facts` and `accept_community` judge it as they judge an enumerated one.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from bot.memory.clauses import FIRST_PERSON_WORD, own_clauses
from bot.memory.durable import statements
from bot.memory.lasting import lasting
from bot.memory.model_ports import PartialCheck
from bot.memory.models import BufferedMessage
from bot.memory.prompts.community import CommunityFact
from bot.memory.prompts.extraction import ExtractedFact
from bot.memory.prompts.selection import LINE_KINDS, SELF_NAMES, SelectionResult
from bot.memory.text import (
    change_words,
    clean,
    content_words,
    of_today,
    says_it_grew,
    strip_background_blocks,
    worth_reading,
)

log = logging.getLogger(__name__)

# A selection that takes nearly every line of a chunk (small models answer m1..m50) tells nothing: the
# bot then writes only what it can write itself and asks no model to write the rest, which would be
# chatter copied as facts (bench/quality.py, Qwen2.5 1.5B: 50 of 50 lines chosen, 19 sent to rewrite).
UNSELECTIVE_SHARE = 0.8
UNSELECTIVE_MIN_LINES = 10
COUNTING_SHARE = 0.5  # ... and so does a run of consecutive lines longer than this share of them
# A shorter run in an answer that otherwise chooses is the model counting for a stretch (the 1.5B model
# chose 6 lines for itself, then listed m41 .. m47 as sensitive): those lines are read by the bot alone.
COUNTED_RUN = 5
SELECT_BASE_TOKENS = 64
SELECT_TOKENS_PER_LINE = 5
SELECT_EPISODE_TOKENS = 320


@dataclass
class Written:
    """What the bot wrote from the chosen lines, and the lines only a model can write."""

    facts: list[ExtractedFact] = field(default_factory=list)
    community: list[CommunityFact] = field(default_factory=list)
    rewrite: list[str] = field(default_factory=list)  # local ids (m3, m7 ...)


def write_selected(
    selection: SelectionResult,
    chunk: list[BufferedMessage],
    local_ids: dict[str, str],
    handles: dict[str, str],
    *,
    community: bool,
) -> Written:
    """The facts of the lines the model chose, written by the bot where it can (see the module).

    A bot line, an unknown id or a line chosen twice is skipped; a line about the server only counts
    with `community`. A "sensitive" line's facts are written with their flag, so that the checks refuse
    them and keep their words out of the channel's episode. An answer that lists nearly every line
    under any kind (UNSELECTIVE_SHARE) is not choosing, and none of its lists is followed: the bot
    reads every line for what it can write itself, no line goes to a model, and no line is sensitive
    or the server's on the model's word (`durable.sensitive` still judges). So are the lines of a run of
    COUNTED_RUN or more consecutive lines in any list of an answer that otherwise chooses (`counted`).
    """
    messages = {m.message_id: m for m in chunk}
    humans = human_lines(chunk, local_ids)
    kinds = {"self": selection.own, "sensitive": selection.sensitive, "community": selection.community}
    choosing = all([_telling(kind, ids, humans) for kind, ids in kinds.items()])
    if not choosing:  # its other lists are no better: every line is read by the bot alone
        selection = SelectionResult.model_validate({"self": humans, "episodes": selection.episodes})
    runs = counted(list(kinds.values()), humans) if choosing else set()
    if runs:
        log.info("the model counted through %d lines in a row; the bot reads them alone", len(runs))
        selection = SelectionResult.model_validate(
            {
                "self": [i for i in selection.own if i not in runs] + [i for i in humans if i in runs],
                "sensitive": [i for i in selection.sensitive if i not in runs],
                "community": [i for i in selection.community if i not in runs],
                "episodes": selection.episodes,
            }
        )
    names = set().union(*(content_words(h) for h in handles.values())) if handles else set()
    written = Written()
    for line in selection.lines:
        message = messages.get(local_ids.get(line.id, ""))
        if message is None or message.is_bot:
            continue
        text = _said(message)
        if not worth_reading(text):
            continue
        if line.kind == "community":
            if not community:
                continue
            if FIRST_PERSON_WORD.search(text):  # "we meet on Fridays" needs a model to write
                written.rewrite.append(line.id)
            else:
                written.community.append(CommunityFact(text=text, sources=[line.id]))
            continue
        speaker = handles[message.author_id]
        clauses = own_clauses(text, speaker, names)
        if clauses is None:
            if choosing and line.id not in runs:  # only lines the model chose go to a model
                written.rewrite.append(line.id)
            continue
        written.facts.extend(
            ExtractedFact(speaker=speaker, text=clause, sources=[line.id], sensitive=line.kind == "sensitive")
            for clause in clauses
        )
    if choosing:
        chosen = {line.id for line in selection.lines}
        passed = [(local, messages[local_ids[local]]) for local in humans if local not in chosen]
        written.facts += _passed_over(passed, handles, names)
    return written


def _said(message: BufferedMessage) -> str:
    """What a line states, as the bot writes from it: cleaned, background blocks and questions left out."""
    return statements(clean(strip_background_blocks(message.content)))


# "now" alone says where someone is as often as what changed ("I'm home now").
_PASSING = frozenset({"now"})


def _passed_over(
    passed: list[tuple[str, BufferedMessage]], handles: dict[str, str], names: set[str]
) -> list[ExtractedFact]:
    """The facts of the lines a choosing model passed over that the bot writes all the same, where it
    can write them: a line that says something changed in the speaker's life or grew ("I moved to
    Bergen", "I quit carpentry", "I also started freediving"), whole, since the change is often said
    across two clauses ("left the institute in december, I teach science now"); and of any other line,
    a clause that states what lasts (`lasting`: "I live in Porto", "my cat Miso just turned three").
    Nothing said of today ("I left work early today"). The 1.5B model of bench/quality.py and
    bench/local_bot.py, when it chose, chose 1 to 4 lines, often chatter, and left moves, new jobs,
    homes and pets out; a missed change also leaves the fact it replaces active. `passed`: (local id,
    message) of each line passed over.
    """
    facts: list[ExtractedFact] = []
    for local, message in passed:
        text = _said(message)
        changed = bool(change_words(text) - _PASSING or says_it_grew(text))
        speaker = handles[message.author_id]
        facts += [
            ExtractedFact(speaker=speaker, text=clause, sources=[local])
            for clause in own_clauses(text, speaker, names) or []
            if (changed or lasting(clause)) and not of_today(clause)
        ]
    return facts


def human_lines(chunk: list[BufferedMessage], local_ids: dict[str, str]) -> list[str]:
    """The local ids of the chunk's human lines, in transcript order."""
    humans = {m.message_id for m in chunk if not m.is_bot}
    return [local for local, mid in local_ids.items() if mid in humans]


def _telling(kind: str, ids: list[str], humans: list[str]) -> bool:
    """Whether a kind's ids choose (`not_choosing`); logged when they do not."""
    reason = not_choosing(ids, humans)
    if reason is None:
        return True
    log.info("the model's %s lines tell nothing (%s); not followed", kind, reason)
    return False


def not_choosing(ids: list[str], humans: list[str]) -> str | None:
    """Why ids do not choose, in a chunk large enough to tell: nearly every human line, or a run of
    consecutive lines over half of them (the 1.5B model counted m3, m4 ... m31); None when they choose.
    `humans` are the chunk's human lines in transcript order. More ids never make a list choose, so a
    partial answer already judged so is as good as the whole (`selection_check`)."""
    if len(humans) < UNSELECTIVE_MIN_LINES:
        return None
    chosen = set(ids) & set(humans)
    longest = max((len(run) for run in _runs(chosen, humans)), default=0)
    if len(chosen) < UNSELECTIVE_SHARE * len(humans) and longest <= COUNTING_SHARE * len(humans):
        return None
    return f"{len(chosen)} of {len(humans)} lines, {longest} in a row"


def counted(lists: list[list[str]], humans: list[str]) -> set[str]:
    """The lines of every run of COUNTED_RUN or more consecutive human lines (in transcript order) that
    one of `lists` holds: where the model counted rather than chose, whatever kind it gave them. Nothing
    in a chunk too small to tell (UNSELECTIVE_MIN_LINES), where a run may well be every line that says
    something."""
    found: set[str] = set()
    if len(humans) < UNSELECTIVE_MIN_LINES:
        return found
    for ids in lists:
        for run in _runs(set(ids), humans):
            if len(run) >= COUNTED_RUN:
                found.update(run)
    return found


def _runs(chosen: set[str], humans: list[str]) -> list[list[str]]:
    """The runs of consecutive `humans` lines (transcript order) that are all in `chosen`."""
    runs: list[list[str]] = [[]]
    for local in humans:
        if local in chosen:
            runs[-1].append(local)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def counting(selection: SelectionResult, humans: list[str]) -> bool | None:
    """Whether a selection counted instead of choosing (one of its kinds' lists does not choose); None
    for a chunk too small to tell (`counting.CountingWatch` keeps the tally)."""
    if len(humans) < UNSELECTIVE_MIN_LINES:
        return None
    lists = (selection.own, selection.sensitive, selection.community)
    return any(not_choosing(ids, humans) is not None for ids in lists)


# A kind's list in a partial answer: its key and the ids written so far (the list may be unclosed).
_PARTIAL_LIST = re.compile(r'"(\w+)"\s*:\s*\[([^\]]*)')
_KIND_KEYS = frozenset((*LINE_KINDS, *SELF_NAMES))
# An id written to its closing quote: "m1" of an unfinished "m15" is not one.
_CLOSED_ID = re.compile(r'"(m\d+)"')


def selection_check(humans: list[str]) -> PartialCheck:
    """A check on a selection answer as it is written: the reason its first list that stopped choosing
    does not choose (`not_choosing`), so the bot stops reading a model counting every line after half
    the chunk instead of at its budget (~100 output tokens instead of 634 at 50 lines). Only the kinds'
    lists are judged: an episode point's sources may well be a run of lines."""

    def check(partial: str) -> str | None:
        for key, body in _PARTIAL_LIST.findall(partial):
            if key in _KIND_KEYS and (reason := not_choosing(_CLOSED_ID.findall(body), humans)):
                return f"its {key} list chose {reason}"
        return None

    return check


def select_budget(lines: int, *, community: bool) -> int:
    """The output tokens a selection may take: a few per line (an id is about 3), and room for the
    episodes' points with community memory. A model listing every line under every kind is cut off
    there, and its answer read as choosing every line (`extract._select`)."""
    return SELECT_BASE_TOKENS + SELECT_TOKENS_PER_LINE * lines + (SELECT_EPISODE_TOKENS if community else 0)
