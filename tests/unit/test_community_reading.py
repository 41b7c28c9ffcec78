"""The bot's own reading of what a chunk says about the community, on chat lines from several kinds of
servers (a gaming guild, a book club, a makerspace, a running club, an open-source project)."""

from __future__ import annotations

import pytest

from bot.memory.community_reading import CommunityLine, community_lines
from bot.memory.models import BufferedMessage

ANA, BJORN, KEZ, BOT = "501", "502", "503", "599"
NAMES = {ANA: "Ana", BJORN: "bjorn_runs", KEZ: "Kez", BOT: "Memo"}
BOT_NAMES = ("Memo",)


def said(n: int, author: str, text: str, *, reply_to: str | None = None) -> BufferedMessage:
    return BufferedMessage(
        message_id=str(7000 + n),
        scope="guild:1",
        channel_id="c1",
        author_id=author,
        author_name=NAMES[author],
        content=text,
        created_at=f"2026-11-24T14:{n:02d}:00Z",
        is_bot=author == BOT,
        reply_to=reply_to,
    )


def read(text: str) -> tuple[str, bool] | None:
    """What one line, said by Kez among Ana's and Bjorn's lines, is read as."""
    chunk = [said(1, ANA, "hi all"), said(2, BJORN, "hey"), said(3, KEZ, text)]
    found = [line for line in community_lines(chunk, BOT_NAMES) if line.message_id == "7003"]
    return (found[0].kind, found[0].durable) if found else None


DECISION = ("decision", True)
RULE = ("rule", True)
SCHEDULE = ("schedule", True)
PLAN = ("plan", False)
LINK = ("link", False)
QUESTION = ("question", False)

