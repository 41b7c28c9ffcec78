"""Plain data passed between the store, the pipeline and the cogs (no SQL, no Discord)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

DM_SCOPE = "dm"
# `python -m bot chat`: a scope of its own, which Discord can never produce (`guild_scope` gives only
# guild:<id> and dm), so terminal facts never reach Discord and Discord's never reach the terminal.
TERMINAL_SCOPE = "terminal"
# The owner of a server's community facts (rules, events, decisions): a word no Discord id can be.
COMMUNITY_ID = "community"
COMMUNITY_NAME = "The server"
# A fact is one statement: what is longer is refused whole (never cut), wherever it comes from.
MAX_FACT_CHARS = 500


def guild_scope(guild_id: int | str | None) -> str:
    """The scope of a guild's memories, or of direct messages when there is no guild."""
    return f"guild:{guild_id}" if guild_id else DM_SCOPE


def is_discord_id(text: str) -> bool:
    """Discord ids are ASCII digits; str.isdigit alone also accepts '²' or Arabic-Indic digits."""
    return text.isascii() and text.isdigit()


DISCORD_EPOCH_MS = 1_420_070_400_000  # 2015-01-01: where the time in a Discord id counts from


def discord_id_time(message_id: str) -> str | None:
    """When a Discord message was sent, from the time its id carries (ISO, as `iso` writes it); None for
    an id that is not a Discord one (a terminal's, an MCP client's) or carries no plausible time."""
    if not is_discord_id(message_id) or not 17 <= len(message_id) <= 19:
        return None
    ms = (int(message_id) >> 22) + DISCORD_EPOCH_MS
    if ms > utcnow().timestamp() * 1000:
        return None
    return iso(datetime.fromtimestamp(ms / 1000, UTC))


def positive_number(text: str) -> int | None:
    """A whole number of at least 1 that fits a database integer (64-bit), such as a fact id; None for
    anything else ('0', '-3', '١', '99999999999999999999')."""
    if not is_discord_id(text) or len(text.lstrip("0")) > 19:  # past 2^63, and never a 5,000-digit int()
        return None
    return int(text) if 1 <= int(text) < 2**63 else None


def valid_scope(scope: str) -> bool:
    """Whether `scope` is `dm`, `terminal` or `guild:<digits>`."""
    return scope in (DM_SCOPE, TERMINAL_SCOPE) or guild_id_of(scope) is not None


def guild_id_of(scope: str) -> int | None:
    """The guild id of a `guild:<id>` scope; None for DMs and the terminal."""
    prefix, _, rest = scope.partition(":")
    return int(rest) if prefix == "guild" and is_discord_id(rest) else None


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """UTC ISO-8601 with a Z, the one time format stored in the database."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class FactStatus(StrEnum):
    ACTIVE = "active"
    MERGED = "merged"
    INVALIDATED = "invalidated"


class Decision(StrEnum):
    ADD = "ADD"
    KEEP = "KEEP"
    MERGE = "MERGE"
    INVALIDATE = "INVALIDATE"
    DUPLICATE = "DUPLICATE"

    @property
    def has_target(self) -> bool:
        """Whether the decision acts on a known fact (`Operation.target_id`): MERGE, INVALIDATE, DUPLICATE."""
        return self in (Decision.MERGE, Decision.INVALIDATE, Decision.DUPLICATE)


@dataclass(frozen=True)
class Origin:
    """Where a source message was said, which is the audience a fact learned from it was told to.

    `channel_id` is the channel, thread or DM the message was in; a public thread shares its parent
    channel's audience, a private thread is private to its members.
    """

    channel_id: str
    parent_channel_id: str | None = None
    private_thread: bool = False

    @property
    def audience_key(self) -> str:
        """The channel whose readers are this message's audience."""
        if self.private_thread or self.parent_channel_id is None:
            return self.channel_id
        return self.parent_channel_id


@dataclass(frozen=True)
class Source:
    """A message a fact was learned from. `confirms`: it only repeated the fact (a DUPLICATE), adding no
    words; `origin` is None for facts from before provenance was recorded (treated as the most private)."""

    message_id: str
    origin: Origin | None = None
    confirms: bool = False
    author_id: str | None = None  # None for sources from before authors were recorded (schema 7)


