"""A chat line -> the first-person clauses the bot writes as facts about its speaker itself.

Selection (`selection.py`) has a small model point at lines; the bot then writes each chosen line's
facts where it can: an English first-person clause ("I live in Porto", "my dog is Rex") is the speaker's
own statement, rewritten by `third_person` in `accept_facts`. This module decides which clauses of a
line those are.
"""

from __future__ import annotations

import re

from bot.memory.dates import RELATIVE_DATE
from bot.memory.implied_subject import with_subject
from bot.memory.text import content_words
from bot.memory.third_person import third_person

# Sentences end at their stop, a line break, or an emoji between two statements ("nurse here 🙋 moved to
# Cork last spring").
_SENTENCES = re.compile(r"(?<=[.!?\u2600-\u27bf\ufe0f\U0001f300-\U0001faff])\s+|\s*\n\s*")
# A name given to what was just mentioned: "her name is Pepper", "his name's Leo", "it's called Night
# Shift", "we're called The Owls", ", named Miso", ", named it Rocket".
_NAMING = (
    r"(?:(?:her|his|its|their|our)\s+names?\s*(?:is|are|'s|’s)"
    r"|(?:she|he|it|they|we)\s*(?:'s|’s|'re|’re|\s+is|\s+are)\s+(?:called|named)"
    r"|(?:named|called)(?:\s+(?:it|him|her|them))?)"
)
# What starts a new clause after a comma, a dash, "and", "but" or "so": the speaker as its subject ("I'm
# Ben, I work as a carpenter", "... and my dog ...", "... so I sleep all day"), a comment on the talk
# ("... so that's normal for me", ", which keeps me busy") or a name. Not "and work in Braga" (the same
# subject goes on) nor "so no satay for me" (the first clause's consequence, one fact with it); a
# semicolon always ends a clause.
_NEXT = (
    r"(?:i|i'm|i’m|im|i've|i’ve|i'll|i’ll|i'd|i’d|my|we|we're|we’re|we've|we’ve|our|that's|that’s|thats"
    r"|that is|this is|which|he|she|it|they|he's|he’s|she's|she’s|it's|it’s|they're|they’re"
    rf"|currently\s+\w+ing|{_NAMING})\b"
)
_CLAUSES = re.compile(
    rf"\s*;\s*|\s*(?:,|\s[-–—]|—)\s*(?:(?:and|but|so)\s+)?(?={_NEXT})|\s+(?:and|but|so)\s+(?={_NEXT})", re.I
)
_NAME_GIVEN = re.compile(rf"^{_NAMING}\s+(?P<name>.+)$", re.I)
# Where a name ends: before what is said next of its owner ("Tom and he's a chef").
_NAME_END = re.compile(
    r"\s+(?:and|but|so|because|who|which)\s+(?:he|she|it|they|i|we|who|is|was)\b.*$|\s*,.*$", re.I
)
# Words no name starts with: "it's called a tabby", ", called my mum", ", called in sick".
_NOT_A_NAME = frozenset(
    "a an like something so not my your his her our their me you us back in to up off out for on at by "
    "about".split()
)
_MAX_NAME_WORDS = 4
# A relative date closing a clause: a name goes before it ("had a baby named Leo last week").
_CLOSING_DATE = re.compile(rf"\s+(?:{RELATIVE_DATE})$", re.I)
_NAMED = re.compile(r"\b(?:named|called)\b", re.I)
# A time or place said before the subject: "in the evenings I play the cello" -> "I play the cello in the
# evenings", "yesterday I went ..." -> "I went ... yesterday", which `third_person` can write.
_LEAD = re.compile(
    r"^((?:in|on|at|for|since|after|before|during|every|most|these days|nowadays|lately|recently"
    rf"|sometimes|usually|often|{RELATIVE_DATE})\b[^,.!?]{{0,40}}?),?\s+((?:i|i'm|i’m|i've|my)\b.*)$",
    re.I,
)
# Words a chat line opens with before its statement: "btw I live in Oslo", "oh and I have a cat".
_OPENERS = re.compile(
    r"^(?:(?:also|btw|oh|and|so|well|yeah|yep|yes|no|nope|actually|anyway|lol|haha|ok|okay|update|news"
    r"|(?:hey|hi|hello|hola|hiya|heya)(?:\s+(?:all|everyone|everybody|folks|guys|y'all|friends))?|fun fact"
    r"|by the way|to be (?:specific|honest|fair|clear|exact)|for (?:context|the record"
    r"|reference)|fwiw|honestly|tbh|ngl|in fact|funnily enough|funny enough)\b[\s,:;!.-]*)+",
    re.I,
)
# A few words and a colon before the statement: "big news: I moved to Bergen", "update: I quit".
_LEAD_IN = re.compile(r"^(?:[\w'’]+\s+){0,2}[\w'’]+:\s+(?=\S)")
# Words a chat line closes a statement with: "I live in Oslo btw", "I'm a pharmacist, remember". A word
# people also state things with ("I remember", "anyway") counts only after a comma. Laughter ("lol",
# "haha") is no closer: it says the statement was a joke, and `durable.chatter` refuses it.
_CLOSERS = re.compile(
    r"(?:\s*,\s*(?:remember|anyway|you know|honestly|btw|tbh|fyi|ngl)|\s+(?:btw|tbh|fyi|ngl))+$", re.I
)
# "I think Ben is moving", "I agree", "I'm not sure about that one", "I need to ...", "I want ...": the
# speaker's view of the talk, a need or a wish, not a fact about them.
_NOT_ABOUT_THEM = re.compile(
    r"^i(?:\s*'\s*m|\s+am)?\s+(?:not\s+|so\s+|really\s+|totally\s+)?(?:think|thought|heard|hear|guess|believe|bet"
    r"|suppose|reckon|doubt|wonder|feel like|assume|agree|agreed|disagree|mean|meant|know|see|saw that"
    r"|understand|hope|need|have to|gotta|want|wanna|would|'d|sure|kidding|joking)\b",
    re.I,
)
# "no I won't 😅", "I did!": a subject and its auxiliary, the rest said before by someone else.
_NOTHING_SAID = re.compile(
    r"^i(?:\s*['’]\s*m|\s+am)?\s+(?:(?:won['’]?t|will|can['’]?t|can|cannot|do|don['’]?t|did|didn['’]?t|was"
    r"|wasn['’]?t|would|wouldn['’]?t|could|couldn['’]?t|should|shouldn['’]?t|have|haven['’]?t|had|must"
    r"|might|may)(?:\s+not)?)?[^\w]*$",
    re.I,
)
# "my first bowl looks like a hat", "my soup tastes weird": how a thing of theirs looks or feels now, not
# a fact about them ("my flat looks out over the sea" stays).
_DESCRIBED = re.compile(
    r"^my\s+(?:[\w'’-]+\s+){0,3}?(?:looks|seems|sounds|smells|tastes|feels)\b(?!\s+out\b)", re.I
)
# "that recipe looks amazing", "the new episode was so good", "it's raining": a clause whose subject is
# something else, with no first-person word, says nothing about its speaker.
_OTHER_SUBJECT = re.compile(
    r"^(?:that|this|these|those|the|it|it's|its|there|there's|he|he's|she|she's|they|they're|his|her|their)\b",
    re.I,
)
# "I'll check it later", "I'm going to grab lunch": a plan is kept only with its date ("I'm running a
# half marathon on April 12" says when).
_FUTURE = re.compile(r"^i(?:\s*'\s*ll|\s+will|\s*'\s*m going to|\s+am going to|\s*'\s*m gonna)\b", re.I)
_WHEN = re.compile(
    r"\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|\b(?:mon|tues|wednes|thurs|fri"
    r"|satur|sun)day|\bnext (?:week|month|year|spring|summer|autumn|fall|winter)\b",
    re.I,
)
# Words of a greeting or a sign-off: a clause of only these (and names) says nothing to keep.
_GREETING = content_words(
    "hey hello hiya everyone everybody all folks guys people morning evening night there thanks thank "
    "welcome lol haha yeah yes okay cheers here"
)
# A first-person word: a clause about something else holding one may still be the speaker's ("the flat
# is tiny but my cat loves it"), and a line about the server holding one needs a model to write.
FIRST_PERSON_WORD = re.compile(r"\b(?:i|i'm|me|my|mine|we|we're|us|our|ours)\b", re.I)


