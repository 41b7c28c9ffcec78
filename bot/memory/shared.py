"""How shared memory is served, on every surface alike (the reply's block, the recap, search_memory,
MCP, the admin's lists): whose word a community fact is, where each episode point comes from, and what
an opt-out withholds.

- A community fact made only of lines of people who could decide for the server where they said them
  speaks as the server (`Fact.speaks_for_server`); any other is its authors' word and is shown as theirs
  ("Bob says: ..."), so a member's claim never reads as the server's rule.
- Every point shows the message it comes from, as a jump link.
- A person who opted out (keeping what is known) stops being served at once: a community fact with their
  words and an episode's points made from their lines are withheld (the episode keeps the others), and
  come back if they opt in again. Opting out with erasure deletes them (the store's forget).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from bot.memory.models import COMMUNITY_ID, Episode, Fact, guild_id_of, is_discord_id, summary_of

SOMEONE = "a member"  # the author of a line from before authors were recorded, or of unknown name


def message_link(scope: str, channel_id: str, message_id: str) -> str | None:
    """A Discord jump link to a message (None for ids that are not Discord's: the terminal, tests)."""
    if not is_discord_id(message_id) or not is_discord_id(channel_id):
        return None
    guild = guild_id_of(scope)
    return f"https://discord.com/channels/{guild or '@me'}/{channel_id}/{message_id}"


def point_links(episode: Episode) -> list[str | None]:
    """Each point's link to the first message it comes from, in point order."""
    channel = episode.origin.channel_id
    return [
        message_link(episode.scope, channel, point.source_message_ids[0])
        if point.source_message_ids
        else None
        for point in episode.points
    ]


def said_by(fact: Fact, names: Mapping[str, str]) -> str | None:
    """Whose word a community fact is ("Ana", "Ana and Bob"); None when it speaks as the server (or is
    a person's own fact)."""
    if fact.user_id != COMMUNITY_ID or fact.speaks_for_server:
        return None
    who = [names.get(author, SOMEONE) for author in fact.authors] or [SOMEONE]
    who = list(dict.fromkeys(who))
    return who[0] if len(who) == 1 else ", ".join(who[:-1]) + " and " + who[-1]


def as_said(fact: Fact, names: Mapping[str, str]) -> str:
    """A community fact's text as a member reads it: "Bob says: ..." unless it speaks as the server."""
    who = said_by(fact, names)
    return fact.text if who is None else f"{who} says: {fact.text}"


def served_fact(fact: Fact, opted_out: Collection[str]) -> bool:
    """Whether a fact may be served while the people in `opted_out` (user ids of its scope) are out: a
    community fact holding words of one of them is withheld."""
    return fact.user_id != COMMUNITY_ID or not set(fact.authors) & set(opted_out)


def served_episode(episode: Episode, opted_out: Collection[str]) -> Episode | None:
    """The episode without the points made from lines of people in `opted_out`; None when none is left.
    An episode from before points had their own sources holds one point of all its messages."""
    out = set(opted_out)
    if not out & set(episode.participants):
        return episode
    kept = tuple(p for p in episode.points if not out & set(p.authors))
    if not kept:
        return None
    messages = {m for p in kept for m in p.source_message_ids}
    return replace(
        episode,
        points=kept,
        summary=summary_of([p.text for p in kept]),
        source_message_ids=tuple(m for m in episode.source_message_ids if m in messages),
        participants=tuple(a for a in episode.participants if a not in out),
    )


def also_removed(points: Mapping[int, int]) -> str:
    """What else goes with a community fact, in words: "1 point of episode #12 and 2 points of episode
    #14"; "" when nothing does."""
    parts = [f"{n} point{'s' * (n != 1)} of episode #{episode}" for episode, n in sorted(points.items())]
    if len(parts) > 1:
        return ", ".join(parts[:-1]) + " and " + parts[-1]
    return "".join(parts)
