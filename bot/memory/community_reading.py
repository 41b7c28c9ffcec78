"""The bot's own reading of what a chunk says about the community, for when the model names nothing.

Each flush asks a model what the server talked about and decided: community facts (rules, decisions,
recurring schedules, shared resources) and per channel an episode (topics, plans with their dates, open
questions, links). A small local model (Qwen2.5-Coder 1.5B) never names any of them, so no community
memory ever forms. This module reads the chunk's lines by their words, the way `durable.py` tells a
mood or a question: which lines decide, lay down a rule, fix a recurring time, plan, share a link or
ask the group something, and whether what they say may last (`durable`) or is one episode's point.

It only classifies: who may speak for the server, and what is kept, the engine decides. A line is
read sentence by sentence; what is the bot's (its own turns, lines addressed to it, "remember that
..." requests, `!nomem`) or a person's own (first-person life, moods, hypotheticals, jokes) is never
the community's. English first, with a few French, Spanish and German markers where they are cheap.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from bot.memory.durable import of_the_moment, statements
from bot.memory.models import BufferedMessage
from bot.memory.text import STOPWORDS, clean, fold, starts_with_marker, strip_background_blocks, worth_reading

NO_MEMORY_MARKER = "!nomem"  # the policy's default opt-out marker

DECISION, RULE, SCHEDULE, PLAN, LINK, QUESTION = "decision", "rule", "schedule", "plan", "link", "question"
# Of a line's sentences, the one that says most: what may last first, then in this order.
_RANK = (DECISION, RULE, SCHEDULE, PLAN, LINK, QUESTION)


@dataclass(frozen=True)
class CommunityLine:
    """A line of a chunk that says something about the community. `durable`: it may become a community
    fact (a decision, a rule, a recurring schedule, a shared resource); otherwise it is only a point of
    its channel's episode (a one-off plan, a link, an open question)."""

    message_id: str
    kind: str
    durable: bool