LINES = [
    # Decisions: a group's choice, said as one or stated plainly.
    pytest.param("ok we voted and the next read is Project Hail Mary 📚", DECISION, id="decision-voted"),
    pytest.param(
        "alright its settled, group runs start at the park gate from now on", DECISION, id="decision-settled"
    ),
    pytest.param("final answer: we're going with the green jerseys", DECISION, id="decision-final-answer"),
    pytest.param("heads up - raid night is moving to wednesdays", DECISION, id="decision-moving-to"),
    pytest.param("scrims are on tuesdays now, not mondays", DECISION, id="decision-plain-now"),
    pytest.param("Starting next month the shop opens at 10 instead of 9", DECISION, id="decision-starting"),
    pytest.param("after the poll we agreed to drop python 3.8 support", DECISION, id="decision-agreed"),
    pytest.param("consensus in the thread was to squash-merge all PRs", DECISION, id="decision-consensus"),
    pytest.param(
        "from now on, everyone signs the tool log before using the lathe", DECISION, id="decision-from-now-on"
    ),
    pytest.param(
        "On a décidé : le club de lecture se réunit au café maintenant",
        DECISION,
        id="decision-fr",
    ),
    pytest.param("Hemos decidido cambiar la quedada al parque", DECISION, id="decision-es"),
    pytest.param("I decided to move to Leeds next year", None, id="not-decision-personal"),
    pytest.param("we should move game night to fridays imo", PLAN, id="not-decision-proposal"),
    pytest.param("sooo the vote's in: Dune wins by 3", DECISION, id="decision-vote-in"),
    pytest.param(
        "Thursday league games are switching to 7:30 starting this week", DECISION, id="decision-switching"
    ),
    pytest.param("We're dropping Windows 7 support as of v4", DECISION, id="decision-as-of"),
    pytest.param("nah, sticking with tuesdays", DECISION, id="decision-sticking-with"),
    pytest.param("Nous avons décidé de garder le même lieu", DECISION, id="decision-fr-nous"),
    pytest.param(
        "the mods decided to close #lfg, use #looking-for-group instead", DECISION, id="decision-mods"
    ),
    pytest.param(
        "yeah so we're not doing the 5k loop anymore, too much traffic", DECISION, id="decision-anymore"
    ),
    pytest.param(
        "book club is officially switching to audiobooks-friendly picks 🎧",
        DECISION,
        id="decision-officially",
    ),
    pytest.param(
        "Update: the clubhouse key now lives in the lockbox by the door", DECISION, id="decision-now-lives"
    ),
    pytest.param("Maintainers agreed: no new features until 2.0 ships", DECISION, id="decision-maintainers"),
    pytest.param("bjorn moved the meeting to 7", DECISION, id="decision-moved-to"),
    pytest.param(
        "ok team, after a lot of back and forth the committee picked Oct 12 for the gala",
        PLAN,
        id="decision-one-day",
    ),
    pytest.param("haha we agreed to disagree", None, id="not-decision-idiom"),
    pytest.param("it's official, I'm a dad 🎉", None, id="not-decision-personal-news"),
    pytest.param("the boss is moving to phase 2 now", None, id="not-decision-game-talk"),
    pytest.param("the cat chose violence today", None, id="not-decision-cat"),
    pytest.param("lol imagine if we moved raids to 6am", None, id="not-decision-imagine"),
    # Rules: durable when said as a rule.
    pytest.param("Rule 4: no self-promo outside #shameless-plugs", RULE, id="rule-numbered"),
    pytest.param(
        "pls don't post spoilers for the finale in general, use #spoilers", RULE, id="rule-please-dont"
    ),
    pytest.param("reminder that safety glasses are mandatory in the wood shop", RULE, id="rule-mandatory"),
    pytest.param("Bots and alt accounts are not allowed here.", RULE, id="rule-not-allowed"),
    pytest.param("mods will time out anyone who pings @everyone", RULE, id="rule-mods-will"),
    pytest.param("keep memes in #off-topic please 🙏", RULE, id="rule-keep-in"),
    pytest.param("All PRs must have a linked issue before review", RULE, id="rule-must"),
    pytest.param("no NSFW. period.", RULE, id="rule-no-x"),
    pytest.param("Keine Werbung, das ist hier verboten", RULE, id="rule-de"),
    pytest.param("you must be exhausted after that ride", None, id="not-rule-guess"),
    pytest.param("I must finish my slides before the talk", None, id="not-rule-personal-must"),
    pytest.param("no worries, I'll grab it", None, id="not-rule-no-worries"),
    pytest.param("should we add a no-spoilers rule?", QUESTION, id="not-rule-question"),
    pytest.param("Please do not leave the 3D printers running unattended", RULE, id="rule-please-do-not"),
    pytest.param("Spoilers go in #spoiler-zone, no exceptions", RULE, id="rule-goes-in"),
    pytest.param("you need to tag your posts with the book title", RULE, id="rule-you-need-to"),
    pytest.param("repeat offenders get banned, simple as", RULE, id="rule-get-banned"),
    pytest.param("please refrain from DMing new members with invites", RULE, id="rule-refrain"),
    pytest.param("Self promo = instant ban.", RULE, id="rule-instant-ban"),
    pytest.param("Only members with a green badge can use the CNC", RULE, id="rule-only-can"),
    pytest.param("Be respectful. Harassment will get you kicked.", RULE, id="rule-will-get-you"),
    pytest.param("don't forget your headlamps tonight!!", PLAN, id="rule-for-one-night"),
    pytest.param(
        "group ride leaves from the café 7am sharp on the 9th. don't be late", PLAN, id="rule-for-one-event"
    ),
    pytest.param("the rules are dumb tbh", None, id="not-rule-opinion"),
    pytest.param("tbh the new rules are kinda strict", None, id="not-rule-opinion-2"),
    pytest.param("we must have played 40 games last night", None, id="not-rule-must-have-played"),
    pytest.param("that must've hurt", None, id="not-rule-mustve"),
    pytest.param("no one in #general seems awake", None, id="not-rule-no-one-in"),
    pytest.param("please don't tell me the ending", None, id="not-rule-personal-plea"),
    # Schedules: a time that comes round again.
    pytest.param(
        "book club meets every other thursday at 7 at the library", SCHEDULE, id="schedule-every-other"
    ),
    pytest.param("parkrun is weekly, saturdays 9am sharp", SCHEDULE, id="schedule-weekly"),
    pytest.param("open shop hours: each wednesday evening 6–10", SCHEDULE, id="schedule-each"),
    pytest.param("standup every weekday 10:00 UTC in the voice channel", SCHEDULE, id="schedule-weekday"),
    pytest.param("dues are collected once a month", SCHEDULE, id="schedule-once-a-month"),
    pytest.param("on se retrouve tous les samedis matin au parc", SCHEDULE, id="schedule-fr"),
    pytest.param("Wir trainieren jeden Dienstag um 19 Uhr", SCHEDULE, id="schedule-de"),
    pytest.param("I go swimming every morning before work", None, id="not-schedule-personal"),
    pytest.param("this bug happens every time i open the app", None, id="not-schedule-every-time"),
    pytest.param(
        "tempo session is tuesdays 6:30 at the track, all paces welcome", SCHEDULE, id="schedule-plural-day"
    ),
    pytest.param("we do a monthly build night, usually the last friday", SCHEDULE, id="schedule-monthly"),
    pytest.param(
        "Office hours are held every second Wednesday on Jitsi", SCHEDULE, id="schedule-every-second"
    ),
    pytest.param("La réunion mensuelle est le premier lundi", SCHEDULE, id="schedule-fr-mensuelle"),
    pytest.param("Los entrenamientos son todos los martes a las 7", SCHEDULE, id="schedule-es"),
    pytest.param("long run every sunday, meet 7:30 at the fountain", SCHEDULE, id="schedule-long-run"),
    pytest.param("we read one book a month", SCHEDULE, id="schedule-one-a-month"),
    pytest.param("Release train leaves every six weeks", SCHEDULE, id="schedule-every-six-weeks"),
    pytest.param("the space is open tues/thurs evenings", SCHEDULE, id="schedule-evenings"),
    pytest.param("repair café happens the 2nd saturday of each month", SCHEDULE, id="schedule-nth-day"),
    pytest.param(
        "reminder: membership fees are due by the 1st of every month", SCHEDULE, id="schedule-due-every-month"
    ),
    pytest.param("I work nights every weekend so I'm out", None, id="not-schedule-personal-2"),
    pytest.param("my sister runs every day", None, id="not-schedule-someone-else"),
    pytest.param("every time I log in the server is down", None, id="not-schedule-complaint"),
    # Plans: one event, with or without its date.
    pytest.param("lets do a group ride to the coast next sunday 🚴", PLAN, id="plan-lets"),
    pytest.param("meetup at the brewery on March 3rd at 19:00, who's in?", PLAN, id="plan-dated-meetup"),
    pytest.param("we're gonna stream the tournament tomorrow night", PLAN, id="plan-gonna"),
    pytest.param("hackathon kicks off 14 June, sign up sheet coming soon", PLAN, id="plan-event-date"),
    pytest.param("game night tmrw 8pm, bring snacks", PLAN, id="plan-tmrw"),
    pytest.param("we're cutting the 3.0 release on the 20th", PLAN, id="plan-release"),
    pytest.param("I'm hosting the watch party at mine on friday", PLAN, id="plan-hosting"),
    pytest.param("vamos a quedar el sábado en el bar", PLAN, id="plan-es"),
    pytest.param("demain soir on se retrouve au local à 20h", PLAN, id="plan-fr"),
    pytest.param("let's gooo 🔥🔥", None, id="not-plan-cheer"),
    pytest.param("I have a dentist appointment tomorrow at 6pm", None, id="not-plan-personal"),
    pytest.param("we're so cooked lmao", None, id="not-plan-chatter"),
    pytest.param("maybe we could do a potluck sometime", None, id="not-plan-hypothetical"),
    pytest.param("we'll have pizza at the next meetup", PLAN, id="plan-well"),
    pytest.param("Let's aim for a v2.0 beta by end of March", PLAN, id="plan-lets-aim"),
    pytest.param("Raid tonight at 9 server time, be on discord by 8:45", PLAN, id="plan-tonight"),
    pytest.param("wir treffen uns nächste Woche am Freitag", PLAN, id="plan-de"),
    pytest.param(
        "Planning a cleanup day at the space on April 5 — who can help?", PLAN, id="plan-then-question"
    ),
    pytest.param("going to the pub after practice if anyone wants to join", PLAN, id="plan-invitation"),
    pytest.param("bring your own filament to workshop next thursday", PLAN, id="plan-bring"),
    pytest.param("raid prep call at 8:30pm EST", PLAN, id="plan-clock"),
    pytest.param("honestly we should just go with the cheaper venue", PLAN, id="plan-proposal"),
    pytest.param("I'm so excited for saturday!!!", None, id="not-plan-excited"),
    pytest.param("gg everyone, good runs today", None, id="not-plan-what-happened"),
    pytest.param("the laser cutter smells weird today", None, id="not-plan-today"),
    pytest.param("we're live now!", None, id="not-plan-live"),
    # Links: a page shared with the group; the group's own resource may last.
    pytest.param("slides from last night's talk: https://speakerdeck.com/foo/bar", LINK, id="link-slides"),
    pytest.param(
        "new release notes are up https://github.com/org/proj/releases/tag/v2.1",
        LINK,
        id="link-release-notes",
    ),
    pytest.param(
        "our wiki has the printer settings https://wiki.example.org/printers",
        ("link", True),
        id="link-standing",
    ),
    pytest.param("https://tenor.com/view/cat-dance-123", None, id="not-link-gif"),
    pytest.param(
        "lmao look https://media.discordapp.net/attachments/1/2/meme.png", None, id="not-link-image"
    ),
    pytest.param(
        "check the calendar: https://calendar.google.com/calendar/u/0?cid=abc", LINK, id="link-calendar"
    ),
    pytest.param(
        "here's the club's strava group https://www.strava.com/clubs/12345",
        ("link", True),
        id="link-clubs-group",
    ),
    pytest.param("signup form for the relay team: https://forms.gle/xyz", LINK, id="link-form"),
    pytest.param("great article on flaky tests https://blog.example.com/flaky", LINK, id="link-article"),
    pytest.param("lmfao https://www.youtube.com/watch?v=dQw4w9WgXcQ", LINK, id="link-video"),
    pytest.param("look at this absolute unit https://i.imgur.com/xyz.jpg", None, id="not-link-imgur"),
    pytest.param(
        "minutes from last meeting: https://cdn.discordapp.com/attachments/1/2/minutes.pdf",
        LINK,
        id="link-attachment",
    ),
    # Questions: the group's open business.
    pytest.param("should we push the meetup back a week?", QUESTION, id="question-should-we"),
    pytest.param("who's bringing the extension cords on saturday?", QUESTION, id="question-who-brings"),
    pytest.param("anyone know if the venue has step-free access?", QUESTION, id="question-venue"),
    pytest.param("is the laser cutter fixed yet?", QUESTION, id="question-shop-thing"),
    pytest.param("what chapter are we reading up to for next time?", QUESTION, id="question-book-club"),
    pytest.param("how's everyone doing today?", None, id="not-question-small-talk"),
    pytest.param("anyone got a good recipe for banana bread?", None, id="not-question-personal"),
    pytest.param("did u see the match last night", None, id="not-question-chatter"),
    pytest.param("who wants to carpool to the race on sunday?", QUESTION, id="question-carpool"),
    pytest.param("pizza after the session saturday? I can order", QUESTION, id="question-then-personal"),
    pytest.param("can someone review #482 before the freeze?", QUESTION, id="question-review"),
    pytest.param("when's the next meetup?", QUESTION, id="question-when"),
    pytest.param("any1 up for a quick scrim?", QUESTION, id="question-any1"),
    pytest.param("thoughts on moving the AGM to zoom?", QUESTION, id="question-thoughts"),
    pytest.param("drinks after the race sunday?", QUESTION, id="question-drinks"),
    pytest.param("is the meetup still on given the weather?", QUESTION, id="question-still-on"),
    pytest.param("who's got the keys this week?", QUESTION, id="question-keys"),
    pytest.param("has anyone emailed the venue about the deposit?", QUESTION, id="question-deposit"),
    pytest.param("where are we keeping the spare batteries now?", QUESTION, id="question-where-we"),
    pytest.param("when do registrations close for the relay?", QUESTION, id="question-registrations"),
    pytest.param("anyone wanna duo queue?", QUESTION, id="question-anyone-wanna"),
    pytest.param("which version should we target for the LTS?", QUESTION, id="question-which"),
    pytest.param("is anyone else's cat obsessed with boxes??", None, id="not-question-cat"),
    pytest.param("what are you all reading rn?", None, id="not-question-whats-everyone-doing"),
    pytest.param("what's the best budget running shoe?", None, id="not-question-advice"),
    pytest.param("anyone seen my water bottle? left it at the track", None, id="not-question-lost-item"),
    pytest.param("anyone else lagging rn?", None, id="not-question-lag"),
    # Never the community's.
    pytest.param("<@123456789> what time is the raid?", None, id="skip-mention-question"),
    pytest.param("<@123456789> can you summarise what we decided?", None, id="skip-mention-instruction"),
    pytest.param("Memo, remind everyone the meetup is at 6 tomorrow", None, id="skip-bot-name"),
    pytest.param("hey memo whats the next book", None, id="skip-bot-name-greeting"),
    pytest.param("remember that I run the 10k group", None, id="skip-remember"),
    pytest.param("!nomem we decided to kick Dave", None, id="skip-nomem"),
    pytest.param("I moved to Leeds last week, new flat is tiny", None, id="skip-life-moved"),
    pytest.param("my cat is sick so I'll miss the session", None, id="skip-life-cat"),
    pytest.param("Ana just moved to Porto!", None, id="skip-life-other-speaker"),
    pytest.param("ugh so tired of these raids", None, id="skip-mood"),
    pytest.param("if we won the lottery we'd buy a CNC machine", None, id="skip-hypothetical"),
    pytest.param("we should ban mondays lol", None, id="skip-joke"),
    pytest.param("jk jk the meetup is still on", None, id="skip-jk"),
    pytest.param("morning all ☀️", None, id="skip-greeting"),
    pytest.param("haha same", None, id="skip-small-talk"),
    pytest.param("<@123456789> we moved raids to thursdays btw", DECISION, id="mention-then-statement"),
    pytest.param("Memo what did we decide about the jerseys?", None, id="skip-bot-name-question"),
    pytest.param("<@111222333> remind us about the meetup", None, id="skip-mention-remind"),
    pytest.param("remember this: the cabinet code is 4412", None, id="skip-remember-this"),
    pytest.param("remember I'm vegetarian for the bbq", None, id="skip-remember-i"),
    pytest.param("imagine having practice at 5am lol", None, id="skip-imagine"),
    pytest.param("I just got promoted at work!!", None, id="skip-life-work"),
    pytest.param("my flight got cancelled 😭", None, id="skip-life-flight"),
    pytest.param("I'm switching to linux finally", None, id="skip-life-switching"),
    pytest.param("she's moving to berlin next month", None, id="skip-life-she"),
    pytest.param("my knee is still wrecked from the 10k", None, id="skip-life-knee"),
    pytest.param("happy birthday Kez!! 🎂", None, id="skip-birthday"),
    pytest.param("my parents visit us every weekend", None, id="skip-life-us"),
    pytest.param("my wife and I, we go hiking every sunday", None, id="skip-life-my-we"),
    pytest.param("imo we should move raids to fridays", PLAN, id="opinion-for-the-group"),
    pytest.param("I booked the hall for the 14th", PLAN, id="first-person-arranging"),
    pytest.param("Ana, we're meeting at 8 tomorrow", PLAN, id="name-then-group"),
    pytest.param("ughh the printer jammed again", None, id="skip-complaint"),
]


