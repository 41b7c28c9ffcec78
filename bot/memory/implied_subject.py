"""A chat clause that leaves its speaker unsaid, given its "I": "moved to Rotterdam" -> "I moved to
Rotterdam", "vet here" -> "I'm a vet", "greetings from Accra" -> "I'm based in Accra".

People write about themselves in a channel without the subject: "live in izmir", "been playing sax since
school", "quit the trams last week, bike courier now", "architect here". Read by `clauses.own_clauses`,
such a clause has no first-person subject, so `third_person` cannot write it and the line was lost: on a
150-message chat written apart from the rules (bench/quality_script_b.py), 24 of 42 self-statements. The
forms here are English chat's own, not one script's: a past-tense or "been" clause with no subject, a
present one that starts with a verb of a person's life and a word that follows such statements (not an
imperative: "live your life", "have a good one"), an occupation with nothing else ("nurse here", "a
nurse for 6 years now"), a greeting from a place, and "we" getting or adopting something, which is the
speaker's household.
"""

from __future__ import annotations

import re

# Verbs that say a person's life changed, by base form, with their irregular past where it has one:
# their past with no subject is the speaker's news ("moved to Rotterdam", "quit the trams"). Verbs of
# what people do are not among them: "played it again yesterday" is an evening, not a fact.
_CHANGE_VERBS: dict[str, str] = {
    "move": "",
    "quit": "quit",
    "switch": "",
    "start": "",
    "leave": "left",
    "retire": "",
    "graduate": "",
    "adopt": "",
    "rescue": "",
    "buy": "bought",
    "sell": "sold",
    "join": "",
    "become": "became",
    "marry": "",
    "get": "got",
    "give": "gave",
    "take": "took",
    "pick": "",
    "begin": "began",
    "finish": "",
    "change": "",
    "enrol": "",
    "enroll": "",
    "sign": "",
    "open": "",
    "launch": "",
    "foster": "",
    "divorce": "",
    "relocate": "",
    "emigrate": "",
    "settle": "",
    "lose": "lost",
}
# Verbs of what people do: their -ing form and their present with no subject ("knitting my fourth
# sweater", "work at a bakery on weekends").
_ACTIVITY_VERBS = frozenset(
    """live work teach study play learn train practise practice run drive ride cook bake knit paint draw
    write sing dance swim climb hike cycle volunteer coach manage own rent raise collect brew code design
    restore foster tutor mentor commute garden read fish surf skate ski row box quilt sew crochet translate
    nurse farm speak build grow breed""".split()
)
_DOUBLED = frozenset("quit run swim knit begin sew".split())  # running, knitted


def _past(base: str, irregular: str) -> str:
    if irregular:
        return irregular
    if base.endswith("e"):
        return f"{base}d"
    if base.endswith("y") and base[-2] not in "aeiou":
        return f"{base[:-1]}ied"
    return f"{base}{base[-1]}ed" if base in _DOUBLED else f"{base}ed"


def _ing(base: str) -> str:
    if base in _DOUBLED:
        return f"{base}{base[-1]}ing"
    return f"{base[:-1]}ing" if base.endswith("e") and not base.endswith("ee") else f"{base}ing"