# --- Times --------------------------------------------------------------------------------------
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_WEEKDAY_SHORT = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)"
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_FR_DAY = r"(?:lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche)"
_ES_DAY = r"(?:lunes|martes|miercoles|jueves|viernes|sabado|domingo)"
_DE_DAY = r"(?:montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag)"
# A time that comes round again: "every Friday", "weekly", "on Sundays", "first Monday of the month".
_RECURRING = re.compile(
    r"\bevery\s+(?:other\s+|second\s+|third\s+|single\s+|\d+(?:st|nd|rd|th)?\s+)?"
    rf"(?:{_WEEKDAY}|{_WEEKDAY_SHORT}\b"
    r"|day\b|week|weekday|weekend|month|year|morning|evening|night|fortnight|quarter|season|term|semester"
    r"|(?:\d+|two|three|four|five|six|eight|few|couple of)\s+(?:days|weeks|months))"
    rf"|\beach\s+(?:{_WEEKDAY}|week|weekend|month|year|morning|evening|night|season|term)"
    r"|\b(?:weekly|biweekly|bi-weekly|fortnightly|monthly|bimonthly|bi-monthly|daily|nightly|yearly|annually"
    r"|annual)\b"
    rf"|\b{_WEEKDAY}s\b|\b(?:once|twice|three times)\s+a\s+(?:day|week|month|year)\b"
    r"|\b(?:one|two|three|\d+)\s+(?:[\w-]+\s+){0,2}(?:a|per)\s+(?:week|month|year)\b"
    r"|\b(?:mornings|afternoons|evenings|nights|weekends)\b"
    rf"|\b(?:first|second|third|fourth|last|1st|2nd|3rd|4th)\s+(?:{_WEEKDAY}|weekend)\s+(?:of|in)\s+"
    r"(?:the|each|every)\s+month\b"
    rf"|\bchaque\s+(?:{_FR_DAY}|semaine|mois|jour|annee|soir)|\btous les\s+(?:{_FR_DAY}s|jours|mois|ans|soirs"
    r"|matins)|\btoutes les semaines\b|\bhebdo(?:madaire)?\b|\bmensuel(?:le)?\b"
    rf"|\bcada\s+(?:{_ES_DAY}|semana|mes|dia|ano)|\btodos los\s+(?:{_ES_DAY}s?|dias|meses)\b"
    r"|\bsemanal(?:mente)?\b|\bmensual(?:mente)?\b"
    rf"|\bjeden\s+(?:{_DE_DAY}|tag|monat|abend)|\bjede woche\b|\bwochentlich\b|\bmonatlich\b|\btaglich\b"
    rf"|\b{_DE_DAY}s\b"
)
# One day, said so that it can only be one: "tomorrow", "next Saturday", "March 3rd", "12/04".
_ONE_DAY = re.compile(
    r"\b(?:today|tonight|tonite|tomorrow|tomorow|tmrw|tmr|tmw|2nite|2moro|2morrow)\b"
    rf"|\b(?:this|next|this coming)\s+(?:{_WEEKDAY}|{_WEEKDAY_SHORT}\b|weekend|week\b|month|evening|afternoon"
    r"|morning)"
    rf"|\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b"
    r"|\bthe\s+\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b\d{4}-\d{2}-\d{2}\b|<t:\d+"
    rf"|\bdemain\b|\bce soir\b|\b{_FR_DAY} prochain\b|\bla semaine prochaine\b"
    rf"|\bmanana\b|\besta noche\b|\bla proxima semana\b|\bel proximo\b"
    rf"|\bmorgen\b|\bheute abend\b|\bnachste woche\b|\bam\s+{_DE_DAY}\b"
)
# A day named without saying whether it comes again ("on Saturday", "friday?"): one event, for a plan.
_DAY_NAMED = re.compile(
    rf"\b{_WEEKDAY}\b|\bon\s+{_WEEKDAY_SHORT}\b|\b(?:{_FR_DAY}|{_ES_DAY}|{_DE_DAY})\b"
    rf"|\b(?:in|for|by|end of|until|till|before)\s+{_MONTH}\b"
)
_ANY_DAY = re.compile(rf"\b(?:{_WEEKDAY}|{_FR_DAY}|{_ES_DAY}|{_DE_DAY})")
_TODAY = re.compile(r"\btoday\b")
_CLOCK = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\b\d{1,2}[:h]\d{2}\b|\bat\s+\d{1,2}\b|\bnoon\b")
# What makes a choice last beyond one event: "from now on", "starting next week", "going forward".
_LASTING = re.compile(
    r"\bfrom (?:now|today|here) on\b|\bgoing forward\b|\bhenceforth\b|\bas of\b|\bstarting (?:next|this"
    r"|from|on|tomorrow|today)\b|\bfrom next (?:week|month|season|term|time)\b|\buntil further notice\b"
    r"|\bdesormais\b|\bdorenavant\b|\ba partir de maintenant\b|\ba partir de ahora\b"
    r"|\bde ahora en adelante\b|\bab jetzt\b|\bab sofort\b|\bab nachster woche\b"
)

