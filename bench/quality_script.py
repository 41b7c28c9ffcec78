"""Ground truth for `bench.quality`: a scripted group chat of 5 people and consolidation cases.

The chat is 150 messages in one channel, written as three 50-message phases (one busy-channel flush
each, so a later phase's changes meet the earlier phases' facts in the store). Every message that
matters carries an annotation:

- `Say`: a durable self-statement; the speaker should get a fact matching `keywords` (35 in all).
- `Change` (INVALIDATE), `Refine` (MERGE), `Also` (KEEP): a self-statement that should also replace,
  refine, or sit beside an earlier one of the same person; they count as self-statements too.
- `Repeat` (DUPLICATE): the speaker says an earlier fact again; no new fact should appear.
- `Trap`: what must not become anyone's fact: gossip about someone else, the bot's own claims (bot
  turns), questions, moods, hypotheticals and a secret. Its keywords must not appear in a fact.

The rest is chatter. Keywords are what a correct fact must contain, in any wording: a list of groups,
every group must match, and a group matches when one of its words starts a word of the fact (case and
accents folded; "child" matches "children's"). Each person's keywords are their own (cities, jobs and
names are not shared), so a fact that matches another person's statement or a trap is attributable.

`PERFECT_CASES` feed known facts and one new fact straight to the consolidation step, with the
decision a careful model makes.
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bot.memory.models import BufferedMessage, iso

SCOPE = "guild:515151"
CHANNEL = "6001"
PHASE = 50  # messages per phase = the default MEMORY_FLUSH_MAX_MESSAGES, one flush each
PEOPLE = {"5001": "Ana", "5002": "Ben", "5003": "Chloe", "5004": "Dev", "5005": "Emi"}
BOT_ID, BOT_NAME = "5999", "Memo"
ID_OF = {name: uid for uid, name in PEOPLE.items()}

Keywords = tuple[tuple[str, ...], ...]


def kw(*groups: str) -> Keywords:
    """kw("nurse", "child|paediatric") -> (("nurse",), ("child", "paediatric"))."""
    return tuple(tuple(word.strip() for word in group.split("|")) for group in groups)


@dataclass(frozen=True)
class Say:
    fact: str  # the expected fact's id, e.g. "ana.home"
    keywords: Keywords


@dataclass(frozen=True)
class Change(Say):
    replaces: str = ""  # INVALIDATE the fact with this id


@dataclass(frozen=True)
class Refine(Say):
    base: str = ""  # MERGE into the fact with this id


@dataclass(frozen=True)
class Also(Say):
    beside: str = ""  # KEEP: the fact with this id stays as it is


@dataclass(frozen=True)
class Repeat:
    of: str  # DUPLICATE of the fact with this id


@dataclass(frozen=True)
class Trap:
    kind: str  # gossip | bot | question | mood | hypothetical | secret
    keywords: Keywords
    about: str = ""  # gossip: whom it is about


Annotation = Say | Repeat | Trap


@dataclass(frozen=True)
class Line:
    speaker: str  # a name of PEOPLE, or BOT_NAME
    text: str
    note: Annotation | None = None


# ---- the chat ------------------------------------------------------------------------------------------

# Each phase: its annotated lines in order; chatter fills the phase up to PHASE messages.
PHASES: tuple[tuple[Line, ...], ...] = (
    (
        Line("Ana", "hi all! new here, I live in Porto", Say("ana.home", kw("porto"))),
        Line("Ben", "welcome Ana! I'm Ben, I work as a carpenter", Say("ben.job", kw("carpent"))),
        Line("Chloe", "hey Ana, I'm Chloe, I live in Ghent", Say("chloe.home", kw("ghent"))),
        Line("Dev", "hello! Dev here, I live in Tartu", Say("dev.home", kw("tartu"))),
        Line("Emi", "hi hi, Emi, I live in Graz", Say("emi.home", kw("graz"))),
        Line("Ana", "I work as a nurse, so my hours are all over the place", Say("ana.job", kw("nurse"))),
        Line("Chloe", "I'm so tired today, ugh", Trap("mood", kw("tired|exhaust"))),
        Line("Ben", "in the evenings I play the cello", Say("ben.instrument", kw("cello"))),
        Line("Dev", "I work as a data analyst, mostly spreadsheets", Say("dev.job", kw("analy"))),
        Line(
            "Emi",
            "I'm a sound engineer at a recording studio",
            Say("emi.job", kw("sound engineer|audio engineer|sound engineering")),
        ),
        Line(
            "Ben", "Ana told me her brother is an airline pilot", Trap("gossip", kw("pilot|airline"), "Ana")
        ),
        Line("Chloe", "I've got a cat named Miso", Say("chloe.pet", kw("miso"))),
        Line("Ana", "I have a dog called Rex", Say("ana.pet", kw("rex"))),
        Line(
            BOT_NAME,
            "I'm more of a jazz fan myself, I'd pick Coltrane any day.",
            Trap("bot", kw("coltrane|jazz")),
        ),
        Line("Dev", "has anyone here been to Iceland?", Trap("question", kw("iceland"))),
        Line("Emi", "I have a rabbit called Biscuit", Say("emi.pet", kw("biscuit"))),
        Line("Ben", "my favourite food is pierogi, no contest", Say("ben.food", kw("pierogi"))),
        Line("Chloe", "I work as a pharmacist", Say("chloe.job", kw("pharmac"))),
        Line("Dev", "I play the ukulele, badly", Say("dev.instrument", kw("ukulele"))),
        Line("Ana", "I'm learning Japanese on the side", Say("ana.language", kw("japanese"))),
        Line("Emi", "I'm learning Korean for a trip", Say("emi.language", kw("korean"))),
        Line("Ben", "I live in Oslo btw", Say("ben.home", kw("oslo"))),
        Line("Chloe", "I'm learning Finnish, it's brutal", Say("chloe.language", kw("finnish"))),
        Line("Dev", "my favourite sport is cricket", Say("dev.sport", kw("cricket"))),
        Line(
            "Ana",
            "if I won the lottery I'd buy a boat in Croatia",
            Trap("hypothetical", kw("lottery|boat|croatia")),
        ),
    ),
    (
        Line(
            "Ana",
            "to be precise, I'm a nurse in the children's ward",
            Refine("ana.job_detail", kw("nurse", "child|paediatric|pediatric"), base="ana.job"),
        ),
        Line(
            "Ben",
            "these days my favourite food is pho, I'm over pierogi",
            Change("ben.food2", kw("pho"), replaces="ben.food"),
        ),
        Line(
            "Emi",
            "my wifi password is tulip-4482, don't tell anyone",
            Trap("secret", kw("tulip|4482|password|wifi|wi-fi")),
        ),
        Line(
            "Chloe",
            "my cat Miso is a Maine Coon",
            Refine("chloe.pet_detail", kw("miso", "maine coon"), base="chloe.pet"),
        ),
        Line(
            "Dev",
            "I'm a data analyst for the city council",
            Refine("dev.job_detail", kw("analy", "council"), base="dev.job"),
        ),
        Line("Ben", "I'm in a terrible mood this morning", Trap("mood", kw("mood|terrible"))),
        Line("Ana", "Rex is my dog, by the way, the best boy", Repeat("ana.pet")),
        Line(
            "Emi",
            "I've started learning Portuguese too",
            Also("emi.language2", kw("portugu"), beside="emi.language"),
        ),
        Line("Dev", "Chloe's husband works at IKEA, I think", Trap("gossip", kw("ikea|husband"), "Chloe")),
        Line(
            "Chloe",
            "big news: I moved from Ghent to Bergen last week",
            Change("chloe.home2", kw("bergen"), replaces="chloe.home"),
        ),
        Line(
            "Ben",
            "I also started playing the drums",
            Also("ben.instrument2", kw("drum"), beside="ben.instrument"),
        ),
        Line(
            BOT_NAME,
            "Ben, since you live in Stockholm, you should visit the Vasa museum!",
            Trap("bot", kw("stockholm|vasa")),
        ),
        Line("Dev", "I live in Tartu, yes, since 2019", Repeat("dev.home")),
        Line("Ana", "I'm running a half marathon on April 12", Say("ana.marathon", kw("marathon"))),
        Line("Emi", "should I get a tattoo?", Trap("question", kw("tattoo"))),
        Line("Dev", "I'm allergic to peanuts, so no satay for me", Say("dev.allergy", kw("peanut"))),
        Line("Emi", "apparently Ben is moving to Canada next year", Trap("gossip", kw("canada"), "Ben")),
    ),
    (
        Line(
            "Ana",
            "I moved to Lyon last month, the flat is tiny",
            Change("ana.home2", kw("lyon"), replaces="ana.home"),
        ),
        Line("Ben", "still living in Oslo, yes", Repeat("ben.home")),
        Line("Dev", "maybe one day I'd live in Tokyo, who knows", Trap("hypothetical", kw("tokyo"))),
        Line("Chloe", "I'm a pharmacist, remember, I know my pills", Repeat("chloe.job")),
        Line(
            "Ben",
            "I quit carpentry, I work as a translator now",
            Change("ben.job2", kw("translat"), replaces="ben.job"),
        ),
        Line(BOT_NAME, "Emi, you mentioned you're a vegan chef, right?", Trap("bot", kw("vegan|chef"))),
        Line(
            "Emi",
            "nope! I left the studio, I work as a baker now",
            Change("emi.job2", kw("baker|bakery|baking"), replaces="emi.job"),
        ),
        Line(
            "Dev",
            "my favourite sport is badminton now, cricket is too slow",
            Change("dev.sport2", kw("badminton"), replaces="dev.sport"),
        ),
        Line(
            "Chloe",
            "I have two kids, both in primary school",
            Say("chloe.kids", kw("two kids|two children|2 kids|2 children|two sons|two daughters")),
        ),
        Line(
            "Chloe",
            "Dev is secretly a great singer, he won a karaoke contest",
            Trap("gossip", kw("karaoke|singer|singing"), "Dev"),
        ),
        Line(
            "Emi",
            "I live in Graz, in the Lend district",
            Refine("emi.home_detail", kw("graz", "lend"), base="emi.home"),
        ),
        Line("Ben", "my PIN is 7391 lol", Trap("secret", kw("7391"))),
    ),
)

# Like bench/script.py's chatter, without its lines about where or what someone else lives or works.
CHATTER = (
    "haha that's brilliant",
    "did anyone watch the match last night?",
    "what time is the call tomorrow?",
    "sounds good to me",
    "lol",
    "same here, honestly",
    "anyone up for a game tonight?",
    "that recipe looks amazing",
    "brb, coffee",
    "can someone share the link again?",
    "good morning everyone",
    "that's a fair point",
    "no way, really?",
    "thanks, that helps a lot",
    "the weather is wild today",
    "who's joining on Saturday?",
    "the new episode was so good",
    "ok, I'll check it later",
    "I think so too",
    "I'm not sure about that one",
    "did you try restarting it?",
    "that meme is ancient",
    "nice one {other}!",
    "what are you all cooking this weekend?",
    "happy Friday!",
    "{other} that's hilarious",
    "agreed with {other}",
    "wait what did I miss",
    "ok back to work",
    "lmao",
)


def script(phases: int = 3, seed: int = 11) -> list[Line]:
    """The chat: each phase's annotated lines in order at seeded positions, chatter around them."""
    rng = random.Random(seed)
    lines: list[Line] = []
    names = list(PEOPLE.values())
    for annotated in PHASES[:phases]:
        slots = sorted(rng.sample(range(PHASE), len(annotated)))
        it = iter(annotated)
        for i in range(PHASE):
            if slots and i == slots[0]:
                slots.pop(0)
                lines.append(next(it))
                continue
            speaker = rng.choice(names)
            other = rng.choice([n for n in names if n != speaker])
            lines.append(Line(speaker, rng.choice(CHATTER).format(other=other)))
    return lines