_PAST_FORMS = {_past(base, irregular): base for base, irregular in _CHANGE_VERBS.items()}
_ING_FORMS = frozenset(_ing(base) for base in _ACTIVITY_VERBS)
# What the change needs after it: "got a dog" (not "got home late"), "moved to Lyon" (not "moved the
# meeting"), "gave up knitting"; any other change verb refuses a pronoun ("started it", "sold that").
_CHANGE_NEXT = {
    "get": re.compile(r"^(?:a|an|my|our|two|three|another|engaged|married|promoted|into)\b", re.I),
    "move": re.compile(
        r"^(?:to|into|in|out|back|abroad|house|home|away|here|there|from|across|over|cities|countries)\b",
        re.I,
    ),
    "give": re.compile(r"^up\b", re.I),
    "take": re.compile(r"^up\b", re.I),
    "pick": re.compile(r"^up\b", re.I),
    "sign": re.compile(r"^up\b", re.I),
    "settle": re.compile(r"^in\b", re.I),
    "lose": re.compile(
        r"^(?:my|our)\s+(?:job|work|house|home|flat|dad|father|mum|mom|mother|\w+ job)\b", re.I
    ),
}
_PRONOUN_OBJECT = re.compile(r"^(?:it|this|that|them|him|her|those|these)\b", re.I)
# Present forms need what follows a statement, not an imperative: "live in Izmir", "work as a nurse",
# "speak three languages" (not "live your life", "read the rules", "have a good one").
_PRESENT_VERBS = frozenset("live work teach speak own rent drive ride coach volunteer tutor".split())
_PRESENT_NEXT = re.compile(
    r"^(?:in|at|as|for|on|from|with|near|by|a|an|two|three|four|five|full|part|night|nights|weekends"
    r"|remotely|english|spanish|french|german|portuguese|italian|dutch|japanese|chinese|arabic|turkish)\b",
    re.I,
)
_ADVERBS = r"(?:(?:just|finally|recently|also|still|now|already|officially|actually|only|even|then)\s+)"
_OPENING = re.compile(rf"^(?P<adverbs>{_ADVERBS}{{0,2}})(?P<verb>[a-z]+)\b(?P<rest>.*)$", re.I)
# "been playing sax since school", "been a nurse for years" (not "been there done that")
_BEEN = re.compile(
    rf"^{_ADVERBS}{{0,2}}been\s+(?:[a-z]+ing|a|an|in|at|with|part|married|together|vegan|vegetarian|sober)\b",
    re.I,
)

# A gerund that is the subject of its own verb: "dancing brings me joy", "cooking with friends is the
# best", "running can wait". Nothing of the speaker's doing is said, so nothing is written of them.
_GERUND_SUBJECT = re.compile(
    r"^(?:(?!that\b|which\b|who\b)[\w'-]+\s+){0,3}?(?:is|was|has|had|makes|made|brings|keeps|helps|gives|takes"
    r"|feels|felt|seems|sounds|gets|costs|means|can|could|will|would|should|must|might|may|does|did|isn't"
    r"|wasn't|doesn't|never|always|really|just|lets|let"
    # a verb with its object ("dancing reminds me", "singing gives us"), or a gerund and another whose verb
    # follows ("dancing and running the studio need hard work")
    r"|[a-z]+s\s+(?:me|us|you|him|her|them)|(?:and|or)\s+[a-z]+ing\b.*\b(?:need|are|were|make|keep|give|help"
    r"|take|have|can|will)"
    r")\b",
    re.I,
)
# What someone is doing at the moment, not what they do: "running on fumes today", "cooking rn".
_NOW = re.compile(
    r"\b(?:today|tonight|now|rn|right now|atm|at the moment|late|this (?:morning|afternoon|evening))\b", re.I
)
# An activity and how often: "bouldering 3x a week", "swimming every morning", "climbing on weekends".
_HOW_OFTEN = re.compile(
    r"^(?:\d+\s*(?:x|times)\s*(?:a|per|/)\s*(?:day|week|month|year)|(?:once|twice)\s+(?:a|per)\s+\w+"
    r"|every\s+(?:day|night|week|weekend|morning|evening|\w+day)|daily|weekly|on\s+(?:weekends|\w+days))\b",
    re.I,
)
_NOT_AN_ACTIVITY = frozenset(
    "morning evening nothing something anything everything thing king ring spring wedding meeting "
    "building feeling ending ceiling pudding sibling string wing".split()
)
# Occupations, for a clause that is only one (and `lasting`, for a statement of work): "vet here", "bike courier now", "firefighter for 6 yrs".
OCCUPATIONS = frozenset(
    """accountant actor actress administrator analyst animator archaeologist architect artist astronomer
    baker banker barber barista bartender biologist bookkeeper builder butcher carpenter cashier chef
    chemist cleaner coach consultant cook counsellor counselor courier dancer dentist designer detective
    developer dietitian doctor driver economist editor electrician engineer farmer firefighter fisherman
    florist gardener geologist hairdresser historian illustrator instructor interpreter janitor journalist
    judge labourer laborer lawyer lecturer librarian lifeguard linguist locksmith machinist manager
    mechanic midwife miner model musician nanny nurse nutritionist optician painter paramedic pharmacist
    photographer physicist physician physio physiotherapist pilot plumber poet policeman policewoman
    postman postwoman producer professor programmer psychologist radiographer receptionist researcher
    sailor salesman saleswoman scientist secretary singer soldier solicitor student surgeon surveyor tailor
    teacher technician therapist tiler translator tutor vet veterinarian waiter waitress welder writer
    zookeeper""".split()
)
_JOB_ONLY = re.compile(
    r"^(?P<job>(?:(?:a|an)\s+)?(?:(?!(?:the|my|your|his|her|our|their|this|that|no|not)\b)[a-z-]+\s+){0,2}?"
    r"(?P<noun>[a-z]+))"
    r"(?P<rest>\s+(?:here|now|by trade|these days|full[- ]time|part[- ]time)\b.*"
    r"|\s+(?:for|since)\s+\S.*|\s+at\s+\S.*)?$",
    re.I,
)
# A greeting from where someone is: "greetings from Accra", "hello from rainy Leeds", "here in valencia".
_FROM_PLACE = re.compile(
    r"^(?i:(?:greetings|hello|hi|hey|howdy|waving|writing|posting)\s+(?:all\s+|everyone\s+)?from"
    r"|here\s+in)\s+(?P<place>[^\W\d_][\w'’-]*(?:\s+[A-Z][\w'’-]*)?)"
)
# "we adopted a greyhound", "we got a third guinea pig": the speaker's household got it.
_HOUSEHOLD = re.compile(
    r"^we\s+((?:just\s+|finally\s+)?(?:(?:adopted|rescued|welcomed|took in)\s+(?:a|an|another|our)\b"
    r"|(?:got|bought)\s+(?:a|an|another|our)\s+(?:(?:second|third|fourth|new|little|baby|tiny|young|old)\s+)*"
    r"(?:dog|puppy|cat|kitten|guinea pig|rabbit|bunny|hamster|parrot|bird|tortoise|turtle|fish|snake|lizard"
    r"|horse|pony|chicken|hen|goat|ferret|rat|gecko|house|flat|apartment|car|baby)\b).*)$",
    re.I,
)


