"""The floor under shared memory: what no channel is shown, whatever a model marked.

An episode's point ("what a channel talked about") and a community fact ("the server meets on
Fridays") are shown to everyone who can read the channel. A model proposes them and may mark nothing
sensitive, so the bot keeps its own rule: a text that ties a person to a private detail (health,
address, contact, finances, orientation, belief, politics, ethnicity, union membership, a criminal
record) or that holds a secret is never shared.

Two halves, both read from the words alone:
- who: a person is tied when the text names one of the conversation's people, mentions someone, says
  I/my, he/she/they, "Sam's", "his boss", or a capitalised word that acts like a name ("Jonah has",
  "told Kemi"). When in doubt the text is tied: a false refusal only loses a line of shared memory;
- what: per category, the words that say it in English, with the commonest of French, Spanish and
  German, matched on folded text (lower case, no diacritics) so "hôpital" and "hopital" meet.
A sensitive word with nobody tied passes ("the #mental-health channel is for support", "voting for the
logo closes Friday"): a server needs such community facts. Three things are refused with nobody tied:
a secret, a phone number, and an e-mail address that is not a role mailbox (mods@, support@): the
number or address itself points at someone.

Decided here: "pin the announcement" is a verb, not a PIN, and passes; a venue's street address with
nobody tied passes (the meetup is at 14 High Street); a bare money amount with no verb of earning,
owing or paying is no finance ("entry is £5"); "vote"/"voted" is politics only with a party, an
ideology or a public election; a role mailbox (mods@, appeals@) passes when nobody is tied to it.

Known limits: an absent member named in lower case ("jonah's back on meds") or only before a verb the
rule lacks ("Ilse wählt ...") is not tied unless `names` holds them; a category word used for something
else next to a person is refused ("Kemi's cat is called Pills"); "ace" is not read as asexual.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from bot.memory.durable import holds_secret
from bot.memory.text import STOPWORDS, fold

# --- who ---------------------------------------------------------------------------------------------

# A user mention as Discord writes it ("<@123>", "<@!123>"); role (<@&1>) and channel (<#1>) mentions are
# no person.
_USER_MENTION = re.compile(r"<@!?\d+>")
# The speaker: I, I'm, I've, me, my, mine, myself, and French/Spanish/German first-person words.
_FIRST_PERSON = re.compile(
    r"(?<![\w'’])(?:i(?!\.e\.)|im|me|my|mine|myself|je|moi|mes|mi|mis|ich|mein\w{0,2}|mir|mich)(?!\w)"
    r"|\bj['’](?=\w)",
    re.I,
)
# One person spoken of: he/she and their forms, contracted too ("he's", "she'd"); they/them/their
# (one person as often as a group), and elle/ella/lui/ihm/ihn/ihr/sie/sein.
_PRONOUN = re.compile(
    r"(?<![\w'’])(?:he|she|him|her|his|hers|himself|herself|they|them|their|theirs|themself|themselves"
    r"|elle|ella|lui|ihm|ihn|ihr\w{0,2}|sie|seine\w?)(?!\w)",
    re.I,
)
# Someone unnamed but single: "someone", "a member", "one of the mods", "this guy", "the wife".
_SOMEONE = re.compile(
    r"\b(?:someone|somebody|some (?:guy|girl|bloke|woman|man|dude|kid)"
    r"|an? (?:member|mod|moderator|admin|player|user|guy|girl|lad|lass|woman|man|bloke|dude|kid|regular)"
    r"|one of (?:the|our|us|them)\b|(?:this|that) (?:guy|girl|person|member|user|dude|bloke|lad|woman|man)"
    r"|the (?:wife|husband|missus|missis|hubby|other half))\b",
    re.I,
)
_ROLE = (
    r"(?:ex[- ]?)?(?:wife|husband|partner|spouse|fianc[ée]e?|boyfriend|girlfriend|bf|gf|mum|mom|mother|mam"
    r"|dad|father|parent|son|daughter|kid|child|baby|brother|sister|sibling|cousin|aunt|auntie|uncle|nan"
    r"|nana|gran|grandma|grandmother|grandad|grandpa|grandfather|friend|mate|bestie|best friend|boss"
    r"|manager|colleague|coworker|co-worker|neighbou?r|flatmate|roommate|housemate|landlord|landlady|ex)"
)
# A role word for one person after a possessive ("your wife", "our mum", "Sam's flatmate"), or a family
# word used as a name ("Mum has ...").
_ROLE_WORD = re.compile(rf"\b(?:your|our|\w+['’]s)\s+{_ROLE}\b", re.I)
_FAMILY_NAME = re.compile(r"\b(?:Mum|Mom|Dad|Nan|Nana|Gran|Grandma|Grandpa|Grandad|Mam)\b")
# A title before a name: "Mrs Patel", "Dr. Okafor".
_TITLE = re.compile(r"\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof)\.?\s+[A-Z]")
# A capitalised word that could be a name ("Jonah", "O'Brien", "Mary-Jane").
_NAME = r"[A-ZÀ-ÖØ-ÞĀ-Ž][a-zß-öø-ÿĀ-ž]+(?:['’-][A-ZÀ-ÖØ-ÞĀ-Ž][a-zß-öø-ÿĀ-ž]+)?"
# A name's possessive or contraction: "Sam's", "Kemi’s".
_POSSESSIVE = re.compile(rf"\b({_NAME})['’]s\b")
# What a person does right after their name: "Jonah has", "Priya earns", "Kemi relapsed", "Nico ist".
_PERSON_VERBS = (
    r"is|was|has|had|have|are|were|and|or|got|gets|takes|took|said|says|told|tells|thinks|thought|feels"
    r"|felt|lives|lived|moved|moves|earns|earned|makes|made|owes|owed|went|goes|voted|votes|came|comes"
    r"|started|starts|stopped|stops|quit|will|would|can|could|can['’]t|cannot|couldn['’]t|does|did"
    r"|doesn['’]t|didn['’]t|don['’]t|isn['’]t|wasn['’]t|hasn['’]t|hadn['’]t|won['’]t|wouldn['’]t|just"
    r"|finally|apparently|recently|still|now|also|never|always|used|admitted|admits|mentioned|mentions"
    r"|confided|spent|spends|lost|loses|needs|needed|became|becomes|converted|prays|prayed|attends"
    r"|attended|joined|joins|left|leaves|relapsed|seems|seemed|works|worked|uses|tested|broke|found|been"
    r"|being|who|might|may|should|must|wants|wanted|keeps|kept|paid|pays|borrowed|lent|owns|rents|sold"
    r"|bought|gave|ended|identifies|identified|survived|suffers|suffered|struggles|struggled|battled"
    r"|battles|sees|saw|visits|visited|failed|passed|died|collapsed|fainted|fell|hurt|injured|tore"
    r"|sprained|miscarried|recovered|stayed|returned|signed|filed|declared|won|inherited|received"
    r"|applied|claims|claimed|receives|campaigned|marched|protested|supports|supported|backs|backed"
    r"|belongs|reckons|swears|believes|believed|practises|practices|fasts|fasted|wears|wore|grew|herself"
    r"|himself|themselves|ist|war|hat|wird|wohnt|arbeitet|sagt|est|était|vit|dit|es|está|esta|era|fue"
    r"|tiene|vive|dice"
)
_NAME_THEN_VERB = re.compile(
    rf"\b({_NAME})(?:\s+(?:{_PERSON_VERBS})\b|\s*,\s*(?:who|whose|apparently|bless))"
)
# A name after a word that takes a person: "told Kemi", "sending love to Jonah", "Mira and Tom".
_VERB_THEN_NAME = re.compile(
    r"(?:\b(?:to|with|for|about|told|tell|asked|ask|met|meet|named|called|texted|messaged|pinged|ping"
    r"|visited|visiting|saw|see|and|hug|hugs|congrats|congratulations|cc|dm|dmed|dm['’]d|add|follow"
    r"|message|msg|text|call|ring|reach|contact|hit|thank|thanks|welcome)|&)\s+"
    rf"({_NAME})\b"
)
# Capitalised words that start sentences or name days, months, platforms and server things, not people.
_NOT_NAMES = frozenset(
    """the a an this that these those it its there here what who where when why how which everyone
    everybody anyone anybody nobody no yes some most all any each every both our your we you if but and
    so also just please thanks thank next last new old today tonight tomorrow yesterday monday tuesday
    wednesday thursday friday saturday sunday january february march april may june july august
    september october november december christmas easter halloween ramadan diwali hanukkah discord
    minecraft twitch youtube steam reddit twitter instagram tiktok patreon ko spotify bluesky mastodon
    telegram whatsapp snapchat facebook signal threads kick github google apple xbox playstation
    nintendo switch server channel mods mod admins admin staff members member team guild raid event
    events stream voting vote poll rules rule reminder note update announcement welcome meeting meetup
    club book movie game games season week weekend month year day night morning evening let then after
    before during since until once while because though although yet still only even sorry hey hi
    hello ok okay well oh wow lol""".split()
)
# Common nouns that start a sentence as often as any name: "Registration is open", "Entry is £5".
_COMMON_NOUN = re.compile(r"(?:tion|sion|ment|ness|ing|ity|ship|ism)$")


def _ties_person(text: str, names: Collection[str] = ()) -> bool:
    """Whether `text` is about a person: one of `names` (any word of a display name, whole word, any
    case), a mention, a first-person word, a pronoun, a role word, or a word acting as a name."""
    if _named(text, names):
        return True
    if any(p.search(text) for p in (_USER_MENTION, _FIRST_PERSON, _PRONOUN, _SOMEONE, _ROLE_WORD)):
        return True
    return _FAMILY_NAME.search(text) is not None or _TITLE.search(text) is not None or _name_like(text)


def _named(text: str, names: Collection[str]) -> bool:
    """One of the conversation's people by any word of their display name ("Mira Chen": "mira", "chen");
    words of one letter and stop words ("The Baker": "the") would tie every text, so they do not count."""
    words = {w for name in names for w in re.findall(r"[^\W_]+", fold(name))}
    words = {w for w in words if len(w) >= 2 and not w.isdigit() and w not in STOPWORDS}
    if not words:
        return False
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.search(rf"(?<!\w)(?:{alternatives})(?!\w)", fold(text)) is not None


def _name_like(text: str) -> bool:
    """A capitalised word used as a name: a possessive ("Jonah's"), a name doing something ("Priya earns"),
    a name after "told"/"to"/"and"; not a day, a month, a platform or a sentence's first common word."""
    for pattern in (_POSSESSIVE, _NAME_THEN_VERB, _VERB_THEN_NAME):
        for m in pattern.finditer(text):
            word = m.group(1)
            if word.lower() not in _NOT_NAMES and not _COMMON_NOUN.search(word) and not _category_word(word):
                return True
    return False


