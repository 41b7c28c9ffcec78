"""The shared-memory floor: what no channel is shown, whatever a model marked.

The sentences are written as people (or a model summing up a channel) would put them, not from the
rule's word lists: absent members named only by name or pronoun, possessives, slang, "apparently",
reported speech, a few in other languages.
"""

from __future__ import annotations

import pytest

from bot.memory.shared_floor import private_detail


def case(category: str, text: str, id: str) -> object:
    return pytest.param(text, category, id=f"{category.replace(' ', '-')}-{id}")


# About an absent member, named only by a name that is not in `names`, or by a pronoun.
REFUSED = [
    # health
    case("health", "Jonah's been back on the antidepressants since March", "antidepressants"),
    case("health", "apparently Tess had a seizure at work and spent the night in A&E", "seizure"),
    case("health", "Dev mentioned his sister is going through IVF again", "ivf"),
    case("health", "she said she's on 50mg of sertraline now", "dose"),
    case("health", "Ravi is four months sober and goes to meetings every Tuesday", "sober"),
    case("health", "Marguerite got diagnosed with long covid over the summer", "diagnosed"),
    case("health", "Bex is off work with a slipped disc", "slipped-disc"),
    case("health", "heard Callum's mum is having chemo", "chemo"),
    case("health", "Femi told everyone he was sectioned last year", "sectioned"),
    case("health", "he's been struggling with bulimia for years", "bulimia"),
    case("health", "Noor uses a wheelchair most days", "wheelchair"),
    case("health", "Ines está embarazada de gemelos", "spanish"),
    # address
    case("address", "you can drop the box at Kemi's place, 27 Larch Crescent flat 2", "crescent"),
    case("address", "Tobi moved to 9 Harbour View, Leith", "view"),
    case("address", "her new flat is above the bakery on 112 Mill Lane", "lane"),
    case("address", "Sandeep lives at 4b Quarry Rise, LS6 2QT", "postcode"),
    case("address", "send it to Aisha: 1450 Oak Street, Springfield, IL 62704", "zip"),
    case("address", "Lukas wohnt jetzt in der Bergmannstraße 12", "german"),
    case("address", "Matteo's parents live on Via Roma 14", "via"),
    case("address", "his address is 3 Chapel Row, Bath BA1 1HE", "his-address"),
    # contact
    case("contact", "Zainab's number is 07911 123456", "uk-mobile"),
    case("contact", "if you need Priyanka, her email is priyanka.r@protonmail.com", "email"),
    case("contact", "Oscar said to add him on snap, he's oscar.g99", "snap"),
    case("contact", "text Wren on +44 7700 900 461 if you're running late", "intl"),
    case("contact", "his insta is @lewis_lifts", "insta"),
    case("contact", "Hana gave out her WhatsApp, it's 555-204-8812", "whatsapp"),
    case("contact", "reach Mo at mo.hassan@gmail.com", "reach"),
    case("contact", "Ade's personal mobile: (020) 7946 0958", "brackets"),
    # finances
    case("finances", "Priya earns about 52k at the agency", "earns"),
    case("finances", "he owes the taxman nearly £3,000", "owes"),
    case("finances", "Connor's drowning in credit card debt", "debt"),
    case("finances", "apparently Yusuf got a payday loan to cover rent", "payday"),
    case("finances", "Leila's on 38 grand a year now", "grand"),
    case("finances", "Gabe filed for bankruptcy last spring", "bankruptcy"),
    case("finances", "she's behind on her mortgage payments", "mortgage"),
    case("finances", "Marek lost two grand on the horses", "words"),
    case("finances", "Kit's rent went up to £1,150", "rent"),
    # sexuality
    case("sexuality", "Rory came out as bi to his parents at Christmas", "came-out"),
    case("sexuality", "apparently Jess is gay, she told Sam last week", "gay"),
    case("sexuality", "Elif has a girlfriend now, she's a lesbian", "lesbian"),
    case("sexuality", "Theo is trans and started transitioning in 2022", "trans"),
    case("sexuality", "Ayo identifies as asexual", "asexual"),
    case("sexuality", "he's pansexual btw", "pansexual"),
    case("sexuality", "Nico ist schwul", "german"),
    # belief
    case("belief", "Hamza fasts for Ramadan so he raids after sunset that month", "ramadan"),
    case("belief", "Grace converted to Catholicism before her wedding", "converted"),
    case("belief", "he's a devout Muslim", "muslim"),
    case("belief", "Ollie goes to Mass every Sunday with his nan", "mass"),
    case("belief", "Shira keeps kosher", "kosher"),
    case("belief", "she stopped believing in God after uni", "god"),
    case("belief", "Declan's an atheist and loves arguing about it", "atheist"),
    case("belief", "Sunita visits the gurdwara on weekends", "gurdwara"),
    # politics
    case("politics", "Harriet voted Reform at the last election", "voted-party"),
    case("politics", "Bram is a paid-up Labour Party member", "member"),
    case("politics", "apparently Seb's a hardcore Trump supporter", "supporter"),
    case("politics", "she canvassed for the Greens before the council elections", "canvassed"),
    case("politics", "Kofi's pretty far-left politically", "far-left"),
    case("politics", "he's a Tory through and through", "tory"),
    # ethnicity
    case("ethnicity", "Dani is half Japanese on her mum's side", "half"),
    case("ethnicity", "Ruth's family are Romani", "romani"),
    case("ethnicity", "Tariq is of Pakistani descent", "descent"),
    case("ethnicity", "he mentioned being mixed race", "mixed"),
    case("ethnicity", "Lin gets asked about her ethnicity all the time", "ethnicity"),
    case("ethnicity", "Chidi's Igbo, his family is from Enugu", "igbo"),
    case("ethnicity", "she's Latina", "latina"),
    # union
    case("union", "Morag is the Unite rep at her hospital", "unite"),
    case("union", "Jamal joined the teachers' union last year", "joined"),
    case("union", "she's been on strike with the RMT since Monday", "strike"),
    case("union", "Callie's a shop steward at the warehouse", "steward"),
    case("union", "Piet is in the union at work", "in-the-union"),
    case("union", "he pays his union dues by direct debit", "dues"),
    # criminal record
    case("criminal record", "Lewis did eighteen months inside for burglary", "inside"),
    case("criminal record", "apparently Fern got arrested at the protest", "arrested"),
    case("criminal record", "Sol's on probation until 2026", "probation"),
    case("criminal record", "he has a conviction for drink driving", "conviction"),
    case("criminal record", "Orla was charged with assault last year", "charged"),
    case("criminal record", "Vik spent a night in the cells after the match", "cells"),
    case("criminal record", "she's out on parole", "parole"),
    # A second batch, written after the first was run.
    case("health", "Saoirse's back on insulin after her levels went haywire", "insulin"),
    case("health", "Word is Malik had a breakdown and is signed off for a month", "breakdown"),
    case("health", "Yara told the mods she's got endometriosis, so she might miss raids", "condition"),
    case("health", "he had his appendix out on Tuesday", "appendix"),
    case("health", "Bruno is partially sighted so keep the overlays big", "sight"),
    case("health", "Tamsin's kid was born premature and is still in the NICU", "nicu"),
    case("health", "Oisín relapsed over the holidays, apparently", "accented-name"),
    case("health", "she takes Ritalin twice a day for her ADHD", "ritalin"),
    case("address", "Zeke's new place is 58 Cranbrook Avenue, second floor", "avenue"),
    case("address", "Parcel for Ana goes to Flat 11, Kestrel House, Mill Road", "flat"),
    case("address", "apparently Joss lives at the end of Sutton Close, number 6", "lives-at"),
    case("address", "she gave her address as 21 Rue des Lilas, 75020 Paris", "rue"),
    case("contact", "Imogen's landline is 01632 960 983", "landline"),
    case("contact", "hit Rafa up on Telegram, @rafa_draws", "telegram"),
    case("contact", "his work email is d.okafor@brightlane.co.uk", "work-email"),
    case("contact", "Kai said his cell is 212 555 0147", "us-cell"),
    case("finances", "Fatima says she's £20k in student debt", "student-debt"),
    case("finances", "Ezra is skint until payday", "skint"),
    case("finances", "Lottie borrowed 500 quid off her nan for the deposit", "borrowed"),
    case("finances", "he got his house repossessed last year", "repossessed"),
    case("finances", "apparently Nadia makes six figures at the bank", "six-figures"),
    case("sexuality", "Ben and his boyfriend are moving in together, he came out last year", "came-out-bare"),
    case("sexuality", "Jude's nonbinary and uses they/them", "nonbinary"),
    case("sexuality", "she only dates women", "dates-women"),
    case("belief", "Mateus is Evangelical and doesn't play on Sundays", "evangelical"),
    case("belief", "Esther's family are Orthodox Jewish", "jewish"),
    case("belief", "he goes to Friday prayers at the mosque", "prayers"),
    case("belief", "Priti is a practising Hindu", "hindu"),
    case("politics", "Harvey's a card-carrying Lib Dem", "lib-dem"),
    case("politics", "she votes Conservative every time", "votes-party"),
    case("politics", "apparently Gerrit is a massive Corbyn fan", "politician-fan"),
    case("ethnicity", "Keisha is Black British, her grandparents came from Jamaica", "black-british"),
    case("ethnicity", "Amir's Kurdish", "kurdish"),
    case("ethnicity", "he's Aboriginal Australian", "aboriginal"),
    case("ethnicity", "Mei's parents are Han Chinese", "han"),
    case("union", "Gwen's the GMB rep at the depot", "gmb"),
    case("union", "Tomasz is organising a union at the Amazon warehouse", "organising"),
    case("union", "he's been a Unison member for ten years", "unison"),
    case("union", "Becca's walking the picket line tomorrow", "picket"),
    case("criminal record", "Hugo got done for drink-driving and lost his licence", "drink-driving"),
    case("criminal record", "Shay's got a record, he did time in his twenties", "did-time"),
    case("criminal record", "apparently Ricky was banged up for six months", "banged-up"),
    case("criminal record", "she's due in court next week for the fight", "court"),
]