def own_clauses(text: str, speaker: str, names: set[str]) -> list[str] | None:
    """The first-person clauses of `text` the bot can turn into facts about `speaker` itself ("I'm Ben,
    I work as a carpenter" -> ["I work as a carpenter"]), or None when a clause that says something is
    not one (another language, no subject) and none is: then a model writes the line. Empty: nothing to
    keep.

    Each clause is judged alone, so one the bot cannot write never costs the line the ones it can: "12
    hours on the ward, I work as a nurse so that's pretty normal for me" -> ["I work as a nurse"]. A
    model that counts every line has the bot read all of them, and such lines stored nothing when a
    fragment beside the statement sent the whole line to a model that was not asked. What the bot
    cannot write beside what it can is context ("12 hours on the ward"), not worth a model's call.
    Greetings and names alone are dropped ("hi all!", "I'm Ben"), and so are the speaker's view of the
    talk, needs and wishes ("I think ...", "I agree", "I want ..."), a clause about something else
    ("that recipe looks amazing": a model chose such lines, and its rewrite call wrote nothing from
    them, 6 s of a flush) and a plan without its date ("I'll check it later").
    A time or place said first is moved after the statement ("in the evenings I play the cello"). A name
    given next to what was just mentioned goes with it ("I got a dog! her name is Pepper" -> ["I got a
    dog named Pepper"]), so the fact keeps what people will ask about.
    """
    kept: list[str] = []
    unwritten = False  # a clause that says something the bot cannot write: "new here", "teacher."
    just_written = False  # the clause before was written: a name given next is its thing's
    for sentence in _SENTENCES.split(text):
        for part in _CLAUSES.split(sentence):
            clause = _OPENERS.sub("", _LEAD_IN.sub("", part.strip())).strip(" ,;:-–—").rstrip(".!… ")
            clause = _CLOSERS.sub("", clause)
            if given := _NAME_GIVEN.match(clause):
                if just_written and (name := _name(given.group("name"))):
                    kept[-1] = _with_name(kept[-1], name)
                just_written = False
                continue
            if lead := _LEAD.match(clause):
                clause = f"{lead.group(2)} {lead.group(1)}"
            clause = with_subject(clause)
            said = content_words(clause) - names - _GREETING
            if not said:
                continue
            just_written = False
            if (
                _NOT_ABOUT_THEM.match(clause)
                or _NOTHING_SAID.match(clause)
                or _DESCRIBED.match(clause)
                or (_OTHER_SUBJECT.match(clause) and not FIRST_PERSON_WORD.search(clause))
                or (_FUTURE.match(clause) and not _WHEN.search(clause))
            ):
                continue
            if third_person(clause, speaker) != clause:
                kept.append(clause)
                just_written = True
            else:
                unwritten = True
    return None if unwritten and not kept else kept


def _name(said: str) -> str | None:
    """The name in what follows "her name is": up to what is said next of its owner, without closing
    punctuation or emoji; None when it is no name ("it's called a tabby")."""
    name = re.sub(r"[^\w'’)\"]+$", "", _NAME_END.sub("", said.strip()))
    words = name.split()
    if not words or len(words) > _MAX_NAME_WORDS or words[0].lower() in _NOT_A_NAME:
        return None
    return name


def _with_name(clause: str, name: str) -> str:
    """`clause` with the name of what it mentions last, before a closing date ("I got a dog last week"
    -> "I got a dog named Pepper last week"); as it is when it names its thing already."""
    if _NAMED.search(clause):
        return clause
    date = _CLOSING_DATE.search(clause)
    at = date.start() if date else len(clause)
    return f"{clause[:at]} named {name}{clause[at:]}"