def _category_word(word: str) -> bool:
    """Whether a capitalised word is itself a category's word ("Therapy is ...", "Rehab was ..."); not
    belief's or ethnicity's, whose words are also names (Christian, Faith, Sami)."""
    folded = fold(word)
    return any(p.search(folded) for category, p in _CATEGORIES if category not in _NAMES_TOO)


_NAMES_TOO = frozenset({"belief", "ethnicity"})


# --- what --------------------------------------------------------------------------------------------
# Every pattern below but `_ADDRESS_AS_WRITTEN` is matched on folded text (lower case, no diacritics).

# Health: illnesses and conditions (mental health too), diagnoses, injuries, hospital and surgery,
# disability and sight, pregnancy and birth, therapy, medication by class, by common name and by dose,
# addiction and recovery. "Addicted to" a game and a patch notes "breakdown" are no health.
_HEALTH = re.compile(
    r"\b(?:diabet\w*|cancer\w*|tumou?r\w*|leuka?emia|lymphoma|chemo\w*|radiotherapy|hiv|has aids"
    r"|asthma\w*|epilep\w*|seizures?|migraines?|had an? stroke|cardiac arrest"
    r"|heart (?:attack|condition|failure|surgery|problems?)|arthritis|lupus|crohn\w*|colitis|ibs"
    r"|coeliac|celiac|endometriosis|pcos|fibromyalgia|chronic (?:pain|illness|fatigue|condition)"
    r"|multiple sclerosis|parkinson\w*|alzheimer\w*|dementia|autis\w*|adhd|dyslexi\w*|dyspraxi\w*|ocd"
    r"|ptsd|bipolar|schizo\w*|depression|depressed|depressive|anxiety|panic attacks?|eating disorder"
    r"|anorexi\w*|bulimi\w*|self[- ]?harm\w*|suicid\w*|psychosis|psychotic"
    r"|mental (?:illness|health (?:issues?|problems?|crisis|struggles?|condition|leave))"
    r"|(?:nervous|mental|emotional) breakdown|(?:had|has|having) an? breakdown|insomnia|covid|flu"
    r"|infection|stds?|stis?|herpes|chlamydia|allerg\w*|anaphyla\w*|diagnos\w*|illness\w*"
    r"|(?:seriously|terminally|chronically|is|was|been|fell) ill|off sick|sick (?:leave|note)"
    r"|disease\w*|disorder\w*|syndrome|hospitali[sz]\w*|(?:in|into|to|from|out of) (?:the )?hospital"
    r"|a&e|intensive care|icu|surgery|surgeon|op(?:eration)? on (?:his|her|their|my) \w+"
    r"|(?:had|having|has|needs?|after|before|recovering from|post) (?:an |the |his |her |their |my )?"
    r"operation|transplant|biopsy|mri|ct scan|x-?rays?|fractur\w*"
    r"|broken (?:leg|arm|wrist|ankle|hand|foot|rib|nose)|concussion|injur(?:y|ies|ed)|slipped disc"
    r"|herniated|sciatica|sprain\w*|torn (?:ligament|acl|muscle|tendon)|back (?:pain|problems?|injury)"
    r"|sectioned|psych ward|(?:appendix|tonsils|gallbladder|wisdom teeth|kidney|ovary|ovaries|womb"
    r"|thyroid) (?:out|removed)|disabilit\w*|disabled|wheelchair|crutches|blindness"
    r"|(?:is|went|going|legally|partially|colou?r|registered) blind|partially sighted|visually impaired"
    r"|sight loss|deaf|hard of hearing|hearing aids?|amput\w*|pregnan\w*|miscarr\w*|abortion|ivf"
    r"|fertility|due date|gave birth|giving birth|maternity|born (?:premature|prematurely|early)"
    r"|prem baby|nicu|neonatal|expecting (?:a baby|twins)|(?:is|are|['’]re) expecting(?=\s*[.!,]|\s*$"
    r"| (?:a (?:boy|girl|little)|(?:their|her|his|our) (?:first|second|third)|in \w+))|therap\w*"
    r"|counsell?(?:ing|or)|psychiatr\w*|psycholog\w*|(?:a|his|her|their|my) shrink|rehab\w*"
    r"|doctor['’]?s? appointment|gp appointment|clinic|medic(?:ation|ine|ated)s?|meds|prescri\w*|pills?"
    r"|dose|dosage|\d+(?:\.\d+)? ?(?:mg|mcg|ug)\b|(?:once|twice|three times) a day"
    r"|antidepressant\w*|ssris?|snris?|sertraline|fluoxetine|prozac|citalopram|escitalopram|lexapro"
    r"|zoloft|paroxetine|venlafaxine|mirtazapine|bupropion|wellbutrin|lithium|lamotrigine|quetiapine"
    r"|seroquel|olanzapine|risperidone|aripiprazole|abilify|antipsychotic\w*|benzo\w*|diazepam|valium"
    r"|xanax|alprazolam|lorazepam|clonazepam|propranolol|beta[- ]blockers?|adderall|ritalin"
    r"|methylphenidate|vyvanse|elvanse|concerta|insulin|metformin|ozempic|wegovy|semaglutide|statins?"
    r"|inhaler|epipen|antibiotics?|painkillers?|opioid\w*|oxycodone|codeine|tramadol|morphine|fentanyl"
    r"|methadone|suboxone|naloxone|gabapentin|pregabalin|hrt|addiction|addicts?"
    r"|addicted to (?:drugs|alcohol|booze|gambling|pills|painkillers|opioids|heroin|cocaine|crack|meth"
    r"|weed|nicotine|vaping)|alcoholi\w*|drinking problem|sober|sobriety|relaps\w*|aa meetings?"
    r"|alcoholics anonymous|na meetings?|narcotics anonymous|(?:12|twelve)[- ]step"
    r"|gambling (?:problem|addiction|habit)|gamblers anonymous|detox\w*|overdos\w*"
    # Recovery: what someone is off, quit or stayed clean of: "off gambling for a year", "clean since May".
    r"|(?:off|quit|quitting|stopped|kicked|clean from|sober from)\s+(?:the\s+)?(?:gambling|booze|drink|drinking"
    r"|drugs|pills|weed|smack|coke|opioids|painkillers)|(?:been|stayed|staying|is|was|been) clean (?:for|since)"
    # A habit someone is back on or fell into again: "gambling again", "back on the booze".
    r"|(?:gambling|drinking|using|bingeing|purging|self[- ]harming|cutting) again|fell off the wagon"
    r"|(?:back on|hitting) the (?:booze|bottle|drink|sauce|pills|gear|powder)|(?:at|in) the bookies"
    r"|drug (?:use|habit|problem)|cocaine|heroin|meth|ketamine|mdma|cannabis|marijuana|weed"
    r"|malade|maladie|enceinte|medicament\w*|hopital|enfermo|enferma|enfermedad|embarazada"
    r"|medicamento\w*|krank\w*|schwanger\w*|medikament\w*|krankenhaus)\b"
)
_STREET = (
    r"(?:road|rd|street|st|avenue|ave|lane|ln|drive|dr|close|crescent|cres|court|ct|place|pl|way|terrace"
    r"|tce|gardens|gdns|grove|boulevard|blvd|square|sq|hill|mews|row|walk|parade|park|rise|view|green|vale"
    r"|circle|highway|hwy|parkway|pkwy|trail)"
)
# Address: a house number before one to three words and a street word ("27 larch crescent"), a flat or
# apartment number, a continental street with its number (rue, calle, -strasse), "lives at", or an
# address named as someone's (an IP or e-mail address is none).
_ADDRESS = re.compile(
    r"\b\d{1,5}[a-z]?,?\s+(?:(?!(?:the|on|at|in|of|for|and|or|to|near|by|from|pm|am|mins?|hours?)\b)"
    rf"[a-z][\w'’-]*\s+){{1,3}}{_STREET}\b"
    r"|\b(?:flat|apt|apartment|appt)\.?\s*(?:no\.?\s*)?#?\d+[a-z]?\b"
    r"|\b\d{1,4}[a-z]?,?\s+(?:rue|avenue|boulevard|bd|chemin|allee|impasse|calle|avenida|paseo|plaza|via"
    r"|viale|piazza|rua)\b|\b(?:calle|c/|avenida|rua)\s+[\w ]{2,30}?,?\s*(?:n[o°º]\.?\s*)?\d{1,4}\b"
    r"|\b[\w-]+(?:strasse|straße|str\.|weg|gasse|allee|platz|damm)\s+\d{1,4}[a-z]?\b"
    r"|\bliv(?:es|ed|ing) (?:at|on) (?:number |no\.? )?\d|\blives at\b|\bhome address"
    r"|(?<!ip )(?<!mac )(?<!mail )\baddress (?:is|:)|\b(?:my|his|her|their|\w+['’]s) (?:home |new |old )?"
    r"address\b|\baddy\b|\b(?:post|zip) ?code (?:is|:)|\bhabite (?:au|a la|rue)|\bvive en (?:la )?calle"
    r"|\bwohnt in der\b"
)
# Address, read as written: a street named before its number ("via Roma 14", "Calle Mayor 3"), a UK
# postcode ("SW1A 1AA") that is no "PS5 2TB", a US ZIP after a state's code ("Austin, TX 78701").
_ADDRESS_AS_WRITTEN = re.compile(
    r"\b(?i:via|viale|piazza|corso|calle|avenida|rua|plaza)\s+(?:[A-Z][\w'’]*\s+){1,3}?"
    r"(?:n[o°º]\.?\s*)?\d{1,4}\b(?!\s*(?:times|days?|hours?|mins?|minutes|weeks?|months?|years?|pm|am|x)\b)"
    r"|\b[A-Z]{1,2}\d[A-Z\d]?\s?\d(?!(?:TB|GB|MB|KB|PM|AM|HZ|MP|KG|KM|ML)\b)[A-Z]{2}\b"
    r"|\b(?:AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM"
    r"|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC)\s+\d{5}(?:-\d{4})?\b"
)
_PLATFORM = (
    r"(?:insta(?:gram)?|ig|snap(?:chat)?|whats ?app|telegram|kik|tik ?tok|twitter|facebook|fb|linked ?in"
    r"|only ?fans|we ?chat|skype|threads|bluesky|bsky|mastodon|signal)"
)
# Contact: a handle given on a platform ("her insta is @kemi.k"), how to reach someone ("text him on
# whatsapp"), a number or e-mail named as someone's (French, Spanish, German words too). A bare phone
# number or personal e-mail address is refused earlier, with or without a person.
_CONTACT = re.compile(
    rf"\b{_PLATFORM}\b[^.\n]{{0,25}}?@[\w.]{{2,}}"
    rf"|\b{_PLATFORM}\s+(?:handle|username|user ?name|name|id|account|number|tag)\s*(?:is|:)"
    r"|\b(?:add|follow|message|msg|dm|text|call|ring|reach|contact|find|hit up)\s+(?:me|him|her|them|\w+)"
    rf"\s+(?:on|via)\s+{_PLATFORM}\b"
    r"|\b(?:phone|mobile|cell|landline|home|work|whatsapp) ?(?:number|no\.|#)"
    r"|\b(?:my|his|her|their|\w+['’]s) (?:phone |mobile |cell |new )?number (?:is|:)"
    r"|\be-?mail (?:address|is|:)|\bcontact (?:details|info)"
    r"|\bnumero de (?:telephone|portable)|\btelefono|\bmovil\b|\bhandynummer|\btelefonnummer"
)
# Money, as an amount: a currency sign, or a money word ("500 quid", "two grand", "a thousand pounds").
_MONEY = (
    r"(?:[£$€¥₹]\s?\d[\d,.]*\s?(?:k|m|bn|grand)?|\d[\d,.]*\s?(?:grand|quid|bucks|dollars|pounds|euros|eur"
    r"|usd|gbp)\b|\b(?:a|one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|forty|fifty"
    r"|a few|several|hundreds of|thousands of)\s+(?:grand|quid|bucks|(?:hundred |thousand |million )?"
    r"(?:pounds|dollars|euros)))"
)
_AMOUNT = rf"(?:{_MONEY}|\b\d[\d,.]*\s?k\b)"  # "52k" is money after "earns", not after "won"
# Finances: pay and income, debt and loans, rent and mortgage, bankruptcy, credit, savings and balance,
# benefits and tax, and an amount someone earns, owes, borrows, pays, lost or lives on.
_FINANCES = re.compile(
    r"\b(?:salar\w*|wages?|income|pay ?(?:rise|cut|check|cheque|slip|packet|grade|raise)|payslip|paycheck"
    r"|earnings|earns? (?:a lot|well|good money|decent money|minimum wage|more|less|peanuts|a fortune)"
    r"|mak(?:es|ing) (?:good |decent |big |serious )?(?:money|bank)|(?:five|six|seven)[- ]figures?"
    r"|debts?|indebted|(?:owes?|owed|owing)\b[^.\n]{0,20}?\b(?:money|cash|rent|back|bank|debt|loan)"
    r"|loans?|overdraft|overdrawn|mortgage\w*|rent (?:is|of)|arrears|bankrupt\w*|insolven\w*|ccj"
    r"|credit (?:score|rating|card debt)|bank balance|savings|in the red|(?:flat|stony|dead|always) broke"
    r"|(?:i['’]m|he['’]s|she['’]s|they['’]re) (?:so |totally |completely )?broke\b|can['’]?t afford"
    r"|on benefits|universal credit|on welfare|food stamps|skint|hard up|strapped for cash"
    r"|money (?:troubles|problems|worries)|taxman|tax (?:bill|debt)|hmrc|irs|jobseeker\w*|pension"
    r"|net worth|payday loan|repossess\w*|evict\w*|salaire|dette\w*|pret immobilier|loyer|sueldo"
    r"|salario|deuda\w*|prestamo\w*|hipoteca|gehalt|schulden|miete)\b"
    rf"|\b(?:owes?|owed|owing|earn\w*|borrow\w*|lent|lends?|inherit\w*|paid|pays?)\b[^.\n]{{0,30}}?{_AMOUNT}"
    rf"|\b(?:won|lost|makes?|made|spent|spends?|saved|gambled)\b[^.\n]{{0,15}}?{_MONEY}"
    # Money someone lost or blew that they live on: "lost the rent money", "blew his wages".
    r"|\b(?:lost|blew|gambled away|drank away|spent) (?:all )?(?:the|his|her|their|my) (?:rent|wages|pay"
    r"|savings|pension|paycheck|benefits|bill money|rent money)\b"
    rf"|\bon\s+{_MONEY}|\b(?:rent|mortgage|bills?)\b[^.\n]{{0,20}}?{_AMOUNT}"
    rf"|{_AMOUNT}\s*(?:a|per|/)\s*(?:year|yr|annum|month|week|hour)\b|{_AMOUNT}\s*(?:salary|in debt|rent)"
    # What someone is on (their pay): "she's on 95k", "he was on about £40k at the bank".
    rf"|\b(?:is|am|are|was|were|s|m)\s+on\s+(?:about\s+|around\s+|like\s+|only\s+|just\s+)?{_AMOUNT}"
    # A bare number earned per period: "only makes 1800 a month", "takes home 2,100 a month".
    r"|\b(?:makes?|made|making|earns?|earned|earning|gets?|got|takes? home|took home|brings? in|lives? on)"
    r"\s+(?:only\s+|just\s+|about\s+|around\s+|roughly\s+|like\s+)?\d[\d,.]*\s?k?\s*(?:a|per|an|/)\s*"
    r"(?:year|yr|annum|month|week|hour|day)\b"
)
# Sexuality and gender identity: orientation words, coming out, whom someone dates, transition. A game
# or a patch that "came out" is none.
_SEXUALITY = re.compile(
    r"\b(?:gay|lesbian\w*|bi(?!-)|bisexual\w*|pansexual\w*|asexual\w*|aromantic|queer|lgbt\w*|homo"
    r"|homosexual\w*|heterosexual\w*|identifies as straight|is straight(?=\s*[.,;!]|\s*$| (?:and|but|btw))"
    r"|same[- ]sex|sexuality|sexual orientation|(?:came|come|comes|coming) out (?:as|to (?:\w+ )?"
    r"(?:family|parents|mum|mom|dad|friends)|of the closet)|in the closet|closeted"
    r"|(?:he|she|they|i|i['’]ve) (?:came|come) out\b(?! (?:of|with|on|ahead|top|at|in|for|and|alright"
    r"|fine|well|okay|ok|to (?:the|play|watch|see))\b)|transgender|trans(?!-)|transitioning|non-?binary"
    r"|enby|genderqueer|genderfluid|attracted to both"
    r"|(?:attracted to|dat(?:e|es|ed|ing)|into)\s+(?:only\s+)?(?:men|women|guys|girls)"
    r"|lesbienne|bisexuel\w*|lesbiana|salio del armario|schwul\w*|lesbisch\w*|bisexuell\w*)\b"
)
# Belief: religion and faiths, someone's faith, prayer, places of worship attended, scripture, holy days
# kept, atheism. "Faith in the new raid comp" and "converted to Linux" are none.
_BELIEF = re.compile(
    r"\b(?:religio\w*|(?:my|his|her|their|\w+['’]s) faith|faith (?:is|in god)|lost (?:my|his|her|their) faith"
    r"|pray\w*|mosque|synagogue|gurdwara|churchgoer|(?:goes|go|going|went|attends?|attended|attending|at"
    r"|to) (?:the |a |her |his |their |my )?(?:church|temple|chapel|mass)|sermon|bible\w*|qur['’]?an"
    r"|koran|torah|ramadan|hajj|kosher|halal|bapti[sz]\w*|born again|christian\w*|catholic\w*"
    r"|protestant|evangelical|mormon|lds|jehovah\w*|muslim\w*|islam\w*|jewish|judaism|jew|hindu\w*"
    r"|sikh\w*|buddhis\w*|pagan\w*|wicca\w*|atheis\w*|agnostic"
    r"|believ\w* in (?:god|allah|jesus|a higher power|the afterlife)|eglise|mosquee|croyant\w*|athee"
    r"|musulman\w*|juif|juive|chretien\w*|reza|iglesia|mezquita|creyente|ateo|atea|cristian\w*|betet"
    r"|kirche|moschee|glaubig\w*|muslimisch\w*|judisch\w*|christlich\w*)\b"
)
_PARTY = (
    r"(?:labou?r|tory|tories|conservatives?|lib ?dems?|liberal democrats?|green party|greens|reform uk"
    r"|reform party|snp|plaid|ukip|democrats?|democratic party|republicans?|gop|maga|trump|biden|harris"
    r"|sanders|corbyn|starmer|farage|macron|le pen|afd|cdu|spd|psoe|podemos|vox|lfi|grunen|linke)"
)
# Politics: a vote or support for a party, candidate or side; a party's fan or member; partisan and
# ideological words; public elections; political views named as someone's. A server poll ("voted to
# move raids", "voted to leave the raid early") is none of these.
_POLITICS = re.compile(
    r"\b(?:vote[sd]?|voting|supports?|supported|member of|joined|backs?|backed|campaign\w* for"
    r"|canvass\w* for|vote pour|vota|wahlt|wahlte)\s+(?:for |the |a |al |pour (?:le |la )?|die |den )?"
    rf"{_PARTY}\b|\bvot\w* (?:for )?reform\b|\b{_PARTY} (?:fan|supporter|voter|member|activist|loyalist)s?\b"
    r"|\bvot\w* (?:to )?(?:leave|remain)(?=\s*(?:[.,;!?]|$)| (?:in )?(?:the )?(?:eu|european union"
    r"|referendum)\b| in 2016)|\bmilitante?s?\b"
    r"|\b(?:tory|tories|democrat|republican|gop|maga|trump supporter|socialist|communist|marxist|anarchist"
    r"|libertarian|fascist|leftist|left[- ]wing\w*|right[- ]wing\w*|far[- ]right|far[- ]left|centrist"
    r"|brexiteer|remainer|ukip|snp|lib ?dem|afd|labour party|green party|reform uk|party member\w*"
    r"|political (?:views?|beliefs?|leanings?|party|activist)|politically|activist|canvass\w*"
    r"|(?:my|his|her|their|\w+['’]s) politics|(?:general|presidential|local|council|national|midterm"
    r"|federal|parliamentary|european|mayoral) elections?|primaries|referendum|brexit)\b"
)
_ORIGIN = r"[a-z]+(?:an|ese|ish|i|ic)"  # "Japanese", "Polish", "Pakistani", "Nigerian", "Arabic"
# Ethnicity and race: racial words, ethnic groups, heritage and descent, mixed origins, colour as a
# person's. "Asian food", a heritage site and someone's race on Sunday (a game's) are none.
_ETHNICITY = re.compile(
    r"\b(?:ethni\w*|etni\w*|racial\w*|mixed[- ]race|biracial|skin colou?r|ancestry"
    r"|(?:my|his|her|their|\w+['’]s) race(?! (?:car|day|track|event|time|results?|team|tonight|today|on|at"
    r"|starts?|this|next|kit)\b)"
    rf"|(?:my|his|her|their|\w+['’]s|of \w+|{_ORIGIN}) (?:heritage|descent|roots)|half[- ]{_ORIGIN}\b"
    rf"|{_ORIGIN}[- ](?:american|british|canadian|australian)s?"
    r"|(?:black|white|brown) (?:man|woman|guy|girl|person|lad|dude|people|family|british|american)"
    r"|(?:is|am|i['’]m|are|was) (?:half[- ])?(?:black|white)\b(?! \w+)"
    r"|(?:asian|hispanic|latin[oax]|arab)\b(?! (?:food|cuisine|restaurants?|market|supermarket|dish(?:es)?"
    r"|recipes?|takeaway|games?|dramas?|films?|movies?|music|art|night)\b)"
    r"|romani|roma people|gypsy|traveller community|indigenous|aboriginal|first nations|native american"
    r"|pacific islander|yoruba|igbo|hausa|punjabi|kurdish|tamil|pashtun|uyghur|han chinese|hui|tibetan"
    r"|zulu|xhosa|akan|ashanti|amhara|oromo|berber|amazigh|bedouin|sami|inuit|maori|sinhalese|gujarati"
    r"|sindhi|baloch|hmong|ethnically|d['’]origine|de origen|herkunft|abstammung)\b"
)
# Union membership: trade unions, union roles and dues, strikes and pickets, named unions.
_UNION = re.compile(
    r"\b(?:(?:trade|labou?r|teachers['’]?|workers['’]?|nurses['’]?|student) unions?"
    r"|union (?:member\w*|rep\w*|card|dues|official|steward|organi[sz]er|meeting|branch)"
    r"|(?:joined|in|member of|organi[sz]ing|from) (?:the|a|her|his|their|my) (?!european|soviet)"
    r"(?:\w+ )?union|unioni[sz]\w*|shop steward|on strike|picket(?:s|ed|ing| lines?)|strike ballot"
    r"|(?:joined )?(?:unison|unite|usdaw|nasuwt|verdi) (?:member\w*|rep\w*|official|steward|branch)"
    r"|joined unison|gmb|rmt|teamsters|uaw|afl-cio|ucu|cwu|ig metall|cgt|cfdt|ccoo|syndicat\w*"
    r"|sindicato\w*|gewerkschaft\w*)\b"
)
# Criminal record: arrest, charge, court, conviction, prison and jail (and their slang), probation and
# parole, offences on a record. A server that "went down" or a door "locked up" is none.
_CRIMINAL = re.compile(
    r"\b(?:arrest\w*|convict\w*|criminal record|police record|(?:in|to|from|out of|released from) (?:prison"
    r"|jail|gaol|juvie|custody)|jailed|imprison\w*|incarcerat\w*|(?:did|doing|served|serving) time"
    r"|behind bars|(?:did|doing|served|serving|got) (?:\w+ ){0,2}(?:years?|months?|weeks?) inside"
    r"|sent down|went down for (?:\w+ ){0,2}(?:years?|months?)|(?:nights?|weekend) in (?:the )?cells"
    r"|(?:was|were|been|got|gets|getting) locked up|banged up|(?:in|into) (?:police )?custody"
    r"|picked up by (?:the )?(?:police|cops)|probation|parole\w*|charged with"
    r"|pleaded (?:guilty|not guilty)|found guilty|sentenced|in court|court case|on bail|electronic tag"
    r"|offender|felon\w*|misdemeano\w*|dui|dwi|drink[- ]driving|drunk[- ]driving|police caution"
    r"|cautioned by (?:the )?police|community service|restraining order|mugshot|warrant (?:for|out)"
    r"|casier judiciaire|condamne\w*|antecedentes penales|carcel|detenido|condenado|vorstrafe\w*"
    r"|gefangnis|verhaftet|verurteilt|knast)\b"
    # An offence someone did time or has a record for: "did two years for burglary", "a record for theft".
    r"|\b(?:(?:did|doing|served|serving|got|given|went down for)\s+(?:\w+\s+){0,2}(?:years?|months?|weeks?)"
    r"|record|done|nicked|caught|busted|locked up|inside)\s+for\s+(?:\w+\s+)?(?:burglary|theft|robbery"
    r"|assault|fraud|shoplifting|stealing|dealing|possession|manslaughter|murder|arson|embezzlement"
    r"|vandalism|stalking|harassment|battery|trespass\w*|smuggling|forgery|bribery|kidnapping|gbh|abh)\b"
)
# In the order a text is named by when it says more than one.
_CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("health", _HEALTH),
    ("address", _ADDRESS),
    ("contact", _CONTACT),
    ("finances", _FINANCES),
    ("sexuality", _SEXUALITY),
    ("belief", _BELIEF),
    ("politics", _POLITICS),
    ("ethnicity", _ETHNICITY),
    ("union", _UNION),
    ("criminal record", _CRIMINAL),
)

