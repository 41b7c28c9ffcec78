"""A second ground truth for `bench.quality` (`--script b`): another group chat, written apart from the
bot's rules, so that what the rules were tuned on (`bench/quality_script.py`, script a) is not the only
chat they are measured on.

Six people in one channel, 150 messages in three 50-message phases (one flush each), with the same
annotations and the same scoring as script a (its docstring explains them): 42 self-statements (`Say`,
with 6 `Change`, 5 `Refine` and 3 `Also` among them), 5 `Repeat`s and 26 `Trap`s. Besides script a's
trap kinds (gossip, the bot's own claims, questions, moods, hypotheticals, secrets) there are two more,
which a fact must not hold either: "joke" (hyperbole and jokes: "I'm literally dying 😂", "my
neighbour's cat is basically my landlord") and "meta" (talk about the talk: "you keep forgetting",
"I don't remember telling you that").

The lines are written as people write in a Discord channel: lowercase, emoji, a statement inside a
longer line ("long shift again, I drive a tram in the city so mondays are chaos"), a pet's name after
the pet, relative dates. No name, place, job, pet, hobby or language of script a appears here, and each
person's keywords are their own (tests/unit/test_quality_script_b.py checks both).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from bench.quality_script import (
    Also,
    Case,
    Change,
    Keywords,
    Line,
    Refine,
    Repeat,
    Say,
    Trap,
    Truth,
    fold,
    kw,
    matches,
)
from bot.memory.models import BufferedMessage, iso

__all__ = [
    "BOT_ID",
    "BOT_NAME",
    "CHANNEL",
    "CHATTER",
    "ID_OF",
    "PEOPLE",
    "PERFECT_CASES",
    "PHASE",
    "PHASES",
    "SCOPE",
    "Case",
    "Keywords",
    "Line",
    "Truth",
    "fold",
    "matches",
    "messages",
    "script",
]

SCOPE = "guild:626262"
CHANNEL = "7002"
PHASE = 50  # messages per phase = the default MEMORY_FLUSH_MAX_MESSAGES, one flush each
PEOPLE = {
    "6101": "Tomas",
    "6102": "Rhea",
    "6103": "Kofi",
    "6104": "Ingrid",
    "6105": "Yusuf",
    "6106": "Marisol",
}
BOT_ID, BOT_NAME = "6199", "Wisp"
ID_OF = {name: uid for uid, name in PEOPLE.items()}

# ---- the chat ------------------------------------------------------------------------------------------

PHASES: tuple[tuple[Line, ...], ...] = (
    (
        Line(
            "Kofi", "greetings from Accra 👋 first time in a server this big", Say("kofi.home", kw("accra"))
        ),
        Line(
            "Tomas",
            "hey all. long shift again, I drive a tram in the city so mondays are chaos",
            Say("tomas.job", kw("tram")),
        ),
        Line(
            "Rhea",
            "just got off a 24h shift at the fire station lol. firefighter for 6 yrs now and still not used to the night calls",
            Say("rhea.job", kw("firefight|fire station|fire brigade|fire fight")),
        ),
        Line(
            "Ingrid",
            "hi! vet here 🙋‍♀️ small animals mostly, sooo many angry cats",
            Say("ingrid.job", kw("vet|veterinar")),
        ),
        Line("Marisol", "hola everyone, montevideo represent 🇺🇾", Say("marisol.home", kw("montevideo"))),
        Line(
            "Yusuf",
            "merhaba! architect here, mostly school buildings, less glamorous than it sounds",
            Say("yusuf.job", kw("architect")),
        ),
        Line(
            "Tomas",
            "ugh I'm so done with today, the ticket machines broke twice",
            Trap("mood", kw("done with")),
        ),
        Line(
            "Kofi",
            "im a locksmith so yes I can open your door. no I won't 😅",
            Say("kofi.job", kw("locksmith")),
        ),
        Line("Ingrid", "aarhus checking in, wet and windy as always", Say("ingrid.home", kw("aarhus"))),
        Line(
            "Tomas",
            "we adopted a greyhound last month, his name is Pickle, he's scared of the hoover",
            Say("tomas.pet", kw("pickle")),
        ),
        Line(
            "Rhea",
            "here in valencia it's already 28 degrees in march, living here is a cheat code ☀️",
            Say("rhea.home", kw("valencia")),
        ),
        Line(
            "Marisol",
            "i'm a marine biologist, currently counting sea urchins for a living lol",
            Say("marisol.job", kw("marine")),
        ),
        Line(
            BOT_NAME,
            "Honestly the best ramen I've ever had was at a tiny place by the harbour, I'd go back every Friday.",
            Trap("bot", kw("ramen|harbour|harbor")),
        ),
        Line(
            "Yusuf",
            "live in izmir, the sea is like a 5 min walk from my flat",
            Say("yusuf.home", kw("izmir")),
        ),
        Line(
            "Ingrid", "does anyone know a decent dentist? mine just retired", Trap("question", kw("dentist"))
        ),
        Line(
            "Kofi",
            "been playing saxophone since secondary school, the neighbours have suffered for years",
            Say("kofi.instrument", kw("sax")),
        ),
        Line(
            "Rhea",
            "my parrot Mango learned to whistle my ringtone and now I check my messages for no reason",
            Say("rhea.pet", kw("mango")),
        ),
        Line(
            "Marisol",
            "Kofi told me his cousin runs a surf school, so jealous",
            Trap("gossip", kw("surf|cousin"), "Kofi"),
        ),
        Line(
            "Ingrid",
            "I have two guinea pigs, Salt and Pepper, they scream for lettuce every single morning",
            Say("ingrid.pet", kw("salt|pepper")),
        ),
        Line(
            "Yusuf",
            "my tortoise Sultan is 41 years old, he's literally older than me and has seen things",
            Say("yusuf.pet", kw("sultan")),
        ),
        Line("Kofi", "lmaooo I'm literally dying 😂😂", Trap("joke", kw("dying"))),
        Line(
            "Marisol",
            "my ferret Waffles stole my sock again, third one this week",
            Say("marisol.pet", kw("waffle")),
        ),
        Line(
            "Yusuf",
            "I go birdwatching every sunday morning, saw a flamingo last week!!",
            Say("yusuf.hobby", kw("bird")),
        ),
        Line(
            "Yusuf",
            "I speak swahili too btw, long story, my mum insisted",
            Say("yusuf.language", kw("swahili")),
        ),
        Line(
            "Kofi",
            "started dutch on duolingo, the g sound is destroying my throat",
            Say("kofi.language", kw("dutch")),
        ),
        Line(
            "Ingrid",
            "if I ever quit I'd open a tiny bookshop somewhere by the sea",
            Trap("hypothetical", kw("bookshop|bookstore|book shop")),
        ),
        Line(
            "Marisol",
            "i'm lactose intolerant so the cheese board is all yours Tomas",
            Say("marisol.diet", kw("lactose")),
        ),
        Line(
            "Yusuf",
            "my neighbour's cat is basically my landlord at this point, it owns my balcony 😂",
            Trap("joke", kw("landlord|balcony")),
        ),
        Line(
            BOT_NAME,
            "Marisol, octopuses are my favourite animal, I could talk about them all day!",
            Trap("bot", kw("octopus")),
        ),
        Line(
            "Rhea",
            "wait did I already tell you guys this? I feel like I repeat myself every day",
            Trap("meta", kw("repeat")),
        ),
        Line(
            "Yusuf",
            "office wifi is kumsal-2291 if anyone drops by the studio",
            Trap("secret", kw("kumsal|2291|wifi|wi-fi|password")),
        ),
    ),
    (
        Line(
            "Tomas",
            "yesterday I started a pottery class, my first bowl looks like a hat",
            Say("tomas.hobby", kw("potter")),
        ),
        Line(
            "Kofi",
            "update: moved to Rotterdam two weeks ago, left Accra behind, the wind here is personal",
            Change("kofi.home2", kw("rotterdam"), replaces="kofi.home"),
        ),
        Line(
            "Ingrid",
            "to be specific I'm a vet at an emergency clinic, nights mostly, hence the zombie mode",
            Refine("ingrid.job_detail", kw("vet|veterinar", "emergenc"), base="ingrid.job"),
        ),
        Line(
            "Rhea",
            "bouldering 3x a week, my fingertips are wrecked but I'm hooked",
            Say("rhea.sport", kw("boulder")),
        ),
        Line(
            "Yusuf",
            "apparently Ingrid is getting married in june 👀",
            Trap("gossip", kw("married|marry|wedding|engaged"), "Ingrid"),
        ),
        Line(
            "Marisol",
            "Waffles (the ferret) is asleep in the laundry basket again, he has no shame",
            Repeat("marisol.pet"),
        ),
        Line(
            BOT_NAME,
            "Tomas, since you live in Dresden, you have to try the Stollen at the Christmas market!",
            Trap("bot", kw("dresden|stollen")),
        ),
        Line("Ingrid", "as I said I'm in aarhus, raining sideways today", Repeat("ingrid.home")),
        Line(
            "Kofi",
            "who here has been to Marrakech? thinking about going in may",
            Trap("question", kw("marrakech|marrakesh|morocc")),
        ),
        Line(
            "Yusuf",
            "I live in Alsancak actually, the old part of izmir by the seafront",
            Refine("yusuf.home_detail", kw("izmir", "alsancak"), base="yusuf.home"),
        ),
        Line(
            "Tomas",
            "I'm colourblind, so don't ask me if this shirt is green or brown",
            Say(
                "tomas.colourblind",
                kw("colorblind|colourblind|colour blind|color blind|colour-blind|color-blind"),
            ),
        ),
        Line("Ingrid", "running on fumes today, three surgeries back to back 😵", Trap("mood", kw("fumes"))),
        Line(
            "Kofi",
            "tenor sax specifically, alto is for people with patience",
            Refine("kofi.instrument_detail", kw("sax", "tenor"), base="kofi.instrument"),
        ),
        Line(
            "Marisol",
            "I play water polo on thursdays, it's basically drowning with extra steps",
            Say("marisol.sport", kw("water polo|polo")),
        ),
        Line(
            "Rhea",
            "Mango is an african grey btw, he's smarter than half my coworkers",
            Refine("rhea.pet_detail", kw("mango", "grey|african"), base="rhea.pet"),
        ),
        Line(
            "Yusuf",
            "I also picked up some arabic, a colleague gives me lessons at lunch",
            Also("yusuf.language2", kw("arabic"), beside="yusuf.language"),
        ),
        Line("Kofi", "Wisp you keep forgetting stuff I tell you smh", Trap("meta", kw("forget|forgot"))),
        Line(
            "Ingrid",
            "we got a third guinea pig, a little ginger one called Nutmeg 🥹",
            Also("ingrid.pet2", kw("nutmeg"), beside="ingrid.pet"),
        ),
        Line(
            "Marisol",
            "if I had a free year I'd sail to antarctica, zero hesitation",
            Trap("hypothetical", kw("antarctic|sail")),
        ),
        Line(
            "Ingrid",
            "knitting my fourth sweater this winter, it's an addiction",
            Say("ingrid.hobby", kw("knit")),
        ),
        Line(
            "Marisol", "I have a twin brother, he's the boring one obviously", Say("marisol.twin", kw("twin"))
        ),
        Line(
            "Kofi",
            "the workshop door code is 41779#, don't spread it around",
            Trap("secret", kw("41779|door code")),
        ),
        Line(
            "Ingrid",
            "my coffee machine has a better social life than me",
            Trap("joke", kw("coffee machine|social life")),
        ),
    ),
    (
        Line(
            "Tomas",
            "quit the trams last week, bike courier now. different kind of chaos",
            Change("tomas.job2", kw("courier"), replaces="tomas.job"),
        ),
        Line(
            "Rhea",
            "big news, I transferred to the station in Bilbao, moved out of valencia on sunday",
            Change("rhea.home2", kw("bilbao"), replaces="rhea.home"),
        ),
        Line("Kofi", "dutch lessons still going strong, dank je wel everyone", Repeat("kofi.language")),
        Line(
            BOT_NAME,
            "Yusuf, weren't you a surveyor in Ankara before all this?",
            Trap("bot", kw("surveyor|ankara")),
        ),
        Line(
            "Ingrid",
            "finally gave up on knitting, switched to crochet, don't tell the knitting group",
            Change("ingrid.hobby2", kw("crochet"), replaces="ingrid.hobby"),
        ),
        Line(
            "Tomas",
            "Rhea's brother plays poker professionally, that's wild to me",
            Trap("gossip", kw("poker"), "Rhea"),
        ),
        Line(
            "Marisol",
            "left the institute in december, I teach science at a high school now, teenagers are scarier than sharks",
            Change("marisol.job2", kw("teach"), replaces="marisol.job"),
        ),
        Line("Yusuf", "anyone tried a standing desk? worth it?", Trap("question", kw("standing desk|desk"))),
        Line(
            "Rhea", "still at the bouldering gym 3 times a week, nothing changed there", Repeat("rhea.sport")
        ),
        Line(
            "Tomas",
            "the pottery class is wheel throwing btw, tuesdays at the community studio",
            Refine("tomas.hobby_detail", kw("potter", "wheel"), base="tomas.hobby"),
        ),
        Line(
            "Yusuf",
            "I quit birdwatching, too many 5am alarms. it's stargazing now, way better hours",
            Change("yusuf.hobby2", kw("stargaz|star gaz|astronom|telescope"), replaces="yusuf.hobby"),
        ),
        Line(
            BOT_NAME,
            "Ingrid, you told me you grew up on a farm, right?",
            Trap("bot", kw("farm")),
        ),
        Line(
            "Marisol",
            "so anxious about tomorrow's parents evening, can't sleep",
            Trap("mood", kw("anxious|anxiety|nervous")),
        ),
        Line(
            "Ingrid",
            "I don't remember telling you that, where did you get it from?",
            Trap("meta", kw("remember")),
        ),
        Line(
            "Kofi",
            "maybe in another life I'd be a racing driver, who knows",
            Trap("hypothetical", kw("racing|race")),
        ),
        Line("Tomas", "Pickle says hi 🐕 greyhounds really do sleep 18 hours a day", Repeat("tomas.pet")),
        Line(
            "Marisol",
            "I also started freediving on weekends, got to 12 metres last sunday",
            Also("marisol.sport2", kw("freediv|free div|free-div"), beside="marisol.sport"),
        ),
        Line(
            "Rhea",
            "I'm left-handed, which is why my handwriting looks like that",
            Say("rhea.hand", kw("left-hand|left hand|lefthand|lefty")),
        ),
        Line(
            "Tomas", "my legs have officially filed for divorce after today 😂", Trap("joke", kw("divorce"))
        ),
    ),
)

# Neutral lines: no statement about anyone, no preference a model could take for a fact.
CHATTER = (
    "lol same",
    "ok that's actually cursed",
    "😂😂😂",
    "wait which thread was that in",
    "gm gm ☕",
    "did the stream start yet?",
    "brb dinner",
    "can someone pin that link pls",
    "{other} you're a legend",
    "nah that's fair",
    "hahaha {other} stop",
    "anyone else's internet super slow today?",
    "the new patch notes are out",
    "gn everyone 🌙",
    "who's hosting the quiz on friday?",
    "bruh",
    "that trailer looked sick",
    "I'll check after lunch",
    "yesss",
    "oof",
    "{other} send the link!!",
    "is the voice channel open?",
    "ty {other}!",
    "big if true",
    "can't believe it's the weekend already",
    "sorry, was afk",
    "{other} did you see the news?",
    "real",
    "ok who broke the bot this time",
    "fair enough {other}",
)

# Who talks between the statements, and how much: some people fill a channel, some hardly speak.
CHATTINESS = {"Tomas": 3, "Rhea": 4, "Kofi": 4, "Ingrid": 2, "Yusuf": 2, "Marisol": 3}


def script(phases: int = 3, seed: int = 23) -> list[Line]:
    """The chat: each phase's annotated lines in order at seeded positions; chatter around them from
    speakers drawn by how chatty they are, often answering the line before (its speaker as `{other}`)."""
    rng = random.Random(seed)
    lines: list[Line] = []
    names = list(PEOPLE.values())
    weights = [CHATTINESS[name] for name in names]
    for annotated in PHASES[:phases]:
        assert len(annotated) <= PHASE, "a phase holds at most PHASE messages"
        slots = set(rng.sample(range(PHASE), len(annotated)))
        it = iter(annotated)
        for i in range(PHASE):
            if i in slots:
                lines.append(next(it))
                continue
            speaker = rng.choices(names, weights)[0]
            before = lines[-1].speaker if lines else ""
            if before in ID_OF and before != speaker and rng.random() < 0.6:
                other = before
            else:
                other = rng.choice([n for n in names if n != speaker])
            lines.append(Line(speaker, rng.choice(CHATTER).format(other=other)))
    return lines


def messages(lines: list[Line], start: datetime | None = None) -> list[BufferedMessage]:
    """The chat as captured messages, 45 s apart; the bot's lines are its own turns (`is_bot`)."""
    start = start or datetime(2026, 3, 9, 20, 30, tzinfo=UTC)
    out = []
    for i, line in enumerate(lines):
        is_bot = line.speaker == BOT_NAME
        out.append(
            BufferedMessage(
                message_id=str(8_100_000 + i),
                scope=SCOPE,
                channel_id=CHANNEL,
                author_id=BOT_ID if is_bot else ID_OF[line.speaker],
                author_name=line.speaker,
                content=line.text,
                created_at=iso(start + timedelta(seconds=45 * i)),
                is_bot=is_bot,
            )
        )
    return out