# --- Who a sentence is about --------------------------------------------------------------------
_FIRST_SINGULAR = re.compile(r"\b(?:i|i'm|im|i've|ive|i'll|i'd|me|my|mine|myself)\b")
# The group itself, speaking or spoken to: "we", "let's", "everyone", "y'all", an announcement. Not a
# bare "us" or "lets" ("my parents visit us", "she lets me"), which a person's own life says as often.
_GROUP = re.compile(
    r"\b(?:we|we're|we'll|we've|we'd|all of us|our|ours|ourselves|let's|everyone|everybody|y'all|yall"
    r"|you all|you guys|u guys|all of you|folks|guys|peeps|nous|nosotros|nuestr[oa]s?|wir|uns|unser\w*)\b"
    r"|@everyone|@here|\b(?:psa|reminder|heads[ -]up|announcement)\b"
    r"|^(?:fyi|update|notice|attention|important)\b"
)
# Opinion lead-ins that leave the group's statement standing: "I think raids are on Thursdays now".
_OPINION = re.compile(
    r"^(?:i think|i believe|i heard|i guess|i reckon|i'm pretty sure|im pretty sure|pretty sure|iirc|afaik"
    r"|afaict|i'm told|as far as i know|imo|imho|in my opinion|my (?:two|2) cents|personally)\b[\s,:]*"
    r"(?:that\s+)?"
)
# A first-person line that still arranges something for the group: "I booked the hall for the 14th".
_ORGANISING_ME = re.compile(
    r"\b(?:host|hosting|hosted|organi[sz]e|organi[sz]ing|organi[sz]ed|booked|reserved|set up|setting up"
    r"|scheduled|pinned|announced)\b"
)
_POSSESSIVE = re.compile(r"\b(?:my|mine|myself)\b")
_THIRD_PERSON = re.compile(r"^(?:he|she|he's|she's|his|her|hes|shes)\b")
# What a server is organised around, and where: its gatherings, places, channels, projects and roles.
_COMMUNITY = re.compile(
    r"\b(?:meetups?|meet-ups?|meetings?|events?|sessions?|game ?nights?|raids?|dungeons?|scrims?|tournaments?"
    r"|tourney|matches|league|season|practices?|trainings?|workouts?|group runs?|runs?|races?|parkrun|rides?"
    r"|hikes?|book club|books?|chapters?|readings?|workshops?|classes|class|lessons?|build nights?"
    r"|open (?:night|house|day)|hack ?nights?|hackathons?|sprints?|releases?|milestones?|roadmap|deadlines?"
    r"|demos?|stand-?ups?|retros?|office hours|streams?|watch ?party|party|parties|potluck|bbq|picnic|socials?"
    r"|server|discord|channels?|threads?|forum|wiki|docs|repo|repository|branch(?:es)?|prs?|pull requests?"
    r"|issues?|ci|changelog|club|group|guild|clan|team|crew|community|committee|board|members?|membership|dues|fees?"
    r"|sign-?ups?|registrations?|roster|mods?|moderators?|admins?|rules?|venue|room|hall|space|shop|lab"
    r"|makerspace|laser cutter|3d printers?|printers?|tools?|projector|carpool|schedule|calendar|agenda|votes?|polls?"
    r"|ballot|voice chat|vc)\b|<#\d+>|(?<![\w&])#[a-z][\w-]*|(?<![\w&])#\d{2,}\b"
)