@pytest.mark.parametrize(("text", "category"), REFUSED)
def test_a_person_tied_to_a_private_detail_is_refused(text: str, category: str) -> None:
    assert private_detail(text) == category


# Refused with or without a person: a secret points at nothing but is never shown.
SECRETS = [
    pytest.param("the wifi key for the venue is Bl4ckbird!!", id="wifi-key"),
    pytest.param("Minecraft whitelist phrase this season: creeper-pie", id="whitelist-phrase"),
    pytest.param("door code for the clubhouse is 4471#", id="door-code"),
    pytest.param("bot API token: MTA0NjQ1.Gx3kLp.a9fQ2wZr7Tt0", id="api-token"),
    pytest.param("the shared Spotify account signs in with ourclub / Tulip-42", id="sign-in"),
    pytest.param("the lockbox by the back door opens with 1987", id="lockbox"),
    pytest.param("rcon pass is cr33per", id="rcon"),
    pytest.param("Sam's bank PIN is 0412", id="pin"),
    pytest.param("the magic word to get into the vault channel is 'marmalade'", id="magic-word"),
    pytest.param("network key at the lan party: frag-em-2024", id="network-key"),
    pytest.param("alarm code at the hall is 2580", id="alarm-code"),
    pytest.param("the join phrase for the SMP is 'golden carrot'", id="join-phrase"),
    pytest.param(
        "bot's discord token is in the .env: NzkyNzE1NDU0MTk2MDg4ODQy.X-hvzA.Ovy4MCQywSkoMRRclStW4xAYK7I",
        id="discord-token",
    ),
    pytest.param("spare key to the studio is under the plant pot", id="hidden-key"),
]


