"""A fact a model copied in the first person ("I live in Porto"), rewritten about its owner
("Ana lives in Porto").

Small models copy a speaker's line instead of restating it. Stored as it is, "I live in Porto" is
ambiguous wherever the fact travels without its owner beside it: next to other people's facts in the
reply prompt ("I" reads as the bot), in the consolidation prompt, in the admin log. Only English is
rewritten, and only a sentence that starts with its subject ("I ...", "I'm ...", "My ..."); anything else
is left as the model wrote it.
"""

from __future__ import annotations

import re

Rules = tuple[tuple[re.Pattern[str], str], ...]


def _rules(*pairs: tuple[str, str]) -> Rules:
    return tuple((re.compile(pattern, re.I), replacement) for pattern, replacement in pairs)


# Leading subject -> its third-person form ("{name}" is the owner). Longest first.
_LEADING = _rules(
    (r"^i\s*'\s*m\b|^i am\b|^im\b", "{name} is"),
    (r"^i\s*'\s*ve\b|^i have\b", "{name} has"),
    (r"^i\s*'\s*ll\b|^i will\b", "{name} will"),
    (r"^i was\b", "{name} was"),
    (r"^my\b", "{name}'s"),
)
# "I" and its verb, with up to two adverbs between: listed ones and any in -ly of six letters or more
# ("finally", "hardly ever"; not the verbs "fly", "rely", "supply", "multiply").
_I_VERB = re.compile(
    r"^i\s+((?:(?:also|still|just|now|often|sometimes|never|ever|only|always|seldom|even"
    r"|[a-z]{3,}[a-oq-z]ly)\s+){0,2})([a-z]+(?:['’][a-z]+)?)(?![\w'’])",
    re.I,
)
_MODALS = frozenset(
    "can could would should must may might shall will did can't won't couldn't wouldn't shouldn't didn't "
    "mustn't".split()
)
# Auxiliaries whose third person is not a plain -s ("I don't eat meat" -> "Ana doesn't eat meat").
_IRREGULAR = {"do": "does", "don't": "doesn't", "have": "has", "haven't": "hasn't", "be": "is"}
# Past forms without -ed, which take no -s.
_PAST = frozenset(
    "got went had did made took left came saw began became bought sold grew ran won lost quit put set "
    "found met knew thought told said gave kept felt built spent taught caught brought fought wrote "
    "drove rode broke chose spoke stole forgot sang swam drank ate fell".split()
)
# Later mentions of the speaker, after the subject is rewritten.
_LATER = _rules(
    (r"\bi\s*'\s*m\b|\bi am\b", "they're"),
    (r"\bi was\b", "they were"),
    (r"\bi\s*'\s*ve\b", "they've"),
    (r"\bi\s*'\s*d\b", "they'd"),
    (r"\bi\s*'\s*ll\b", "they'll"),
    (r"\bi\b", "they"),
    (r"\bmyself\b", "themselves"),
    (r"\bmine\b", "theirs"),
    (r"\bmy\b", "their"),
    (r"\bme\b", "them"),
)


# Verbs a second clause of the speaker's often starts with, its subject left out: "I live in Porto and
# work in Braga" -> "... and works in Braga". Only these, and only with a word after them: "and dance"
# closing "I love music and dance" is a noun as often.
_SHARED_SUBJECT = re.compile(
    r"\b(and|but|or)\s+((?:also|still|now|often|usually|sometimes|never|always|mostly)\s+)?(work|live|study"
    r"|teach|play|sing|write|run|own|have|love|like|enjoy|hate|speak|cook|ride|drive|make|build|coach"
    r"|volunteer|manage|go|read|paint|draw|dance|swim|knit|bake|grow|keep|collect|help|raise|do|watch"
    r"|travel|visit|use|sell|fix|design|code|brew|climb|hike|walk|cycle|host|organise|organize|practise"
    r"|practice|commute|rent|share|spend|look|care|know|learn|tutor|mentor)\b(?=\s+[\w'’])",
    re.I,
)
# The leading subjects (the first of `_LEADING`) after which a verb sharing the subject takes the third
# person too ("I'm a nurse and work nights"); not after "I'll" or "I was" ("I'll move and work there").
_PRESENT_SUBJECTS = 2


def third_person(text: str, name: str) -> str:
    """`text` about `name` when it starts with an English first-person subject; else `text` unchanged."""
    stripped = text.strip()
    for index, (pattern, replacement) in enumerate(_LEADING):
        if pattern.match(stripped):
            head = pattern.sub(replacement.format(name=name), stripped, count=1)
            return _later(head, len(replacement.format(name=name)), shared=index < _PRESENT_SUBJECTS)
    match = _I_VERB.match(stripped)
    if match is None:
        return text
    adverb, verb = match.group(1) or "", match.group(2)
    written = _third_person_verb(verb)
    head = f"{name} {adverb}{written}"
    # "I can swim and play chess", "I don't eat meat and drink milk": "play" goes with "can", not with the
    # speaker; after a past verb, one of the list is in the present ("I moved to Lyon and love it")
    low = verb.lower().replace("’", "'")
    return _later(head + stripped[match.end() :], len(head), shared=low not in _MODALS and "'" not in low)


def _later(text: str, start: int, *, shared: bool) -> str:
    """The rest of the sentence after its rewritten subject, with the speaker's other mentions and, when
    `shared` (its verb is in the present), the verbs of the clauses sharing its subject."""
    rest = text[start:]
    for pattern, replacement in _LATER:
        rest = pattern.sub(replacement, rest)
    if shared:
        rest = _SHARED_SUBJECT.sub(lambda m: f"{m[1]} {m[2] or ''}{_third_person_verb(m[3])}", rest)
    return text[:start] + rest


def _third_person_verb(verb: str) -> str:
    """'live' -> 'lives', 'teach' -> 'teaches', 'study' -> 'studies', 'have' -> 'has'; a modal or a
    past form stays as it is."""
    low = verb.lower().replace("’", "'")
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _MODALS or low in _PAST or low.endswith("ed") or "'" in low:
        return verb
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"