# --- What a sentence does -----------------------------------------------------------------------
# A group's choice said as one.
_DECIDED = re.compile(
    r"\bwe(?:'ve| have|'re| are)?\s+(?:all\s+|finally\s+|officially\s+|just\s+)?(?:decided|agreed|voted"
    r"|chose|picked|settled on|went with|are going with|'re going with|'ll go with|will go with|concluded"
    r"|approved|adopted)\b"
    r"|\b(?:mods|moderators|admins|maintainers|organi[sz]ers|committee|board|staff|team|everyone|everybody"
    r"|the group|the club)\s+(?:have\s+|has\s+|all\s+)?(?:agreed|decided|voted|approved|confirmed|ruled)\b"
    r"|\b(?:it's|its|it is|that's|thats|that is|this is)\s+(?:now\s+)?(?:settled|decided|official|final"
    r"|confirmed|locked in|set in stone)\b"
    r"|^(?:decision|decided|agreed|settled|official|confirmed|final decision|verdict|vote result|poll result)"
    r"\s*[:!-]"
    r"|\bfinal answer\b|\bfinal decision\b"
    r"|\b(?:vote|poll|votes)(?:'s|s|\s+is|\s+are|\s+was|\s+were|\s+has|\s+have)\s+(?:in|closed|done|counted"
    r"|over)\b"
    r"|\b(?:won|wins) the (?:vote|poll)\b|\b(?:majority|consensus|unanimous(?:ly)?)\b"
    r"|\bon a decide\b|\bnous avons decide\b|\bc'est decide\b|\bc'est officiel\b|\bdecidimos\b"
    r"|\bhemos decidido\b|\besta decidido\b|\bwir haben (?:beschlossen|entschieden)\b|\bist entschieden\b"
    r"|\bbeschlossen\b"
)
_IDIOM = re.compile(r"\bagreed? to disagree\b")  # what agrees on nothing
# A choice or a change said plainly ("going with green", "game night is moving to Fridays", "raids are
# on Thursdays now"): the group's only when it is about the group's business ("the cat chose violence").
_CHANGED = re.compile(
    r"\b(?:picked|chose|chosen|voted (?:for|to|on)|agreed (?:on|to)|decided (?:on|to)|settled on)\b"
    r"|\bgoing with\b(?! the flow)|\bwent with\b|\bsticking with\b"
    r"|\bmov(?:e|ed|ing)\s+(?!on\b|in\b|out\b|house\b)(?:[\w'#<>-]+\s+){1,4}?(?:to|from)\b"
    r"|\b(?:is|are|'s|'re|has been|have been|was|were|got|will be)\s+(?:officially\s+|now\s+)?(?:moving|moved"
    r"|switching|switched|changing|changed|shifting|shifted|pushed|bumped|renamed|replaced|cancell?ed"
    r"|rescheduled|relocat\w+|postponed|called off)\b"
    r"|\bno longer\b|\banymore\b|\binstead of\b|\bswitch(?:ed|ing)? (?:to|over)\b"
    r"|\bnow\s+(?:on|at|in|every|held|called|named|open|closed|private|public|mandatory|required|optional"
    r"|invite|members)\b|\bnow\s+[a-z]{2,}s\b"
    r"|(?<=\w )(?<!right )(?<!live )(?<!here )(?<!online )(?<!home )(?<!back )\bnow\s*(?:[,;.!]|$)"
)
# Proposals and plans: what someone would have the group do.
_PROPOSAL = re.compile(
    r"\bwe\s+(?:should|could|ought to|might want to|need to)\b|\bshall we\b|\bwhy don't we\b|\bhow about\b"
    r"|\bwhat about\b|\bi (?:vote|suggest|propose)\b|\bproposal\b|\bproposing\b|\blet'?s\b"
    r"|\bon (?:pourrait|devrait)\b|\bpodriamos\b|\bdeberiamos\b|\bwir (?:sollten|konnten)\b"
)
_PLANNING = re.compile(
    r"\blet'?s\b(?!\s+(?:see|hope|not|be honest|just say|face it|gooo*\b(?!\s+(?:to|for|with|at|on|back|over"
    r"|grab|get|and|see|play|do|meet))))"
    r"|\bwe(?:'ll| will| shall| should| could| can| need to| have to| gotta| plan to| want to| wanna"
    r")\s+(?!see\b|be fine\b|good\b|fine\b|ok\b|okay\b|so\b|doomed\b|screwed\b)"
    r"|\bwe(?:'re| are)\s+(?:gonna|going to|\w+ing)\b"
    r"|\bshall we\b|\bwhy don't we\b|\bhow about we\b"
    r"|\bif any(?:one|body) (?:wants|wanna|fancies|is keen)\b|\ball welcome\b|\beveryone(?:'s| is) welcome\b"
    r"|\bcome join\b|\bjoin us\b"
    r"|\b(?:don't|dont|do not) forget\b|\bremember to\b|\bmake sure (?:to|you)\b|\bbe sure to\b"
    r"|\b(?:meetup|meet-up|meet up|get-together|hangout|watch party|potluck|bbq|picnic)\b"
    r"|\bon va\b|\bon se (?:retrouve|voit|rejoint)\b|\brendez-vous\b|\ballons\b|\bvamos a\b|\bquedamos\b"
    r"|\bnos vemos\b|\bwir treffen uns\b|\btreffen wir uns\b|\blass(?:t)? uns\b|\bwir (?:werden|wollen)\b"
)
# Said as a rule whoever says it: "Rule 3:", "not allowed", "no memes in #general", "mods will ban".
_RULE_STATED = re.compile(
    r"^(?:new\s+|server\s+|house\s+|club\s+|shop\s+)?rules?\s*(?:#?\d+)?\s*[:.)-]"
    r"|\bnot (?:allowed|permitted|tolerated)\b|\b(?:is|are)\s+(?:strictly\s+)?(?:forbidden|prohibited|banned"
    r"|bannable|against the rules)\b|\bagainst (?:the|our) rules\b|\bzero tolerance\b"
    r"|\bno\s+(?!one\b|body\b)[\w-]+(?:\s+[\w-]+){0,3}?\s+(?:in|on|outside(?: of)?|inside|during|before"
    r"|after|without|unless|except|into)\s+(?:<#\d+>|#[a-z])"
    r"|\b(?:mods?|moderators?|admins?|staff)\s+(?:will|can|may)\s+(?:\w+\s+)?(?:ban|mute|kick|remove|delete"
    r"|warn|time ?out|lock|enforce|close)"
    r"|\b(?:will (?:be|get)|gets?|getting)\s+(?:you\s+|u\s+|them\s+|people\s+)?(?:banned|muted|kicked|removed"
    r"|deleted|warned|timed out|locked)\b|\binstant(?:ly)? (?:ban|kick|mute)\b"
    r"|(?:=|\bmeans)\s*(?:an?\s+)?(?:instant\s+)?(?:ban|kick|mute|warning|timeout)\b"
    r"|\bkeep\s+(?:[\w'-]+\s+){1,4}?(?:in|to)\s+(?:<#\d+>|#[a-z])"
    r"|\b(?:only|always)\s+(?:in|to)\s+(?:<#\d+>|#[a-z])"
    r"|\b(?:belongs?|goes|go)\s+(?:in|to)\s+(?:<#\d+>|#[a-z])"
    r"|\buse\s+(?:<#\d+>|#[a-z][\w-]*)\s+for\b"
    r"|\binterdit\b|\bprohibido\b|\bno se permite\b|\bverboten\b|\bnicht erlaubt\b"
)
# Said as a rule only when the speaker is not talking about themselves.
_RULE_TOLD = re.compile(
    r"\b(?:please|pls|plz|kindly)\s+(?:do not|don't|dont|never|avoid|refrain from|stop|no)\b"
    r"|^(?:don't|dont|do not|never|always|avoid)\s+(?!worry\b|know\b|care\b|think\b|mind\b|understand\b"
    r"|remember\b|forget\b|get me\b|even\b|like\b|judge\b|ask\b|again\b|ever\b|been\b|was\b|is\b|a\b|the\b"
    r"|fun\b|happy\b|good\b|nice\b|glad\b)\w+"
    r"|^only\s+(?:[\w'-]+\s+){1,6}?(?:can|may|are allowed to|get to)\b|\bmust\b(?!-)"
    r"|\b(?:is|are)\s+(?:required|mandatory|compulsory)\b|\brequired to\b"
    r"|\b(?:members|everyone|everybody|guests|players|visitors|contributors|newcomers|new members|new folks"
    r"|you)\s+(?:need to|have to|are required to|are expected to|should always|should never|may not"
    r"|cannot|can't)\b"
    r"|^no\s+(?!(?:worries|worry|way|idea|problem|problems|prob|probs|np|thanks|thank|thx|ty|clue|one|body"
    r"|doubt|offense|offence|wonder|kidding|joke|cap|chance|matter|rush|pressure|need|sense|luck|sorry|i|you"
    r"|u|we|he|she|they|it|its|it's|that|this|not|yes|yeah|more|longer|big|comment|shot|lie|lol|lmao"
    r"|haha|dont|don't|im|i'm|wait|please|pls|hate|fr|sir|dude|man|bro|ok|okay|biggie|shame|fun|really"
    r"|nvm|actually|but|and|then|just|idk)\b)[a-z][\w-]*"
)
# "You must be tired", "that must be fun": a guess, not a rule.
_GUESS = re.compile(
    r"\b(?:it|that|this|he|she|they|there|you|u|ya|that's|thats)\s+must\s+(?:be|have|'ve)\b(?!.*\bto\s+\w)"
    r"|\bmust've\b|\bmust have\s+(?:been|\w+ed|\w+en|\w+wn|done|gone|had|made|got|lost|won|hurt|put|left|seen"
    r"|read|run|said|thought|felt|forgot|bought|brought|taken)\b"
    r"|\bmust\s+be\s+(?!\w+(?:ed|en|wn|ept|one|aid|ut)\b)\w+\b(?!.*\bto\s+\w)"
    r"|\ba must\b"
)
_RULE_SHAPED = re.compile(r"^(?:no|don't|dont|do not|never|always|avoid)\b")
# Questions that are small talk, whoever they name.
_SMALL_TALK_ASKS = re.compile(
    r"^(?:how(?:'s| is| are| r| was)\s+(?:every(?:one|body)|you|u|ya|y'all|yall|we|it going|things|life"
    r"|your|ur|the weather)|what'?s up|whats up|wyd|sup\b|did (?:you|u|ya|anyone|anybody|y'all)\s+(?:see"
    r"|watch|catch|hear|read|play|try)|what(?:'s| is| are| r)\s+(?:you|u|y'all|yall|you all|you guys"
    r"|every(?:one|body))\s+(?:\w+ing|up to)\b)"
)
# Open questions about the group's arrangements: who brings, who hosts, who is in.
_ORGANISING_ASKS = re.compile(
    r"\bwho(?:'s|s| is| will| can| wants to|'ll| could| should)\s+(?:\w+\s+)?(?:bring|host|run|lead"
    r"|organi[sz]|driv|com|in\b|up for|go|join|handl|do|tak|book|grab|pick|sort|set|print|order|pay|cover"
    r"|review|merg|sign)"
    r"|\bany(?:one|body|1)\s+(?:else\s+)?(?:coming|going|joining|in for|up for|free|around|able|available"
    r"|interested|wanna|want to|fancy|keen)\b"
)
_ADDRESSED_VERBS = re.compile(
    r"^(?:(?:please|pls|plz|hey|yo|ok|okay)[\s,]+)?(?:can you|could you|would you|will you|do you|did you"
    r"|remember|forget|tell|show|list|give|find|search|look up|lookup|summari[sz]e|recap|explain|write"
    r"|make|help|translate|recommend|suggest|remind|note|save|check|describe|draw|generate|create|answer"
    r"|what|who|where|when|why|how|which)\b"
)
_LEADING_MENTION = re.compile(r"^\s*<@!?\d+>[\s,:]*")
_REMEMBER = re.compile(
    r"(?:^|[\s,.!])/?(?:please\s+|pls\s+)?remember\s+(?:that|this|i|i'm|im|i've|my|me)\b"
    r"|\b(?:can|could|would|will)\s+(?:you|u)\s+remember\b|^/remember\b"
)
# "Imagine if we ...", "what if we ...": a hypothetical that `of_the_moment` does not know by its words.
_WHAT_IF = re.compile(r"\bimagine\b|\bwhat if\b|\bpretend\b|\bin theory\b")
_JOKING = re.compile(r"\b(?:jk|j/k|jking|just kidding|kidding|joking)\b|(?:^|\s)/s\b")
_LAUGH = re.compile(r"\b(?:lol|lmao|lmfao|rofl|haha\w*|xd)\b|😂|🤣")
_OPENERS = re.compile(
    r"^(?:(?:ok|okay|ok so|so|alright|right|also|btw|and|oh|well|yeah|yep|yes|hey|hi|hello|guys|folks"
    r"|everyone|all|team|update|psa|reminder|friendly reminder|heads up|heads-up|fyi|note|important"
    r"|announcement|quick|quick one|just|@everyone|@here)\b[\s,:;!.-]*)+"
)
_CLAUSE_END = re.compile(r",|\s[-–—]\s")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\s*\n+\s*")
_URL = re.compile(r"https?://[^\s<>]+", re.I)
_PICTURE = re.compile(
    r"^https?://(?:[\w-]+\.)*(?:tenor\.com|giphy\.com|gfycat\.com|imgur\.com)/|\.(?:gif|gifv|png|jpe?g|webp|bmp|svg|heic)(?:[?#]\S*)?$",
    re.I,
)
# A link the group keeps going back to: "our wiki", "the club's calendar", "pinned".
_STANDING = re.compile(
    r"\b(?:our|the (?:club|server|guild|group|team|project|community|shop|space)'?s?)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:wiki|docs|documentation|repo|repository|calendar|drive|folder|sheet|spreadsheet|site|website|forum"
    r"|handbook|guide|faq|rules|roster|tracker|board|playlist|map|store|page|newsletter|form|archive|group"
    r"|channel|chat|account)\b"
    r"|\bpinned\b|\bbookmark\b|\bfor reference\b"
)