@pytest.mark.parametrize("text", SECRETS)
def test_a_secret_is_refused_tied_or_not(text: str) -> None:
    assert private_detail(text) == "secret"


# Community facts and episode points a server needs, several with a category's word but nobody tied.
SHARED = [
    pytest.param("The raid team voted to move raids to Thursday", id="voted-to-move"),
    pytest.param("The charity stream raised £400 for the food bank", id="charity-amount"),
    pytest.param("PIN the announcement about the new rules", id="pin-verb"),
    pytest.param("Mods will pin the event schedule on Monday", id="pin-verb-after"),
    pytest.param("The server has a #mental-health support channel", id="mental-health-channel"),
    pytest.param("Voting for the new logo closes Friday", id="logo-vote"),
    pytest.param("The book club reads a novel about prison life this month", id="prison-novel"),
    pytest.param("Server rules: no doxxing, no slurs, no NSFW outside #after-dark", id="rules"),
    pytest.param("The Minecraft server IP is 51.77.12.8:25565", id="server-ip"),
    pytest.param("Movie night is every other Saturday at 8pm UK time", id="movie-night"),
    pytest.param("The meetup is at The Crown, 14 High Street, from 7", id="venue-address"),
    pytest.param("Mod applications are open until the end of the month", id="applications"),
    pytest.param("Contact the mod team at mods@example.org for appeals", id="role-mailbox"),
    pytest.param("Entry to the tournament is £5, prizes go to the top three", id="entry-fee"),
    pytest.param("The debate club meets Wednesdays to argue about politics", id="debate-club"),
    pytest.param("The church hall on Elm Road is booked for the Christmas party", id="church-hall"),
    pytest.param("Therapy dogs are visiting the campus hub on Friday", id="therapy-dogs"),
    pytest.param("Pride month events run all June in #events", id="pride-month"),
    pytest.param("Keys for the giveaway go out on Friday", id="giveaway-keys"),
    pytest.param("The key takeaway from the town hall: raids start at 9", id="key-takeaway"),
    pytest.param("The Nitro boost costs £9.99 a month, paid from the server fund", id="server-costs"),
    pytest.param("The stream schedule is pinned in #announcements", id="pinned"),
    pytest.param("Election of new mods happens every six months", id="mod-election"),
    pytest.param(
        "Rules at https://example.org/rules, wiki at https://wiki.example.org/2024/05/12", id="links"
    ),
    pytest.param("The Halloween event raised 1200 coins for the guild bank", id="coins"),
    pytest.param("The server turns five on 14 March, party in voice at 20:00", id="birthday"),
    pytest.param("Season 3 of the tournament runs 2024-05-12 to 2024-06-30", id="dates"),
    pytest.param("The cancer research charity stream is on the 12th", id="charity-cause"),
    pytest.param("Reminder: the debt of honour quest line resets Monday", id="quest-name"),
    pytest.param("The union of the two guilds was approved", id="guild-union"),
    pytest.param("Pride flags are allowed in profile pictures", id="pride-flags"),
    pytest.param("The prison map is back in rotation on the Minecraft server", id="prison-map"),
    pytest.param("Sign-ups for the winter tournament close on 3 December", id="sign-ups"),
    pytest.param("The voice channel is called the hospital wing", id="channel-name"),
    pytest.param("Book club picked a novel about a refugee family for December", id="novel"),
    pytest.param("The election for the new community lead is open until Sunday", id="community-election"),
    pytest.param("Donations to the server fund cover the £15 a month hosting", id="hosting-cost"),
    pytest.param("Secret Santa sign-ups are open in #events", id="secret-santa"),
    pytest.param("Theme for the art jam: faith, hope and chaos", id="art-theme"),
    pytest.param("The Diablo season starts Tuesday, bring healers", id="game-season"),
    pytest.param("Mental Health Awareness Week stream is on the 14th", id="awareness-week"),
    pytest.param("The server moved its hosting to a cheaper plan at $6 a month", id="plan-cost"),
    pytest.param("All donations go to Mind and Shelter", id="charities"),
    pytest.param("The courthouse map is the new default", id="courthouse-map"),
    pytest.param("Political discussion stays in #politics, please", id="politics-channel"),
    pytest.param("Pin the rules so new members see them", id="pin-the-rules"),
    pytest.param("The server's Bluesky is @ourguild.bsky.social", id="server-handle"),
    pytest.param("Trans Day of Visibility art event runs 31 March", id="tdov"),
    pytest.param("Quiz night round 3 is about world religions", id="quiz"),
    pytest.param("Sign in with Discord to vote on the logo", id="sign-in-with-discord"),
    pytest.param("Key decisions are kept in #decisions", id="key-decisions"),
]