# ---- consolidation on perfect inputs --------------------------------------------------------------------

PERFECT_CASES: tuple[Case, ...] = (
    Case(
        "Kofi",
        ("Kofi lives in Accra.", "Kofi works as a locksmith.", "Kofi plays the saxophone."),
        "Kofi moved to Rotterdam.",
        "INVALIDATE",
        0,
    ),
    Case(
        "Tomas",
        ("Tomas has a greyhound named Pickle.", "Tomas drives a tram."),
        "Tomas works as a bike courier now.",
        "INVALIDATE",
        1,
    ),
    Case(
        "Ingrid",
        ("Ingrid knits sweaters.", "Ingrid lives in Aarhus."),
        "Ingrid gave up knitting and crochets instead.",
        "INVALIDATE",
        0,
    ),
    Case(
        "Yusuf",
        ("Yusuf goes birdwatching on Sundays.", "Yusuf speaks Swahili."),
        "Yusuf quit birdwatching and took up stargazing.",
        "INVALIDATE",
        0,
    ),
    Case(
        "Marisol",
        ("Marisol is lactose intolerant.", "Marisol works as a marine biologist."),
        "Marisol teaches science at a high school now.",
        "INVALIDATE",
        1,
    ),
    Case(
        "Rhea",
        ("Rhea lives in Valencia.", "Rhea is a firefighter."),
        "Rhea lives in Bilbao now.",
        "INVALIDATE",
        0,
    ),
    Case(
        "Oskar",
        ("Oskar doesn't drink alcohol.", "Oskar runs a bike shop."),
        "Oskar sold his bike shop.",
        "INVALIDATE",
        1,
    ),
    Case(
        "Ingrid",
        ("Ingrid is a vet.", "Ingrid has two guinea pigs."),
        "Ingrid is a vet at an emergency clinic.",
        "MERGE",
        0,
    ),
    Case(
        "Kofi",
        ("Kofi lives in Rotterdam.", "Kofi plays the saxophone."),
        "Kofi plays the tenor saxophone.",
        "MERGE",
        1,
    ),
    Case("Rhea", ("Rhea has a parrot named Mango.",), "Rhea's parrot Mango is an African grey.", "MERGE", 0),
    Case(
        "Yusuf",
        ("Yusuf works as an architect.", "Yusuf lives in Izmir."),
        "Yusuf lives in the Alsancak district of Izmir.",
        "MERGE",
        1,
    ),
    Case(
        "Priya",
        ("Priya speaks Tamil.", "Priya runs every morning."),
        "Priya speaks Tamil with her grandparents every weekend.",
        "MERGE",
        0,
    ),
    Case(
        "Marisol",
        ("Marisol has a ferret named Waffles.", "Marisol lives in Montevideo."),
        "Marisol's ferret is called Waffles.",
        "DUPLICATE",
        0,
    ),
    Case(
        "Rhea",
        ("Rhea works as a firefighter.", "Rhea goes bouldering three times a week."),
        "Rhea boulders three times a week.",
        "DUPLICATE",
        1,
    ),
    Case("Ingrid", ("Ingrid lives in Aarhus.",), "Ingrid is based in Aarhus.", "DUPLICATE", 0),
    Case(
        "Tomas",
        ("Tomas is colourblind.", "Tomas has a greyhound named Pickle."),
        "Tomas's greyhound is called Pickle.",
        "DUPLICATE",
        1,
    ),
    Case(
        "Yusuf",
        ("Yusuf speaks Swahili.", "Yusuf has a tortoise named Sultan."),
        "Yusuf is learning Arabic.",
        "KEEP",
    ),
    Case(
        "Ingrid",
        ("Ingrid has two guinea pigs named Salt and Pepper.",),
        "Ingrid has a guinea pig named Nutmeg.",
        "KEEP",
    ),
    Case(
        "Marisol",
        ("Marisol plays water polo.", "Marisol is lactose intolerant."),
        "Marisol goes freediving.",
        "KEEP",
    ),
    Case(
        "Tomas", ("Tomas drives a tram.", "Tomas is colourblind."), "Tomas is taking a pottery class.", "KEEP"
    ),
    Case("Oskar", ("Oskar runs a bike shop.",), "Oskar has a daughter.", "KEEP"),
)
