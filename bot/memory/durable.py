"""What is never a durable fact, whatever a model proposes: secrets, moods, hypotheticals, questions.

Small models copy chat lines as facts (bench/quality.py): a shared document's password, "I'm so tired
today", "if I won the lottery I'd buy a boat" and "anyone know a good vet" all came back as facts. The
bot recognises them by their words, so no model's answer can store them. English first, with the
commonest words of a few other languages; a secret is refused even when its owner asks (`remembering`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection

_SECRET_NAMES = (
    r"passwords?|passwd|pwd|pw|passphrase|pass phrase|passcode|mot de passe|mdp|passwort|kennwort"
    r"|contraseña|senha|wachtwoord|lösenord|adgangskode|tokens?|api[ _-]?keys?|secret keys?|private keys?"
    r"|access keys?|ssh keys?|seed phrase|recovery phrase|recovery codes?|backup codes?|2fa|otp"
    r"|one[- ]time codes?|(?:door|gate|alarm|access|entry|login|security|verification|wifi|wi-fi|safe|lock"
    r"|pin) ?codes?|pin(?: number)?|card number|cvv|cvc|credentials?|creds|log-?ins?(?=\s*(?:is|was|:|=))"
)
# A word that names a secret, or "code" followed by something with a digit ("the code is 4821").
_SECRET_WORDS = re.compile(
    rf"\b(?:{_SECRET_NAMES})\b|(?<!zip )(?<!post )(?<!postal )(?<!area )(?<!country )\bcodes?\s*(?:is|was|:|=)\s*\S*\d",
    re.I,
)
# What follows a secret's name: "password is tulip-42", "pw: tulip-42", "login = ana / Tulip-42".
_SECRET_VALUE = re.compile(
    rf"\b(?:{_SECRET_NAMES})\b[^:=\n]{{0,20}}?(?:\s(?:is|was|are|were)\s|[:=])([^\n]{{0,40}})", re.I
)
_SIGNS = frozenset("!@#$%^&*_+=~|\\/<>")
# A run of 16+ characters, letters and digits mixed (an API key, a token, a generated password).
_RANDOM_RUN = re.compile(r"(?<![\w/@-])[\w+/=-]{16,}")
# Links, mentions and custom emoji hold long runs of ids that are no secret.
_NOT_SECRET = re.compile(r"https?://\S+|www\.\S+|<[^<>\s]*>", re.I)
# 13-19 digits, together or in groups of four: a payment card's number when its check digit agrees.
_CARD = re.compile(r"(?<!\d)(?:\d{13,19}|\d{4}(?:[ -]\d{4}){2}[ -]\d{1,7})(?!\d)")


def holds_secret(text: str, known: Collection[str] = ()) -> bool:
    """Whether `text` holds a password, key, token, code or card number, names one, or gives away one
    of the `known` secrets (`secret_values` of the messages it was read from) in other words."""
    if _SECRET_WORDS.search(text) or secret_values(text):
        return True
    folded = text.casefold()
    return any(re.search(rf"(?<!\w){re.escape(secret)}(?!\w)", folded) for secret in known)


def secret_values(text: str) -> set[str]:
    """The secrets `text` gives away, case-folded: what follows a secret's name ("the pw is tulip42"),
    random-looking runs and card numbers. A fact holding one is refused, however the model worded it."""
    plain = _NOT_SECRET.sub(" ", text)
    found = {
        value.casefold()
        for m in _SECRET_VALUE.finditer(plain)
        for word in m.group(1).split()
        if _password_like(value := word.strip("\"'`.,;:!?()[]"))
    }
    found |= {run.casefold() for run in _RANDOM_RUN.findall(plain) if _random_looking(run)}
    found |= {card for card in _CARD.findall(plain) if _luhn(re.sub(r"\D", "", card))}
    return {value for value in found if value}


def _password_like(value: str) -> bool:
    """A digit, a sign or a capital inside: "hunter2", "Tulip-42", "pAssWord"; not "written" or "don't"."""
    return len(value) >= 4 and any(c.isdigit() or c in _SIGNS or c.isupper() for c in value[1:])


def _random_looking(run: str) -> bool:
    """Letters and digits mixed in one long run: "sk-4f9a0c77b1", not "notifications2026" or a date."""
    kinds = ["d" if c.isdigit() else "a" for c in run if c.isalnum()]
    return sum(a != b for a, b in itertools.pairwise(kinds)) >= 3


def _luhn(digits: str) -> bool:
    """The check-digit rule payment card numbers follow."""
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, c in enumerate(reversed(digits)):
        n = int(c) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


_MOOD = (
    r"tired|exhausted|sleepy|knackered|hungry|starving|bored|stressed|annoyed|grumpy|cranky|hungover"
    r"|sad|upset|angry|fed up|in an? (?:\w+ )?mood"
)
# "I'm so tired", "Ben is really bored", "Ana feels grumpy": how someone is, not who they are.
_MOODS = re.compile(
    rf"\b(?:am|is|are|was|were|feel|feels|feeling|felt|i'm|im|'m|'s)\s+(?:so\s+|really\s+|very\s+|super\s+"
    rf"|kinda\s+|a bit\s+|pretty\s+|quite\s+|totally\s+|sooo+\s+)?(?:{_MOOD})\b",
    re.I,
)
# "If I won the lottery I'd ...", "I might ...", "maybe I'll ...", "I wish ...".
_HYPOTHETICALS = re.compile(
    r"\bif\b.*\b(?:would|'d|could|might)\b|\b(?:would|'d|could|might)\b.*\bif\b"
    r"|\b(?:might|maybe|perhaps|possibly|wish|wishes|wished|someday|vielleicht|peut-être|quizás|tal vez"
    r"|forse|talvez|misschien)\b",
    re.I,
)


def of_the_moment(text: str) -> bool:
    """Whether `text` is a mood or a hypothetical (a wish, an "if", a "might"): nothing that lasts."""
    return bool(_MOODS.search(text) or _HYPOTHETICALS.search(text))


# How someone feels about what just happened ("Chloe is jealous", "I'm so done"): a person's facts only,
# since a community's line may well be glad or excited about its plan ("everyone is excited for Friday").
_FEELING = (
    r"jealous|envious|excited|nervous|anxious|worried|furious|pissed|salty|thrilled|stoked|hyped|relieved"
    r"|embarrassed|confused|shocked|speechless|glad|bummed|gutted|devastated|frustrated|irritated"
    r"|impatient|freaking out|losing it|wrecked|knackered|exhausted|shattered|drained|hooked|tired|sleepy"
    r"|starving|sore|fried|wiped out"
)
_FEELINGS = re.compile(
    rf"\b(?:am|is|are|was|were|feel|feels|feeling|felt|i'm|im|'m|'s|’m|’s)\s+(?:so+\s+|really\s+|very\s+"
    rf"|super\s+|kinda\s+|a bit\s+|pretty\s+|quite\s+|totally\s+|literally\s+|just\s+)?(?:{_FEELING})\b"
    # "done" and "over it" said of the moment close their clause ("Dev is done with uni" is a fact)
    r"|\b(?:is|are|am|'m|’m|'s|’s)\s+(?:so+\s+|really\s+|totally\s+|just\s+)?(?:done|over it)\W*$",
    re.I,
)
# Hyperbole: "Ana literally lives at the gym", "I'm basically a professional napper", "I'm practically
# a local". "Basically" before a verb or an adjective hedges a fact ("I'm basically vegetarian"); before
# "a" it makes someone what they are not.
_HYPERBOLE = re.compile(
    r"\bliterally\b|\b(?:basically|practically|pretty much|virtually)\s+(?:an?|the|my|your|his|her|their|our)\b",
    re.I,
)
# "I'm dying", "Dev is dead 💀", "I'm screaming": said of the speaker (a bare name, never "Ana's cat")
# where the clause ends (not "Emi is dying her hair red"), the hyperbole of a laugh.
_DYING = re.compile(
    r"^(?:i\s*['’]?\s*m|i am|[^\W\d_][\w-]*\s+(?:is|was))\s+(?:\w+ly\s+|so\s+|actually\s+)?"
    r"(?:dying|dead|deceased|screaming|crying|wheezing)(?:\s+(?:inside|rn|lol|lmao|haha\w*))?\W*$",
    re.I,
)
# A statement closed by laughter is a joke: "lol", "lmao", "haha", "jk", 😂, 🤣, 💀 as its last word.
_LAUGHED = re.compile(r"(?:\b(?:lol+|lmao+|lmfao|rofl|haha\w*|hehe\w*|jk|xd+)\b|[😂🤣😹💀]|/s)[\s\W]*$", re.I)
# Talk about the talk: remembering or forgetting (not "I still remember my first concert", nor an
# aside ", remember"), telling and saying ("as I said", "I told you", "never said that").
_TALK = re.compile(
    r"(?<!,)(?<!, )\b(?:remember|remembers|remembered|recall|recalls|forget|forgets|forgot|forgotten"
    r"|forgetting)\b(?=\s*(?:$|[^\w\s]|(?:telling|saying|mentioning|asking|that|this|it|what|where|who"
    r"|when|why|how|if|whether|to|you|u|him|her|them|me)\b))"
    r"|\b(?:as|like)\s+(?:i|i've|you|u|he|she|they|we|[^\W\d_]+)\s+(?:said|say|told|mentioned|wrote"
    r"|explained)\b|\b(?:told|tell|telling|tells|mentioned|mention)\s+(?:you|u|ya|y'all|everyone|you all"
    r"|you guys)\b"
    # ... and a clause closed by saying "that" ("Dev never said that", "Chloe mentioned that earlier")
    r"|\b(?:said|say|says|mentioned|mention|told|asked)\s+(?:that|this|it)(?:\s+(?:earlier|before|already))?\W*$",
    re.I,
)


def chatter(text: str) -> bool:
    """Whether `text` is chatter rather than a fact about someone: a feeling of the moment, hyperbole or
    a joke, or talk about the talk. A small model "counting" every line has the bot read each by its
    rules, and these came back as facts: "Chloe is jealous", "Emi is dying 😂", "Emi is basically a
    professional napper on Sundays", "Chloe doesn't remember telling you that", "Dev keeps forgetting".
    For people's facts; a community line is judged by `of_the_moment` alone."""
    return any(pattern.search(text.strip()) for pattern in (_FEELINGS, _HYPERBOLE, _DYING, _LAUGHED, _TALK))