@pytest.mark.parametrize("text", SHARED)
def test_community_facts_pass(text: str) -> None:
    assert private_detail(text) is None


# People named with nothing private said of them: the floor only refuses a person with a detail.
TIED_BUT_FINE = [
    pytest.param("Olu won the art contest and gets the Artist role", id="contest"),
    pytest.param("Welcome Jonah to the mod team!", id="welcome"),
    pytest.param("Dev earned the MVP badge this season", id="earned-badge"),
    pytest.param("Olu made the banner for the £400 charity stream", id="made-banner"),
    pytest.param("he came out on top in the grand final", id="came-out-on-top"),
    pytest.param("she came out of retirement for the finals", id="came-out-of"),
    pytest.param("Mira will host movie night; she picked a prison-break film", id="prison-film"),
    pytest.param("Ana is streaming the expansion when it comes out Friday", id="comes-out"),
    pytest.param("Jonah voted to leave the raid early", id="voted-to-leave"),
    pytest.param("Olu is into horror games and retro consoles", id="into-games"),
    pytest.param("Sam's wife baked the cake for the meetup", id="wife-baked"),
    pytest.param("Ruth drew the Pride banner for the server", id="pride-banner"),
    pytest.param("Theo moved the tournament to Saturday", id="moved-tournament"),
    # Found by reading the rule, not held out: a category's word in its everyday sense next to a person.
    pytest.param("Olu said the server went down for two hours", id="server-went-down"),
    pytest.param("Olu is addicted to Balatro", id="addicted-to-a-game"),
    pytest.param("The patch just came out and Olu loves it", id="patch-came-out"),
    pytest.param("Olu just joined rn", id="joined-rn"),
    pytest.param("Olu posted a breakdown of the patch notes", id="patch-breakdown"),
    pytest.param("Olu cooked Asian food for the meetup", id="asian-food"),
    pytest.param("Olu's race on Sunday starts at 8", id="race-event"),
    pytest.param("Olu has faith in the new raid comp", id="faith-in-comp"),
    pytest.param("Olu converted to Arch Linux", id="converted-to-linux"),
    pytest.param("Olu's phone is broken again", id="phone-broken"),
    pytest.param("Call him at 8 about the raid", id="call-at-8"),
    pytest.param("Olu locked up the clubhouse after the meetup", id="locked-up-door"),
    pytest.param("Olu won 3k games this season", id="won-3k-games"),
    pytest.param("Olu is straight up the best healer", id="straight-up"),
    pytest.param("Olu sent the file via Discord 2 days ago", id="via-discord"),
    pytest.param("Olu backs the rules reform", id="rules-reform"),
]