def with_subject(clause: str) -> str:
    """`clause` with the speaker's "I" where chat leaves it out (see the module); as it is otherwise."""
    if household := _HOUSEHOLD.match(clause):
        return f"I {household.group(1)}"
    if place := _FROM_PLACE.match(clause):
        return f"I'm based in {place.group('place')}"  # "based": where someone lives, to consolidation
    if _BEEN.match(clause):
        return f"I've {clause}"
    if opening := _OPENING.match(clause):
        verb = opening.group("verb").lower()
        rest = opening.group("rest").strip()
        if verb.endswith("ing") and _GERUND_SUBJECT.match(rest):
            return clause
        if (base := _PAST_FORMS.get(verb)) is not None:
            needed = _CHANGE_NEXT.get(base)
            if (needed.match(rest) if needed else not _PRONOUN_OBJECT.match(rest)) and rest:
                return f"I {clause}"
        if verb in _PRESENT_VERBS and not opening.group("adverbs") and _PRESENT_NEXT.match(rest):
            return f"I {clause}"
        if verb.endswith("ing") and verb not in _NOT_AN_ACTIVITY and _HOW_OFTEN.match(rest):
            return f"I do {clause}"
        if verb in _ING_FORMS and rest and not opening.group("adverbs") and not _NOW.search(rest):
            return f"I'm {clause}"
    return _occupation(clause)


def _occupation(clause: str) -> str:
    """ "vet here" -> "I'm a vet", "firefighter for 6 yrs now" -> "I've been a firefighter for 6 yrs now";
    as it is when the clause is more than an occupation."""
    job = _JOB_ONLY.match(clause)
    if job is None or job.group("noun").lower() not in OCCUPATIONS:
        return clause
    words = job.group("job")
    rest = (job.group("rest") or "").strip()
    if rest.lower().startswith("here"):  # "teacher here, 5th grade": what follows is a comment
        rest = ""
    named = words if re.match(r"(?:a|an)\s", words, re.I) else f"{_article(words)} {words}"
    if re.match(r"(?:for|since)\s", rest, re.I):
        return f"I've been {named} {rest}"
    return f"I'm {named} {rest}".strip()


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"