_SENTENCE_ENDS = re.compile(r"(?<=[.!?])\s+")
# A sentence that asks without its "?": "anyone know a good vet", "do you like jazz".
_ASKING = re.compile(
    r"^(?:(?:who|what|where|when|why|how|which)\s+(?:is|are|was|were|do|does|did|can|could|should|would"
    r"|will|has|have)\b|(?:do|does|did|can|could|should|would|will|is|are|has|have)\s+(?:you|anyone"
    r"|anybody|someone|somebody|we|u)\b|(?:anyone|anybody|any tips|any ideas|any advice|thoughts)\b)",
    re.I,
)


def statements(text: str) -> str:
    """`text` without its questions: "We adopted a puppy! Any tips?" -> "We adopted a puppy!"; "" when
    it only asks."""
    sentences = [s for s in _SENTENCE_ENDS.split(text.strip()) if s]
    if not any(_asks(s) for s in sentences):
        return text
    return " ".join(s for s in sentences if not _asks(s))


def _asks(sentence: str) -> bool:
    return sentence.endswith("?") or bool(_ASKING.match(sentence))


# Words that put a statement in a sensitive category whatever a model marked (English first): a floor
# under the model's `sensitive` flag, which a small model sets on every line or on none.
_SENSITIVE = re.compile(
    r"\b(?:diabet\w*|cancer|chemo\w*|hiv|aids|depress\w*|anxiety|bipolar|schizo\w*|adhd|autis\w*|ptsd"
    r"|epilep\w*|dementia|alzheimer\w*|disabilit\w*|disabled|wheelchair|medication|antidepressant\w*"
    r"|therapist|therapy|rehab|pregnan\w*|miscarriage|abortion|gay|lesbian|bisexual|queer|transgender"
    r"|asexual|muslim|christian|catholic|protestant|jewish|hindu|buddhist|atheist|sikh|mormon|mosque"
    r"|synagogue|church|pray(?:s|ed|ing)?|religio\w*|voted? for|vote (?:labour|tory|democrat|republican)"
    r"|party member|trade union|union member|arrested|convicted|prison|criminal record|salary|income"
    r"|mortgage|debts?|bankrupt\w*|phone number|e-?mail (?:is|address)|home address|(?:my|his|her|their) address"
    r"|ethnic\w*|racial)\b",
    re.I,
)


def sensitive(text: str) -> bool:
    """Whether `text` names health, orientation, belief, politics, a record, finances or contact
    details in so many words: such a fact is never learned from chat, however a model marked it."""
    return bool(_SENSITIVE.search(text))