def community_lines(chunk: Sequence[BufferedMessage], bot_names: Collection[str] = ()) -> list[CommunityLine]:
    """The lines of a chunk that say something about the community, in chunk order.

    Never the bot's: its own turns, a line it answered (a bot line's `reply_to`) or that replies to it,
    a line that opens with a mention and asks or tells something, or with one of `bot_names`.
    """
    names = _folded_names(bot_names)
    people = _people(chunk, names)
    skipped = bots_business(chunk, bot_names)
    found: list[CommunityLine] = []
    for message in chunk:
        if message.message_id in skipped:
            continue
        text = clean(strip_background_blocks(message.content))
        if not worth_reading(text):
            continue
        reading = _reading(text, people)
        if reading is not None:
            found.append(CommunityLine(message.message_id, *reading))
    return found


def bots_business(chunk: Sequence[BufferedMessage], bot_names: Collection[str] = ()) -> set[str]:
    """The ids of a chunk's lines that are the bot's business, of which no community memory is made: its
    own turns, a line it answered or that replies to it, a request of it (an opening mention that asks
    or tells, an opening bot name, "remember that ..."), `!nomem`, a joke."""
    bot_ids = {m.message_id for m in chunk if m.is_bot}
    answered = {m.reply_to for m in chunk if m.is_bot and m.reply_to}
    names = _folded_names(bot_names)
    return {
        m.message_id
        for m in chunk
        if m.is_bot
        or m.message_id in answered
        or m.reply_to in bot_ids
        or _not_the_communitys(clean(strip_background_blocks(m.content)), names)
    }