@dataclass(frozen=True)
class Fact:
    id: int
    scope: str
    user_id: str
    text: str
    status: FactStatus
    superseded_by: int | None
    valid_from: str | None
    recorded_at: str
    updated_at: str
    retrieval_count: int
    sources: tuple[Source, ...] = ()
    # When its words were said (the newest source message's time), which may be long before it was learned
    # (`recorded_at`): a fact imported or caught up late. None only for a fact never stored.
    said_at: str | None = None
    sensitive: bool = False
    # A community fact made only from messages of people who could decide for the server where they said
    # it (a rule, a decision) speaks as the server; any other is its authors' word (`authors`).
    speaks_for_server: bool = False

    @property
    def said(self) -> str:
        """When the fact was said, else (never stored) when it was learned."""
        return self.said_at or self.recorded_at

    @property
    def source_message_ids(self) -> tuple[str, ...]:
        return tuple(s.message_id for s in self.sources)

    @property
    def authors(self) -> tuple[str, ...]:
        """Who said the words the fact holds (a repeat adds none), in message order; unknown ones left out."""
        return tuple(dict.fromkeys(s.author_id for s in self.sources if not s.confirms and s.author_id))

    @property
    def audience_keys(self) -> frozenset[str] | None:
        """The audiences of the messages whose words the fact holds; None when one of them is unknown.

        A repeat (DUPLICATE) adds no words, so it never widens who may hear the fact: a statement first
        made in a staff channel stays there even if part of it is said again in public.
        """
        wording = [s for s in self.sources if not s.confirms]
        if not wording or any(s.origin is None for s in wording):
            return None
        return frozenset(s.origin.audience_key for s in wording if s.origin is not None)


@dataclass(frozen=True)
class Taught:
    """What one message taught, as forgetting it would take it back: the facts holding its words (its
    author's and the community's, every version) and how many episode points were made from it."""

    facts: tuple[Fact, ...]
    points: int

    def of(self, user_id: str) -> list[Fact]:
        """The facts of one person (COMMUNITY_ID: the server's) among them."""
        return [f for f in self.facts if f.user_id == user_id]

    @property
    def nothing(self) -> bool:
        return not self.facts and not self.points


@dataclass(frozen=True)
class Point:
    """One point of an episode, with the messages it was made from (their ids and authors, in order)."""

    id: int
    text: str
    source_message_ids: tuple[str, ...] = ()
    authors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Episode:
    """What one channel talked about over a span: a short summary (topics, decisions, plans with their
    dates, questions left open, links), who took part, and the messages it was made from.

    Derived data follows its sources: it serves only where its channel could be read, and it goes when
    any of its messages is deleted or one of its participants erases what they said.
    """

    id: int
    scope: str
    origin: Origin
    summary: str
    started_at: str
    ended_at: str
    recorded_at: str
    participants: tuple[str, ...] = ()
    source_message_ids: tuple[str, ...] = ()
    points: tuple[Point, ...] = ()

    # What the audience rule reads of anything it may show (see `Fact`).
    user_id = COMMUNITY_ID
    sensitive = False

    @property
    def audience_keys(self) -> frozenset[str]:
        return frozenset({self.origin.audience_key})


@dataclass
class NewPoint:
    """A point of a new episode; `sources` maps each message it was made from to its author."""

    text: str
    sources: dict[str, str]


def summary_of(points: Sequence[str]) -> str:
    """An episode's summary: its points, one line each."""
    return "\n".join(f"- {point}" for point in points)


@dataclass
class NewEpisode:
    """An episode proposed by a flush; `sources` maps each message it was made from to its author.

    `points` carry their own sources (what the flush writes); an episode given without them (an import,
    a test) is stored as one point holding its whole summary, made from all its messages.
    """

    scope: str
    origin: Origin
    summary: str
    started_at: str
    ended_at: str
    sources: dict[str, str]
    embedding: list[float] | None = None
    points: list[NewPoint] = field(default_factory=list)
    # The channel's latest episode this one goes on (the same talk, a chunk later): its points are
    # added there, unless that episode is gone or full by the time the flush is written.
    continues: int | None = None

    @classmethod
    def of_points(
        cls,
        scope: str,
        origin: Origin,
        points: list[NewPoint],
        started_at: str,
        ended_at: str,
        embedding: list[float] | None = None,
    ) -> NewEpisode:
        """An episode whose summary and sources are those of its points."""
        sources = {mid: author for point in points for mid, author in point.sources.items()}
        summary = summary_of([p.text for p in points])
        return cls(scope, origin, summary, started_at, ended_at, sources, embedding, points)

    def stored_points(self) -> list[NewPoint]:
        """The points to store: those given, else the whole summary as one point of every message."""
        if self.points:
            return self.points
        text = self.summary[2:] if self.summary.startswith("- ") else self.summary
        return [NewPoint(text, dict(self.sources))]


@dataclass(frozen=True)
class ScoredFact:
    """A fact returned by a search; `distance` is cosine distance when the vector search found it."""

    fact: Fact
    score: float
    distance: float | None = None
    keyword_rank: int | None = None


