"""Whether a message asks about a person in general ("what do you know about Carol?", "parle-moi de
Carol"), so that recall lists that person's newest facts instead of searching for the message's words.

A general question about someone has no subject of its own: once the person's name is taken out, what
is left are words any such question is made of (stop words, words of asking: know, tell, remember,
anything; sais, dime, erzähl, dimmi ...). One word of content ("Carol's favourite soup", "where does
Carol live") makes it a question about that, and recall stays led by the message. A language whose
asking words are not listed here falls back to that, the safe side: the message-led search.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bot.memory.text import STOPWORDS, folded_words, stem

# Words of asking about someone, folded (no accents), in the languages the chat models answer in most.
ASKING_WORDS = frozenset(
    # English
    "know knew known tell told remember recall anything everything something say said talk info information "
    "please hey bot thing things stuff else lately details give share describe summary summarize summarise "
    "facts memory memories whats "
    # French
    "que quoi qui sais savez savoir connais connaissez dis dites dire parle parlez parler raconte racontez "
    "moi nous sur tout quelque chose choses rappelles rappelez souviens souvenez peux pouvez "
    # German
    "was wer weisst weißt wisst wissen kennst kennt erzahl erzahle erzahlt sag sage sagt sagen uber alles "
    "etwas mir uns von kannst bitte "
    # Spanish
    "sabes sabe saben dime dinos cuentame cuentanos hablame hablanos sobre todo algo quien recuerdas "
    "acuerdas conoces puedes decir "
    # Portuguese
    "voce sabe fale fala conte conta diga diz tudo quem lembra lembras conhece pode "
    # Italian
    "cosa che sai sapete dimmi dicci parlami raccontami tutto qualcosa chi ricordi conosci puoi "
    # Dutch
    "wat weet vertel iets wie".split()
)
_ASKING_STEMS = frozenset(stem(w) for w in ASKING_WORDS)


def naming_words(name: str) -> set[str]:
    """The words of a name that can tell a person in a message (not "the", not a single letter)."""
    return {w for w in folded_words(name) if len(w) >= 2 and w not in STOPWORDS and w not in ASKING_WORDS}


def has_content(text: str, names: Iterable[str]) -> bool:
    """Whether `text` asks something of its own once `names` (folded words) are set aside: a word of 3
    letters or more that is neither a stop word nor a word of asking, or a number."""
    skip = set(names)
    for word in folded_words(text):
        if word in skip or word in STOPWORDS:
            continue
        if word.isdigit() or (len(word) >= 3 and stem(word) not in _ASKING_STEMS):
            return True
    return False


def asked_about(text: str, people: Mapping[str, str]) -> list[str]:
    """The people (user id -> name) a message asks about in general, in `people`'s order; none when it
    names no one of them or asks something more."""
    said = folded_words(text)
    keys = {uid: naming_words(name) | {uid} for uid, name in people.items()}  # the id: a raw <@mention>
    named = [uid for uid, k in keys.items() if k & said]
    if not named or has_content(text, set().union(*(keys[uid] for uid in named))):
        return []
    return named


def asks_in_general(query: str, name: str) -> bool:
    """Whether a lookup of one person (search_memory's `query`) asks for nothing in particular: empty,
    or only their name and words of asking ("everything about Bob", "anything")."""
    return not has_content(query, naming_words(name))
