"""What the bot's own writer keeps from a scripted chat, with no model at all: seconds, not an hour.

    python -m bench.rules_only --script b            # the chat written apart from the rules
    python -m bench.rules_only --script a --details  # and every statement missed, every trap kept

A small local model that counts every line instead of choosing (bench/quality.py, Qwen2.5 1.5B) leaves
the bot to read every line by its rules (`clauses.own_clauses`, `implied_subject`, `third_person`), and
`accept_facts` refuses chatter and moods (`durable.chatter`, `durable.of_the_moment`). This reads each
human line of `bench.quality`'s scripts the same way and scores it against the script's annotations:
a self-statement is learned when one of the line's facts holds its keywords; a fact written from a trap
(gossip, a question, a mood, a joke, talk about the talk) or from a line with nothing to learn counts
against precision. Secrets are left out (`durable.holds_secret` refuses them later, on the fact).
It is the extraction half of bench.quality's figures; consolidation needs the model.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field
from types import ModuleType

from bench.common import table
from bench.quality_script import Say, Trap, matches
from bot.memory.clauses import own_clauses
from bot.memory.durable import chatter, holds_secret, of_the_moment, statements
from bot.memory.text import clean, content_words, strip_background_blocks
from bot.memory.third_person import third_person

SCRIPTS = {"a": "bench.quality_script", "b": "bench.quality_script_b"}


@dataclass
class Reading:
    """What the rules wrote from a script: statements learned and missed, facts from lines without one."""

    learned: list[str] = field(default_factory=list)
    missed: list[tuple[str, str, list[str] | None]] = field(default_factory=list)
    stray: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (trap kind, line, facts)
    facts: int = 0


def written(text: str, speaker: str, names: set[str]) -> list[str] | None:
    """The facts the bot writes from a line by its rules alone, as `accept_facts` keeps them; None when
    the line would go to a model."""
    clauses = own_clauses(statements(clean(strip_background_blocks(text))), speaker, names)
    if clauses is None:
        return None
    return [
        third_person(c, speaker) for c in clauses if not (chatter(c) or of_the_moment(c) or holds_secret(c))
    ]


def read(script: ModuleType) -> Reading:
    names = set().union(*(content_words(name) for name in script.PEOPLE.values()))
    reading = Reading()
    for phase in script.PHASES:
        for line in phase:
            if line.speaker == script.BOT_NAME:
                continue
            facts = written(line.text, line.speaker, names)
            reading.facts += len(facts or [])
            note = line.note
            if isinstance(note, Say):
                if any(matches(fact, note.keywords) for fact in facts or []):
                    reading.learned.append(note.fact)
                else:
                    reading.missed.append((note.fact, line.text, facts))
            elif facts and (note is None or isinstance(note, Trap)):
                reading.stray.append((note.kind if isinstance(note, Trap) else "nothing", line.text, facts))
    return reading


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--script", choices=sorted(SCRIPTS), default="b")
    parser.add_argument("--details", action="store_true", help="list each statement missed and trap kept")
    args = parser.parse_args()
    reading = read(importlib.import_module(SCRIPTS[args.script]))
    said = len(reading.learned) + len(reading.missed)
    stray = sum(len(facts) for _, _, facts in reading.stray)
    print(
        table(
            ["script", "self-statements learned", "facts written", "from traps or empty lines"],
            [[args.script, f"{len(reading.learned)} of {said}", reading.facts, stray]],
        )
    )
    if args.details:
        for fact, text, facts in reading.missed:
            print(f"missed {fact}: {text!r} -> {'(a model writes it)' if facts is None else facts}")
        for kind, text, facts in reading.stray:
            print(f"kept from a {kind} line: {text!r} -> {facts}")


if __name__ == "__main__":
    main()