# Lines the reading gets wrong, kept so that a change that fixes one shows (strict: it then fails).
KNOWN_MISSES = [
    pytest.param(
        "guys we're done with the old forum, everything goes on github discussions from here",
        DECISION,
        id="miss-done-with",
    ),
    pytest.param("nobody touches the soldering station without an induction first", RULE, id="miss-nobody"),
    pytest.param("if you borrow a tool, sign it out in the log book", RULE, id="miss-conditional-rule"),
    pytest.param("pushing directly to main is not cool, open a PR", RULE, id="miss-not-cool"),
    pytest.param(
        "we could do a mini tournament on the 22nd if enough people sign up", PLAN, id="miss-conditional-plan"
    ),
]


@pytest.mark.parametrize(("text", "expected"), LINES)
def test_a_line_is_read_as_its_kind(text: str, expected: tuple[str, bool] | None) -> None:
    assert read(text) == expected


@pytest.mark.xfail(strict=True, reason="a known miss of the reading")
@pytest.mark.parametrize(("text", "expected"), KNOWN_MISSES)
def test_known_misses(text: str, expected: tuple[str, bool] | None) -> None:
    assert read(text) == expected


def test_the_bots_lines_and_the_lines_it_answered_are_never_the_communitys() -> None:
    chunk = [
        said(1, ANA, "we agreed the club meets on thursdays from now on"),
        said(2, BJORN, "we decided raids are on sundays"),
        said(3, BOT, "Got it: raids are on Sundays.", reply_to="7002"),
        said(4, KEZ, "game night is moving to saturdays", reply_to="7003"),  # a reply to the bot
        said(5, BOT, "The server's rules: no spam in #general."),
        said(6, KEZ, "who's bringing the projector?"),
    ]
    assert community_lines(chunk, BOT_NAMES) == [
        CommunityLine("7001", "decision", True),
        CommunityLine("7006", "question", False),
    ]


def test_lines_come_back_in_chunk_order_with_their_ids() -> None:
    chunk = [
        said(1, KEZ, "https://github.com/org/proj/pull/42 needs eyes"),
        said(2, ANA, "lol"),
        said(3, BJORN, "group run every sunday 8am from the bridge"),
        said(4, ANA, "no spoilers in #general pls"),
    ]
    assert [(line.message_id, line.kind) for line in community_lines(chunk)] == [
        ("7001", "link"),
        ("7003", "schedule"),
        ("7004", "rule"),
    ]


def test_an_empty_chunk_says_nothing() -> None:
    assert community_lines([]) == []
