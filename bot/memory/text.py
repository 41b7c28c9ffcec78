"""Cleaning message text before it is stored, sent to a model or put in XML."""

from __future__ import annotations

import re
import unicodedata

MAX_MESSAGE_CHARS = 4000
MAX_NAME_CHARS = 100  # Discord's names are at most 32 characters; this only bounds odd input
_BACKGROUND_BLOCK = re.compile(r"<background_facts\b.*?(?:</background_facts\s*>|\Z)", re.S | re.I)
# Zero-width and invisible format characters, bidirectional embeddings, overrides and isolates.
_ZERO_WIDTH = re.compile("[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
# Characters that show as nothing on Discord (fillers and blank glyphs), for telling a blank reply.
_BLANK_GLYPHS = re.compile("[\u00ad\u034f\u115f\u1160\u180e\u2800\u3164\uffa0]")
# Characters XML 1.0 cannot carry at all (C0 controls but tab/newline/CR, surrogates, U+FFFE/FFFF).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_MENTION = r"<(?:@[!&]?|#)\d+>"  # a user, role or channel, as Discord writes it in a message
_MENTIONS = re.compile(_MENTION)
_DISCORD_MARKUP = re.compile(_MENTION + r"|<a?:\w+:\d+>|<t:\d+(?::\w)?>|https?://\S+")
_WORDLIKE = re.compile(r"[^\W_]", re.UNICODE)
_LEADING_MENTIONS = re.compile(rf"^(?:\s*{_MENTION})*\s*")


def clean(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """Text safe to store and to show a model: no NUL/control or zero-width characters, bounded length."""
    text = _NOT_XML.sub("", text)
    text = _ZERO_WIDTH.sub("", text)
    return cut(text.strip(), limit)


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut after its last whole word that fits (a single word
    longer than half the limit is cut where it must be)."""
    if len(text) <= limit:
        return text
    space = max(text.rfind(" ", 0, limit + 1), text.rfind("\n", 0, limit + 1))
    return (text[:space] if space > limit // 2 else text[:limit]).rstrip()


def looks_blank(text: str) -> bool:
    """Whether a text would show as an empty message: only whitespace, zero-width and blank characters."""
    return not _BLANK_GLYPHS.sub("", _ZERO_WIDTH.sub("", text)).strip()


def starts_with_marker(text: str, marker: str) -> bool:
    """Whether a message opts out of memory: it starts with `marker`, after any leading mentions.

    "<@bot> !nomem ..." is addressed to the bot but still meant to be forgotten.
    """
    return bool(marker) and marker in text and _LEADING_MENTIONS.sub("", text, count=1).startswith(marker)


def strip_mentions(text: str) -> str:
    """The text without user, role and channel mentions ("@Bot" plus a photo leaves nothing)."""
    return _MENTIONS.sub("", text)


def strip_background_blocks(text: str) -> str:
    """Remove any `<background_facts>` block, so recalled memories are never learned a second time."""
    return _BACKGROUND_BLOCK.sub("", text)


def worth_reading(text: str) -> bool:
    """Whether a message has words once mentions, custom emoji, links and symbols are set aside."""
    return bool(_WORDLIKE.search(_DISCORD_MARKUP.sub("", clean(text))))


def xml_safe(text: str) -> str:
    """Text with characters XML cannot represent removed (escaping is done by the XML writer)."""
    return _NOT_XML.sub("", text)


STOPWORDS = frozenset(
    "the and for are but not you your yours with this that have has had was were will what when where who "
    "why how all any can could would should about into from they them their there then than its it's his "
    "her hers him she he our ours out get got just like also very much more most some such only own same "
    "too does did doing been being here over under again once which while because until each few both "
    "other nor off ich und der die das ist nicht les des est une pour que qui dans".split()
)


def fold(text: str) -> str:
    """Lower case without diacritics, as the FTS tokenizer (unicode61 remove_diacritics 2) sees words."""
    if text.isascii():  # nothing to decompose: most facts and questions, at a fraction of the cost
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


_WORDS = re.compile(r"\w+", re.UNICODE)
# Longest first; a word keeps at least _MIN_STEM characters, so "lives", "living" and "lived" share "liv".
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "s", "ic", "y", "e")
_MIN_STEM = 3


def stem(word: str) -> str:
    """A crude English stem, used as a prefix: "allergies", "allergic" and "allergy" all become "allerg".

    Keyword search matches the stem as a prefix, so the inflections people use in questions ("where does
    she live?") find the fact's ("lives in Porto") without a stemming tokenizer in the index.
    """
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word


def folded_words(text: str) -> set[str]:
    """The words of a text, folded: what the engine's word checks compare."""
    return set(_WORDS.findall(fold(text)))


# Words that say something changed ("now", "no longer", "moved"), and phrases that do ("these days").
CHANGE_WORDS = frozenset(
    "now nowadays longer anymore moved quit stopped former formerly ex instead switched changed left".split()
)
_CHANGE_PHRASES = re.compile(r"\bthese days\b")  # in folded text


def change_words(text: str) -> set[str]:
    """The words (and phrases) of `text` that say something changed: consolidation looks further for
    what such a fact changes, and selection writes such a line the model passed over."""
    return (folded_words(text) & CHANGE_WORDS) | set(_CHANGE_PHRASES.findall(fold(text)))


# Words that say a fact grew ("also"); what says it changed is `change_words`.
ADDITION_WORDS = frozenset("also another additionally".split())
# "too" where a clause ends says it grew ("I'm learning Portuguese too"); "too slow" does not.
_CLOSING_TOO = re.compile(r"\btoo\b(?=\s*(?:[.,;:!?)]|$))")


def says_it_grew(text: str) -> bool:
    """Whether `text` says it adds to what was known ("also", "too" at a clause's end)."""
    return bool(folded_words(text) & ADDITION_WORDS or _CLOSING_TOO.search(fold(text)))


_TODAY = re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening)|right now)\b", re.I)


def of_today(text: str) -> bool:
    """Whether `text` says it is about today ("I left work early today"): a change of the day, not of a
    person's life."""
    return bool(_TODAY.search(text))


def stems(text: str, *, every_word: bool = False) -> set[str]:
    """The informative words of a text (numbers included; `every_word`: stop words and short words too)
    as crude stems cut to five letters, so that "I live in Oslo" and "Ana lives in Oslo" share every
    word but the name."""
    words = _WORDS.findall(fold(text))
    if not every_word:
        words = [w for w in words if (len(w) >= 3 or w.isdigit()) and w not in STOPWORDS]
    # Stemmed twice, so that "plays" -> "play" -> "pla" meets "play" -> "pla".
    return {stem(stem(w))[:5] for w in words}


def content_words(text: str) -> set[str]:
    """The informative words of a text, folded and cut to five letters, so that "lives"/"living" or
    "Zürich"/"zurich" meet: what attribution compares between a fact and the messages behind it."""
    return {
        w[:5] for w in _WORDS.findall(fold(text)) if len(w) >= 3 and w not in STOPWORDS and not w.isdigit()
    }
