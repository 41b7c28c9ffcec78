"""What the words of a new fact and a known one say of each other, without a model.

Consolidation (`consolidate.py`) settles by these what words alone settle (a DUPLICATE, a MERGE that
adds a detail, a change that replaces the fact it changes), and checks the model's decisions against
them: a MERGE, INVALIDATE or DUPLICATE of facts that share no subject keeps both, and a merged text
that invents words is refused. Kept apart from the consolidator's calls and locks because they are
pure functions of texts, tested on their own.
"""

from __future__ import annotations

import re

from bot.memory.dates import of_one_day, undated
from bot.memory.models import (
    Decision,
    Fact,
    NewFact,
    Operation,
)
from bot.memory.text import (
    ADDITION_WORDS,
    CHANGE_WORDS,
    change_words,
    content_words,
    fold,
    folded_words,
    of_today,
    says_it_grew,
    stems,
)

# Words that can turn a fact around ("not", "no longer", "used to", "moved", "quit", "now"): a new
# fact holding one its candidate lacks may change it, so only a model may settle it. English first,
# with the commonest negations of a few other languages; a missing word only costs a model call.
TURNING_WORDS = frozenset(
    "not no never nor none nothing nobody anymore longer stopped quit quitting former formerly ex used "
    "moved moving left leaving now previously until instead doesn don isn wasn aren weren didn won hasn "
    "haven hadn cannot ne pas plus jamais nicht kein keine keinen nie mehr nunca nada ya ahora non".split()
)


def turning_words(text: str) -> set[str]:
    return folded_words(text) & TURNING_WORDS


def settled_by_words(fact: NewFact, candidates: list[tuple[Fact, float]]) -> Operation | None:
    """Settle without a model what the words alone settle, nearest candidate first: DUPLICATE when the
    new fact adds no informative word to a known one; MERGE into the new text when it holds every
    informative word of a known one and more (it says all the old fact said, plus a detail). Never when
    the two differ in a word that can turn a fact around ("Ben is vegetarian" after "Ben is no longer
    vegetarian" is news).

    Small models answered KEEP for most of both (bench/quality.py), storing a second copy or leaving
    the old text beside its refinement; the words settle them for free.
    """
    names = content_words(fact.user_name)
    new_words = content_words(fact.text) - names
    if not new_words:
        return None
    turning = turning_words(fact.text)
    for known, _ in candidates:
        if turning != turning_words(known.text):
            return None
        old_words = content_words(known.text) - names
        if new_words <= old_words:
            return Operation(Decision.DUPLICATE, fact, known.id, reason="adds no word")
        if old_words and old_words < new_words:
            return Operation(
                Decision.MERGE, fact, known.id, merged_text=fact.text, reason="says all of it and more"
            )
    return None


def replaced_by_words(fact: NewFact, candidates: list[tuple[Fact, float]]) -> Operation | None:
    """INVALIDATE of the nearest candidate about the same thing (sharing an informative word besides
    the name), when the new fact says it changed in words its candidate lacks and adds nothing alongside:
    "Dev's favourite sport is badminton now" replaces "Dev's favourite sport is cricket", "Ben quit
    carpentry" replaces "Ben works as a carpenter". None when the words do not say so, and for what is
    said of today or dated to one day ("Ben left work early today", "... on 2026-11-24" as extraction
    writes "yesterday": `dates.of_one_day`) retires no job: the model decides those.

    A small model (Qwen2.5 1.5B, bench/quality.py) kept such pairs side by side in its consolidation
    answers, and both stayed active. Asked only which known facts a change makes untrue, it named the
    first one listed whatever they said: 10 of 24 right in a trial on the bench's changes, where always
    naming the first would have got 14.
    """
    if says_it_grew(fact.text) or of_today(fact.text) or of_one_day(fact.text):
        return None
    changed = change_words(fact.text)
    for known, _ in candidates:
        if changed - change_words(known.text) and same_topic(known.text, fact.text, fact.user_name):
            return Operation(Decision.INVALIDATE, fact, known.id, reason="says it changed")
    return None


def change_verdict(decision: Decision, old: str, new: str, name: str = "") -> Decision | None:
    """What a model's MERGE or DUPLICATE should be when it would lose what the new fact changes.

    A new fact that says it changed ("Emi works as a baker now", "Gus is no longer vegetarian") and
    adds nothing alongside ("also") replaces its candidate: INVALIDATE, not a merged text holding both.
    A DUPLICATE would drop the new fact: INVALIDATE when it says it changed ("Ana moved to Lyon"), KEEP
    when it names something the old one does not ("Chloe lives in Bergen" after Ghent: both stay, a
    wrong pair being safer than a lost fact); other words are taken for a paraphrase ("named"/"called").
    None: the decision stands. Small models answered MERGE or DUPLICATE for most replacements
    (bench/quality.py).
    """
    old_words = folded_words(old)
    changed = change_words(new) - change_words(old)
    if decision is Decision.MERGE:
        return Decision.INVALIDATE if changed and not says_it_grew(new) else None
    if changed:
        return Decision.INVALIDATE
    return Decision.KEEP if _names_and_numbers(new, name) - old_words else None