# --- refused with nobody tied ------------------------------------------------------------------------

# Secrets `holds_secret` does not name: passphrases and whitelist phrases, keys (wifi, server, licence,
# one hidden under a mat), lockboxes and combinations, rcon, a PIN or door/gate code, login details.
_MORE_SECRETS = re.compile(
    r"\b(?:pass ?phrases?|(?:whitelist|secret|safe|magic|join|entry|access|verification|pass)[ -]?"
    r"(?:phrase|word)s?|(?<!catch )phrase\s*(?:is|was|:|=)"
    r"|(?:wi-?fi|wlan|wpa2?|network|server|license|licence|product|activation|admin|rcon|encryption|gpg"
    r"|pgp|master)[ -]?keys?|keys?\s*(?:is|was|:|=)\s*[\"'`]?(?=\S*\d)\S{4,}"
    r"|keys?\b[^.\n]{0,25}?\b(?:hidden|under|behind|inside|in)\s+(?:the|a)\s+(?:\w+\s+)?(?:mat|doormat"
    r"|pot|plant|flowerpot|bin|brick|rock|stone|lockbox|drawer|letterbox|mailbox|meter box|gnome)"
    r"|keys?\b[^.\n]{0,25}?\bis hidden|lock ?box\w*|key ?safes?|key ?box|combination lock"
    r"|(?:lock|safe|padlock|locker)\s+(?:combo|combination)"
    r"|(?:combo|combination)\s+(?:to|for)\s+(?:the\s+)?(?:lock|safe|padlock|locker|shed|gate|door|lockbox)"
    r"|combination\s*(?:is|:)\s*\d|rcon|(?:wi-?fi|wlan|network|door|gate)\s+(?:pass\w*|pw|code|key)"
    r"|wi-?fi\s*[:=]|(?:door|gate|alarm|garage|safe|locker|padlock|keypad|building|entry|buzzer|admin)"
    r"\s+codes?|codes?\s+(?:to|for)\s+(?:the\s+)?(?:door|gate|shed|garage|safe|lockbox|building|office"
    r"|flat|house|alarm|front)|pins?\s*(?:is|was|:|=)|pin\s+(?:code|number)|(?:bank|card|phone|sim)\s+pin"
    r"|(?:login|log-in|sign-?in|account)\s+(?:details|info)|sign-?in\s*(?:is|:|=)"
    r"|(?:log|sign)s?[ -]?(?:in|on)\s+(?:with|using|as)\s+[^.\n]{0,30}?(?:/|:|\band\b)\s*\S*\d)",
    re.I,
)
# "Pin" as a verb ("pin the announcement", "mods will pin it"): no PIN, so `holds_secret` is not shown it.
_PIN_BEFORE = re.compile(
    r"\bpin(?=\s+(?:the|a|an|this|that|these|those|it|them|his|her|our|your|their|messages?|posts?"
    r"|announcements?|rules?)\b)",
    re.I,
)
_PIN_AFTER = re.compile(r"\b(please|pls|plz|to|will|mods|gonna|can|could|should)\s+pin\b", re.I)
# Links, mentions, custom emoji and timestamps hold digits that are no phone number.
_MARKUP = re.compile(r"https?://\S+|www\.\S+|<[^<>\s]*>", re.I)
# A phone number: a country code, a leading 0 or a bracketed area code, then groups; a US-style
# 3-3-4; or one run of 9 to 15 digits. Its digits are counted after (9 to 15).
_PHONE = re.compile(
    r"(?<![\w.+-])(?:(?:\+|00)\s?\d{1,3}[\s.-]?(?:\(\d{1,5}\)[\s.-]?)?\d{1,6}(?:[\s.-]\d{1,6}){0,5}"
    r"|\(\d{2,5}\)[\s.-]?\d{2,6}(?:[\s.-]\d{2,6}){0,3}|0\d{1,5}(?:[\s.-]\d{1,6}){1,5}"
    r"|\d{3}[\s.-]\d{3}[\s.-]\d{4}|\d{9,15})(?!\.?\d)(?!\w)"
)
_EMAIL = re.compile(r"(?<![\w.+-])([\w.+-]+)@[\w-]+(?:\.[\w-]+)+")
# Mailboxes of a role, not a person: shared with a server, they point at nobody.
_ROLE_MAILBOXES = frozenset(
    """mods mod moderators moderation admin admins administrator support help info contact contacts hello
    team staff events press media noreply no-reply abuse webmaster postmaster office enquiries inquiries
    bookings booking sales hr jobs careers feedback community discord server appeals appeal reports report
    security billing privacy legal partnerships sponsors applications apply recruitment tickets orders
    shop store merch newsletter updates donations treasurer secretary committee board membership
    organisers organizers volunteers""".split()
)