def _folded_names(bot_names: Collection[str]) -> list[str]:
    return [folded for name in bot_names if (folded := " ".join(fold(name).split()))]


def _people(chunk: Sequence[BufferedMessage], bot_names: list[str]) -> set[str]:
    """The first words of the speakers' names: a sentence about one of them is theirs, not the server's."""
    words = {fold(m.author_name).split()[0] for m in chunk if not m.is_bot and m.author_name.split()}
    return {w for w in words if len(w) >= 3 and w.isalpha() and w not in STOPWORDS} - set(bot_names)


def _plain(text: str) -> str:
    """Folded text with straight apostrophes, so "It’s" and "it's" read alike."""
    return fold(text).replace("\u2019", "'").replace("\u2018", "'")


def _not_the_communitys(text: str, bot_names: list[str]) -> bool:
    """Whether a line is the bot's business or a request of it, or a joke: `!nomem`, addressed to the
    bot (an opening mention that asks or tells, an opening bot name), or a "remember that ..."."""
    if starts_with_marker(text, NO_MEMORY_MARKER):
        return True
    plain = _plain(text)
    if _REMEMBER.search(plain) or _JOKING.search(plain):
        return True
    if mention := _LEADING_MENTION.match(plain):
        rest = plain[mention.end() :]
        if _ADDRESSED_VERBS.match(rest) or not statements(rest).strip():
            return True
    opening = re.sub(r"^(?:hey|hi|yo|ok|okay|oi|dear)\b[\s,]*|^@", "", plain.lstrip())
    return any(re.match(rf"{re.escape(name)}(?!\w)", opening) for name in bot_names)