def messages(lines: list[Line], start: datetime | None = None) -> list[BufferedMessage]:
    """The chat as captured messages, 30 s apart; the bot's lines are its own turns (`is_bot`)."""
    start = start or datetime(2026, 3, 2, 18, 0, tzinfo=UTC)
    out = []
    for i, line in enumerate(lines):
        is_bot = line.speaker == BOT_NAME
        out.append(
            BufferedMessage(
                message_id=str(7_000_000 + i),
                scope=SCOPE,
                channel_id=CHANNEL,
                author_id=BOT_ID if is_bot else ID_OF[line.speaker],
                author_name=line.speaker,
                content=line.text,
                created_at=iso(start + timedelta(seconds=30 * i)),
                is_bot=is_bot,
            )
        )
    return out


# ---- matching facts to the ground truth ----------------------------------------------------------------


def fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def matches(text: str, keywords: Keywords) -> bool:
    """Every group has a word that starts a word of `text` (folded); multi-word keywords match as a phrase."""
    folded = fold(text)
    return all(any(re.search(r"\b" + re.escape(fold(word)), folded) for word in group) for group in keywords)


@dataclass
class Truth:
    """The ground truth of the lines in play."""

    statements: dict[str, tuple[str, Say]] = field(default_factory=dict)  # fact id -> (person, note)
    repeats: list[tuple[str, Repeat]] = field(default_factory=list)
    traps: list[tuple[str, Trap]] = field(default_factory=list)

    @classmethod
    def of(cls, lines: list[Line]) -> Truth:
        truth = cls()
        for line in lines:
            note = line.note
            if isinstance(note, Say):
                truth.statements[note.fact] = (line.speaker, note)
            elif isinstance(note, Repeat):
                truth.repeats.append((line.speaker, note))
            elif isinstance(note, Trap):
                truth.traps.append((line.speaker, note))
        return truth

    def replaced(self) -> dict[str, str]:
        """old fact id -> the id of the statement that replaces (INVALIDATE) or refines (MERGE) it."""
        out = {}
        for fid, (_, note) in self.statements.items():
            if isinstance(note, Change) and note.replaces in self.statements:
                out[note.replaces] = fid
            elif isinstance(note, Refine) and note.base in self.statements:
                out[note.base] = fid
        return out

    def expectations(self) -> list[dict[str, str]]:
        """The consolidation outcomes to check: kind, person, old fact id, new fact id."""
        out = []
        for fid, (person, note) in self.statements.items():
            if isinstance(note, Change) and note.replaces in self.statements:
                out.append({"kind": "INVALIDATE", "person": person, "old": note.replaces, "new": fid})
            elif isinstance(note, Refine) and note.base in self.statements:
                out.append({"kind": "MERGE", "person": person, "old": note.base, "new": fid})
            elif isinstance(note, Also) and note.beside in self.statements:
                out.append({"kind": "KEEP", "person": person, "old": note.beside, "new": fid})
        for person, note in self.repeats:
            if note.of in self.statements:
                out.append({"kind": "DUPLICATE", "person": person, "old": note.of, "new": note.of})
        return out