@pytest.mark.parametrize("text", TIED_BUT_FINE)
def test_a_person_with_nothing_private_passes(text: str) -> None:
    assert private_detail(text) is None


# Known misses, kept so a change that fixes one shows up (strict xfail).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "Ilse wählt seit Jahren die Grünen",
            "politics",
            marks=pytest.mark.xfail(
                strict=True, reason="a name before a German verb the rule lacks ties no one"
            ),
            id="german-verb-after-name",
        ),
        pytest.param(
            "Lucía milita en Podemos",
            "politics",
            marks=pytest.mark.xfail(
                strict=True, reason="a name before a Spanish verb the rule lacks ties no one"
            ),
            id="spanish-verb-after-name",
        ),
        pytest.param(
            "apparently Cass is ace",
            "sexuality",
            marks=pytest.mark.xfail(strict=True, reason='"ace" is British for "great" as often as asexual'),
            id="ace",
        ),
        pytest.param(
            "Kemi's cat is called Pills",
            None,
            marks=pytest.mark.xfail(
                strict=True, reason="a health word as a pet's name: refused, a word rule"
            ),
            id="pet-called-pills",
        ),
    ],
)
def test_known_misses(text: str, expected: str | None) -> None:
    assert private_detail(text) == expected


# The conversation's people, by any word of their display name, any case; mentions; the speaker.
@pytest.mark.parametrize(
    ("text", "names", "category"),
    [
        pytest.param("mira is pregnant with her second", ("Mira Chen",), "health", id="first-name-lower"),
        pytest.param("chen owes the bank a fortune", ("Mira Chen",), "finances", id="surname"),
        pytest.param("olu votes green party", ("Olu",), "politics", id="short-name"),
        pytest.param("<@123456789> is in rehab", (), "health", id="mention"),
        pytest.param("<@!123456789> got arrested on Friday", (), "criminal record", id="nick-mention"),
        pytest.param("I'm bipolar, for what it's worth", (), "health", id="first-person"),
        pytest.param("my salary got cut by 10%", (), "finances", id="my"),
        pytest.param("the guild leader's wife is in hospital", (), "health", id="role-word"),
    ],
)
def test_the_conversations_people_are_tied(text: str, names: tuple[str, ...], category: str) -> None:
    assert private_detail(text, names) == category


def test_a_name_only_ties_as_a_whole_word() -> None:
    """ "Olu" in "soluble" ties nobody; the same sentence with a name in it is refused."""
    assert private_detail("the new painkillers are soluble", ("Olu",)) is None
    assert private_detail("the new painkillers are for Olu", ("Olu",)) == "health"


def test_contact_needs_no_person() -> None:
    """A phone number or a person's e-mail address points at someone by itself; a role mailbox does
    not, unless a person is tied to it."""
    assert private_detail("Ring 0161 496 0000 to book the hall") == "contact"
    assert private_detail("Appeals go to jonah.k1990@gmail.com") == "contact"
    assert private_detail("Appeals go to appeals@example.org") is None
    assert private_detail("Olu reads the support@example.org inbox", ("Olu",)) == "contact"
