"""Whether a first-person clause states one of the things about a person that last and that people ask
about: where they live, their work, their animals, the languages they speak, what they eat or cannot.

A choosing model's selection is followed, but a small one passes most statements over: in
bench/local_bot.py's run (2026-11-28, Qwen2.5 1.5B through the README's server) it chose 4 of a
flush's 12 lines, and "I live in Porto", "my cat Miso just turned three", "I have a parrot called
Kiwi", "I live in Oslo" and "my dog Pixel loves the snow" were never learned. Such a clause is written
when the bot can write it (`selection._passed_over`), whatever the model chose: it is what a member
expects the bot to know, and its forms are plain ("I live in ...", "I work as ...", "my dog ..."), not
a moment of the day ("I had pasta for lunch", "I'm home now"), which only the model's choice keeps.
"""

from __future__ import annotations

import re

from bot.memory.implied_subject import OCCUPATIONS

_ANIMALS = (
    r"dog|dogs|puppy|cat|cats|kitten|parrot|bird|birds|rabbit|bunny|hamster|guinea pig|tortoise|turtle"
    r"|snake|lizard|gecko|horse|pony|ferret|rat|rats|goldfish|fish|chickens|hens|goat"
)
_LANGUAGES = (
    r"english|spanish|french|german|portuguese|italian|dutch|japanese|chinese|mandarin|cantonese|korean"
    r"|arabic|turkish|russian|polish|swedish|norwegian|danish|finnish|greek|hindi|urdu|swahili|hebrew"
    r"|welsh|irish|catalan|basque|czech|ukrainian|vietnamese|thai|tagalog|indonesian|persian|farsi"
)
_LASTING = re.compile(
    # where they live
    r"^i\s+(?:live|lived|grew up|was born)\s+(?:in|on|near|by|at)\b|^i\s*(?:'m|’m| am)\s+(?:based|from)\s"
    # their work
    r"|^i\s+(?:work|worked)\s+(?:as|at|for|in|on)\b|^i\s+(?:teach|run|own|manage)\s"
    # their animals
    rf"|^my\s+(?:\w+\s+)?(?:{_ANIMALS})\b|^i\s+(?:have|'ve got|’ve got|adopted|got|rescued)\s+(?:an?|two|three"
    rf"|\w+)\s+(?:\w+\s+)?(?:{_ANIMALS})\b"
    # languages
    rf"|^i(?:\s+speak|\s+am learning|\s*['’]m learning)\s+(?:\w+\s+)?(?:{_LANGUAGES})\b"
    # what they eat or cannot
    r"|^i\s*(?:'m|’m| am)\s+(?:\w+\s+)?(?:vegan|vegetarian|pescatarian|allergic|lactose intolerant|coeliac"
    r"|celiac|gluten[- ]free)\b|^i\s+(?:don['’]t|do not|can['’]t|cannot)\s+eat\b",
    re.I,
)
_OCCUPATION = re.compile(r"^i\s*(?:'m|’m| am)\s+(?:an?\s+)?(?P<words>(?:[\w-]+\s*){1,3})", re.I)


def lasting(clause: str) -> bool:
    """Whether a first-person `clause` states where its speaker lives, their work, their animals, a
    language they speak or what they eat (see the module)."""
    if _LASTING.search(clause):
        return True
    job = _OCCUPATION.match(clause)  # "I'm a nurse", "I'm a data analyst at ..."
    return job is not None and any(word.lower() in OCCUPATIONS for word in job.group("words").split())