def private_detail(text: str, names: Collection[str] = ()) -> str | None:
    """The reason `text` may not be shown to a channel: the name of the private category it ties to a
    person ("health", "address", "contact", "finances", "sexuality", "belief", "politics", "ethnicity",
    "union", "criminal record") or "secret"; None when it may be shared."""
    if _secret(text):
        return "secret"
    if _contact_without_person(text, names):
        return "contact"
    if not _ties_person(text, names):
        return None
    folded = fold(text)
    for category, pattern in _CATEGORIES:
        if pattern.search(folded) or (category == "address" and _ADDRESS_AS_WRITTEN.search(text)):
            return category
    return None


def _secret(text: str) -> bool:
    """A secret by `holds_secret` (read with "pin" verbs set aside) or by the names it misses."""
    unpinned = _PIN_AFTER.sub(r"\1 fix", _PIN_BEFORE.sub("fix", text))
    return holds_secret(unpinned) or _MORE_SECRETS.search(unpinned) is not None


def _contact_without_person(text: str, names: Collection[str]) -> bool:
    """A phone number, or an e-mail address that is a person's: either points at someone by itself.
    A role mailbox (mods@, support@) passes unless the text ties a person to it."""
    plain = _MARKUP.sub(" ", text)
    if any(_phone_digits(m.group(0)) for m in _PHONE.finditer(plain)):
        return True
    mailboxes = [m.group(1).lower() for m in _EMAIL.finditer(plain)]
    if any(box not in _ROLE_MAILBOXES for box in mailboxes):
        return True
    return bool(mailboxes) and _ties_person(_EMAIL.sub(" ", text), names)


def _phone_digits(candidate: str) -> bool:
    """Whether a candidate holds a phone number's 9 to 15 digits (and is no IP address)."""
    if re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){3}", candidate.strip()):
        return False
    return 9 <= sum(c.isdigit() for c in candidate) <= 15