@dataclass(frozen=True)
class BufferedMessage:
    """A captured message waiting for extraction. `is_bot` marks the bot's own turns (context only)."""

    message_id: str
    scope: str
    channel_id: str
    author_id: str
    author_name: str
    content: str
    created_at: str
    is_bot: bool = False
    attempts: int = 0
    parent_channel_id: str | None = None  # a thread's channel, so ignoring that channel covers the thread
    reply_to: str | None = None  # for the bot's turns: the message answered, so deleting it drops them
    private_thread: bool = False  # said in a private thread: facts from it serve that thread only
    # Its author could decide for the server in its channel (Manage Server or Manage Messages there, or a
    # moderator role): a rule or decision made only of such lines speaks as the server.
    decides: bool = False

    @property
    def origin(self) -> Origin:
        return Origin(self.channel_id, self.parent_channel_id, self.private_thread)


@dataclass(frozen=True)
class PendingChannel:
    channel_id: str
    scope: str
    count: int
    first_captured_at: float
    last_captured_at: float


@dataclass
class NewFact:
    """A fact proposed by extraction, before consolidation decides what to do with it."""

    scope: str
    user_id: str
    user_name: str
    text: str
    source_message_ids: list[str]
    valid_from: str | None = None
    embedding: list[float] | None = None
    origins: dict[str, Origin] = field(default_factory=dict)  # where sources not in the buffer were said
    sensitive: bool = False  # kept only because its owner asked; used only in replies to them
    speaks_for_server: bool = False  # a community fact made only of lines of people who decide there
    # When it was said; None: storage takes its buffered messages' time, else their Discord ids', else now.
    said_at: str | None = None


@dataclass
class Operation:
    """One consolidation outcome to apply. `target_id` is the old fact for MERGE/INVALIDATE/DUPLICATE.

    `fallback`: what to apply instead (ADD or KEEP) when, at the write, the target is no longer the
    person's active fact (forgotten while the model thought); None: the operation is then skipped.
    """

    decision: Decision
    fact: NewFact
    target_id: int | None = None
    merged_text: str | None = None
    reason: str = ""
    fallback: Decision | None = None


@dataclass(frozen=True)
class AppliedChange:
    """What a flush did, for the admin log and tests: the decision actually applied."""

    decision: Decision
    scope: str
    user_id: str
    user_name: str
    fact_id: int | None
    target_id: int | None = None


@dataclass(frozen=True)
class AuditEvent:
    """One line of a scope's audit trail as an admin reads it: ids, kind, actor, time and the counts of
    its detail (never a text)."""

    id: int
    fact_id: int | None
    user_id: str
    kind: str
    actor: str
    at: str
    counts: dict[str, int]


@dataclass(frozen=True)
class PersonSettings:
    """A person's own choices in one place (a server, or their DMs); opting out is kept beside them."""

    in_replies: bool = True  # their memories may go into replies (capture follows the opt-out alone)
    notify_learned: bool = False  # they are told privately when something about them is learned


@dataclass
class GuildSettings:
    guild_id: str
    memory_enabled: bool = True
    log_channel_id: str | None = None
    members_see_others: bool = False
    ignored_channel_ids: set[str] = field(default_factory=set)
    persona: str | None = None  # the server's own persona, instead of BOT_PERSONA
    moderator_role_id: str | None = None  # its members' rules and decisions speak as the server
    removed_at: str | None = None  # when the bot was removed from the server (its memory goes later)
    channel_personas: dict[str, str] = field(default_factory=dict)  # channel id -> persona there
    # Auto-reply channels an admin set: True turned on, False turned off (over AUTO_REPLY_CHANNEL_IDS).
    auto_reply: dict[str, bool] = field(default_factory=dict)

    def replies_in(self, channel_ids: Iterable[str], starting: Collection[str] = ()) -> bool:
        """Whether the bot answers every message in one of these channels (a thread, its parent) without
        being mentioned. The first channel with a word on it decides (a thread's own before its parent's):
        an admin's choice for it, else `starting` (AUTO_REPLY_CHANNEL_IDS) naming it."""
        for channel in channel_ids:
            if channel in self.auto_reply:
                return self.auto_reply[channel]
            if channel in starting:
                return True
        return False

    def persona_for(self, channel_id: str, parent_channel_id: str | None = None) -> str | None:
        """The persona in force in a channel: its own, else its parent's (a thread's channel), else the
        server's; None means the bot's default."""
        for channel in (channel_id, parent_channel_id):
            if channel is not None and channel in self.channel_personas:
                return self.channel_personas[channel]
        return self.persona