def _names_and_numbers(text: str, name: str) -> set[str]:
    """Folded words of `text` that name something (capitalised after the first word) or hold a digit,
    the person's own name aside: what a paraphrase keeps and new information brings."""
    own = folded_words(name)
    words = re.findall(r"\w+", text)
    return {
        fold(w)
        for i, w in enumerate(words)
        if (any(c.isdigit() for c in w) or (i > 0 and w[:1].isupper())) and fold(w) not in own
    }


# Words that say how, when or that something changed, not what a fact is about: facts sharing only these
# ("Chloe eats fish again now", "Chloe lives in Lyon now") are about different things.
_NOT_A_SUBJECT = stems(
    " ".join(TURNING_WORDS | CHANGE_WORDS | ADDITION_WORDS)
    + " again still really just always usually often sometimes currently back lately recently basically"
    + " actually every today tonight yesterday tomorrow",
    every_word=True,
)


def subject_words(text: str, name: str = "") -> set[str]:
    """The stems of what a fact is about: its informative words but its owner's name, words of change
    or time (`_NOT_A_SUBJECT`) and its dates (`dates.undated`), which two unrelated facts share as
    easily as two related ones ("in October 2026")."""
    return stems(undated(text)) - stems(name) - _NOT_A_SUBJECT


def same_topic(old: str, new: str, name: str = "") -> bool:
    """Whether two facts share a word of what they are about (`subject_words`), as facts about the same
    thing do ("lives in Paris" / "lived in Berlin"). A small model merged a new job into a home town and
    a new hobby into a passing mood (bench/quality.py); such facts share no word."""
    return bool(subject_words(old, name) & subject_words(new, name))


# The words of one subject of a life that facts about it state in different words: where someone lives
# ("lives in Paris" / "moved to Berlin" / "relocated"), their work ("works at the bank" / "a new job"),
# what they eat ("is vegan" / "eats meat again"). Whole folded words, so "bass" is not "based".
SUBJECTS = (
    frozenset(
        "live lives living lived move moves moved moving relocate relocates relocated relocating based "
        "reside resides resided residing".split()
    ),
    frozenset("work works working worked job jobs employed employer hired retired career".split()),
    frozenset("eat eats eating ate vegan vegetarian pescatarian meat fish diet".split()),
)


def same_subject(old: str, new: str, name: str = "") -> bool:
    """Whether a model's MERGE, INVALIDATE or DUPLICATE may join or replace two facts: they share a
    word of what they are about (`same_topic`) or each holds a word of the same subject of a life
    (`SUBJECTS`: "Ana moved to Lyon" replaces "Ana lives in Porto"). Otherwise both are kept, whatever
    the model said: a small model answered MERGE for "Chloe eats fish again now" into an unrelated fact,
    which the change rule then made an INVALIDATE, and invalidated "Emi barely gets weekends off" with
    a joke; a wrong pair side by side is safer than a fact lost."""
    if same_topic(old, new, name):
        return True
    old_words, new_words = folded_words(old), folded_words(new)
    return any(old_words & words and new_words & words for words in SUBJECTS)


# Words a merged text may hold that neither fact does: what joins two statements ("formerly", "also").
JOINING_WORDS = frozenset(
    w[:5]
    for w in TURNING_WORDS
    | CHANGE_WORDS
    | ADDITION_WORDS
    | {"too", "both", "while", "since", "currently", "previously", "including", "well", "then", "but"}
)


def invented_words(old: str, new: str, merged: str, name: str = "") -> set[str]:
    """The informative words of a merged text that neither fact holds, joining words aside: a small
    model's merge once appended another person's fact ("Chloe is a pharmacist, remember\nDev's
    favourite sport is badminton", bench/quality.py); a merge may only say what the two facts said."""
    said = content_words(old) | content_words(new) | content_words(name)
    return content_words(merged) - said - JOINING_WORDS


MERGE_FAULTS = {
    Decision.DUPLICATE: "added nothing to it",
    Decision.KEEP: "lost or repeated information",
}


def merge_verdict(old: str, new: str, merged: str, name: str = "") -> Decision:
    """Whether a MERGE keeps what is new: MERGE when the merged text holds most of both facts' words
    and says nothing twice; DUPLICATE when the new fact adds no word to the old one; KEEP (store the
    new fact as it is, the old one untouched) when the merged text dropped information or repeats itself."""
    names = content_words(name)
    old_words, new_words = content_words(old) - names, content_words(new) - names
    fresh = new_words - old_words
    if not fresh:
        return Decision.DUPLICATE
    merged_words = content_words(merged)
    kept_new = len(fresh & merged_words) * 2 >= len(fresh)
    kept_old = len(old_words & merged_words) * 2 >= len(old_words - new_words or old_words)
    sentences = [fold(s).strip() for s in re.split(r"[.!?;\n]+", merged) if s.strip()]
    repeated = len(sentences) != len(set(sentences)) or fold(merged).count(fold(old).rstrip(". ")) > 1
    return Decision.MERGE if kept_new and kept_old and not repeated else Decision.KEEP