def _reading(text: str, people: set[str]) -> tuple[str, bool] | None:
    """The kind of a line and whether it may last: its most telling sentence's (`_RANK`), or a link's."""
    sentences = _SENTENCES.split(text)
    # "meetup Saturday at 7, who's in?": the statement before a closing question is read on its own.
    sentences += [
        s[: ends[-1].start()]
        for s in sentences
        if s.rstrip().endswith("?") and (ends := [*_CLAUSE_END.finditer(s)])
    ]
    one_day = bool(_ONE_DAY.search(_plain(_URL.sub(" ", text))))
    readings = [r for sentence in sentences if (r := _sentence(sentence, people, one_day))]
    if link := _link(text):
        readings.append(link)
    if not readings:
        return None
    return min(readings, key=lambda r: (not r[1], _RANK.index(r[0])))


def _link(text: str) -> tuple[str, bool] | None:
    """A line sharing a page (not a gif or a picture); lasting when it is the group's own resource."""
    pages = [url for url in _URL.findall(text) if not _PICTURE.search(url.rstrip(").,!>"))]
    if not pages:
        return None
    return LINK, bool(_STANDING.search(_URL.sub(" ", _plain(text))))


def _sentence(sentence: str, people: set[str], dated_line: bool) -> tuple[str, bool] | None:
    """A sentence's kind and whether it may last; `dated_line`: its line names one day, so that an
    instruction beside it ("... on the 9th. don't be late") is for that event, not a rule."""
    said = _plain(sentence).strip()
    said = re.sub(r"^[^\w#<@/']+", "", _URL.sub(" ", said)).strip()
    body = _OPENERS.sub("", _OPINION.sub("", _OPENERS.sub("", said))).strip()
    if not body or of_the_moment(said) or _WHAT_IF.search(said):
        return None
    grouped = bool(_GROUP.search(said))
    stated_rule = bool(_RULE_STATED.search(body))
    if not stated_rule and _personal(body, people, grouped):
        return None
    if not statements(sentence).strip():  # it only asks
        return (QUESTION, False) if _group_business(body, grouped) else None
    proposal = bool(_PROPOSAL.search(body))
    if proposal and _LAUGH.search(said):  # "we should ban mondays lol"
        return None
    one_day = bool(_ONE_DAY.search(body))
    recurring = bool(_RECURRING.search(body))
    lasting = bool(_LASTING.search(body))
    about_group = grouped or bool(_COMMUNITY.search(body)) or bool(_CLOCK.search(body))
    # A choice for one day ("the committee picked Oct 12") and a proposal are plans; what lasts, decisions.
    if (
        _DECIDED.search(body) or lasting or (_CHANGED.search(body) and (about_group or recurring))
    ) and not _IDIOM.search(body):
        if proposal or (one_day and not lasting and not recurring):
            return PLAN, False
        return DECISION, True
    if stated_rule or (_rule_told(body) and not _FIRST_SINGULAR.search(body)):
        if (one_day or (dated_line and not stated_rule)) and not recurring:
            return PLAN, False
        return RULE, not proposal
    if recurring and (about_group or _ANY_DAY.search(body)):
        return (PLAN, False) if proposal else (SCHEDULE, True)
    dated = one_day or bool(_DAY_NAMED.search(body) or _CLOCK.search(body))
    if _PLANNING.search(body) and (dated or about_group or body.startswith(("let's", "lets"))):
        return PLAN, False
    # A day and the group's business without a plan's words: "game night tmrw 8pm". "Today" alone is as
    # often what happened ("good runs today"): it counts only with a time.
    if about_group and (
        _CLOCK.search(body) or _ONE_DAY.search(_TODAY.sub(" ", body)) or _DAY_NAMED.search(body)
    ):
        return PLAN, False
    return None