# ---- consolidation on perfect inputs --------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    known: tuple[str, ...]  # the person's stored facts
    new: str
    expected: str  # KEEP | MERGE | INVALIDATE | DUPLICATE (ADD counts as KEEP)
    target: int | None = None  # index into `known` for MERGE / INVALIDATE / DUPLICATE


PERFECT_CASES: tuple[Case, ...] = (
    Case(
        "Ana",
        ("Ana lives in Porto.", "Ana works as a nurse.", "Ana has a dog called Rex."),
        "Ana moved to Lyon.",
        "INVALIDATE",
        0,
    ),
    Case(
        "Ben",
        ("Ben's favourite food is pierogi.", "Ben plays the cello."),
        "Ben's favourite food is now pho.",
        "INVALIDATE",
        0,
    ),
    Case(
        "Ben",
        ("Ben works as a carpenter.", "Ben lives in Oslo."),
        "Ben works as a translator now.",
        "INVALIDATE",
        0,
    ),
    Case(
        "Dev",
        ("Dev's favourite sport is cricket.", "Dev works as a data analyst."),
        "Dev's favourite sport is badminton.",
        "INVALIDATE",
        0,
    ),
    Case(
        "Emi",
        ("Emi works as a sound engineer.", "Emi is learning Korean."),
        "Emi works as a baker now.",
        "INVALIDATE",
        0,
    ),
    Case(
        "Chloe",
        ("Chloe has a cat named Miso.", "Chloe lives in Ghent."),
        "Chloe lives in Bergen.",
        "INVALIDATE",
        1,
    ),
    Case("Gus", ("Gus is vegetarian.", "Gus plays chess."), "Gus is no longer vegetarian.", "INVALIDATE", 0),
    Case(
        "Ana",
        ("Ana lives in Porto.", "Ana works as a nurse."),
        "Ana works as a nurse in the children's ward.",
        "MERGE",
        1,
    ),
    Case("Chloe", ("Chloe has a cat named Miso.",), "Chloe's cat Miso is a Maine Coon.", "MERGE", 0),
    Case(
        "Dev",
        ("Dev works as a data analyst.", "Dev plays the ukulele."),
        "Dev works as a data analyst for the city council.",
        "MERGE",
        0,
    ),
    Case("Emi", ("Emi lives in Graz.",), "Emi lives in the Lend district of Graz.", "MERGE", 0),
    Case(
        "Hana",
        ("Hana plays the piano.", "Hana lives in Cork."),
        "Hana has played the piano for twenty years.",
        "MERGE",
        0,
    ),
    Case(
        "Ana", ("Ana has a dog called Rex.", "Ana lives in Porto."), "Ana's dog is named Rex.", "DUPLICATE", 0
    ),
    Case("Ben", ("Ben lives in Oslo.", "Ben plays the cello."), "Ben is living in Oslo.", "DUPLICATE", 0),
    Case("Chloe", ("Chloe works as a pharmacist.",), "Chloe is a pharmacist.", "DUPLICATE", 0),
    Case("Dev", ("Dev plays the ukulele.", "Dev lives in Tartu."), "Dev's home is in Tartu.", "DUPLICATE", 1),
    Case("Ben", ("Ben plays the cello.", "Ben lives in Oslo."), "Ben plays the drums.", "KEEP"),
    Case("Emi", ("Emi is learning Korean.",), "Emi is learning Portuguese.", "KEEP"),
    Case("Ana", ("Ana has a dog called Rex.",), "Ana has a cat called Luna.", "KEEP"),
    Case(
        "Dev",
        ("Dev works as a data analyst.", "Dev eats a lot of Thai food."),
        "Dev is allergic to peanuts.",
        "KEEP",
    ),
    Case(
        "Chloe", ("Chloe lives in Ghent.", "Chloe works as a pharmacist."), "Chloe has two children.", "KEEP"
    ),
)
