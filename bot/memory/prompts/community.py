"""The community's half of a chunk's reading: the server's own facts and what each channel talked about.

Asked for beside people's facts, by extraction (written out) or selection (the lines pointed at), when
community memory is on: the rules each instruction adds, and the answer items each schema then holds.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from bot.memory.prompts.reading import (
    SENSITIVE_CATEGORIES,
    Lenient,
    sensitive_flag,
    valid_items,
)


class CommunityFact(Lenient):
    text: str = Field(description="a durable fact about the server or group itself, not about one person")
    sources: list[str] = Field(
        default_factory=list, description="ids of the messages that state or decide it"
    )
    sensitive: bool = Field(default=False, description=f"true when it is about {SENSITIVE_CATEGORIES}")

    _sensitive = field_validator("sensitive", mode="before")(lambda value: sensitive_flag(value))
    _sources = field_validator("sources", mode="before")(lambda value: [] if value is None else value)


class EpisodePoint(Lenient):
    text: str = Field(
        description="one short point: a topic, decision, plan with its date, open question or link"
    )
    sources: list[str] = Field(default_factory=list, description="ids of the messages it comes from")
    sensitive: bool = Field(default=False, description="true when it touches a sensitive category")

    _sensitive = field_validator("sensitive", mode="before")(lambda value: sensitive_flag(value))
    _sources = field_validator("sources", mode="before")(lambda value: [] if value is None else value)


class ExtractedEpisode(Lenient):
    channel: int = Field(default=1, description="the channel's number (1 when the chunk has one channel)")
    points: list[EpisodePoint] = Field(default_factory=list)

    @field_validator("channel", mode="before")
    @classmethod
    def _channel_number(cls, value: Any) -> Any:
        """ "channel 2" or null are read as 2 and 1."""
        if value is None:
            return 1
        if isinstance(value, str) and (found := re.search(r"\d+", value)):
            return int(found.group())
        return value

    @field_validator("points", mode="before")
    @classmethod
    def _fitting_points(cls, value: Any) -> Any:
        return valid_items(value, EpisodePoint)


COMMUNITY_RULES = """Then, for the community as a whole:
- community: durable facts about the server or group itself, not about one person: its rules,
  recurring events and when they are, shared resources (a server address, a link), and decisions the
  group made. A later decision is a new fact. sources: the ids of the messages that state or decide
  it. Never a secret (password, token), never sensitive, never small talk or the mood of the moment.
- episodes: for each channel, what its conversation was about, as a few short points: topics,
  decisions, plans with their dates, questions left open, links shared. sources: the ids each point
  comes from. Not what people say about themselves (that goes in facts); leave out sensitive details
  and secrets; skip small talk."""

SELECT_COMMUNITY_RULES = """Then, for the community as a whole:
- community: the ids of lines stating a durable fact about the server or group itself: its rules,
  recurring events and when they are, shared resources (a server address, a link), a decision the
  group made.
- episodes: for each channel, what its conversation was about, as a few short points: topics,
  decisions, plans with their dates, questions left open, links shared. sources: the ids each point
  comes from. Not what people say about themselves; leave out sensitive details and secrets."""