def _personal(body: str, people: set[str], grouped: bool) -> bool:
    """Whether a sentence is about its speaker or another person ("I moved to Leeds", "my cat is sick",
    "Ana starts her new job Monday"), unless it arranges something for the group. A speaker speaking for
    the group ("I think we should ...") is not, but "my" keeps it theirs ("my wife and I, we hike ...")."""
    first = body.split()[0].strip(",:;!?.'") if body.split() else ""
    if _THIRD_PERSON.match(body) or first.removesuffix("'s") in people:
        return not grouped
    if not _FIRST_SINGULAR.search(body) or (grouped and not _POSSESSIVE.search(body)):
        return False
    arranging = _ORGANISING_ME.search(body) and (_COMMUNITY.search(body) or _ONE_DAY.search(body))
    return not arranging


def _rule_told(body: str) -> bool:
    """A rule told to others ("please don't ping the mods", "tools must be returned"), not a guess
    ("that must be fun")."""
    if not _RULE_TOLD.search(body):
        return False
    return not (_GUESS.search(body) and not _RULE_SHAPED.match(body))


def _group_business(body: str, grouped: bool) -> bool:
    """Whether a question is the community's open business rather than small talk or a personal ask:
    it is about the group ("should we ..."), its arrangements ("who's bringing ...") or its things."""
    if _SMALL_TALK_ASKS.match(body):
        return False
    return bool(
        grouped
        or _ORGANISING_ASKS.search(body)
        or _COMMUNITY.search(body)
        or _DECIDED.search(body)
        or _CHANGED.search(body)
        or _PLANNING.search(body)
    )
