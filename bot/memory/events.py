"""What the engine tells its listeners (the admin log, tests): one type per kind of event.

Each carries exactly its own fields, so a listener reads `event.changes` instead of digging a dict, and a
type checker sees a misspelt field. None carries a fact's text: events go to admin channels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from bot.memory.models import AppliedChange


@dataclass(frozen=True)
class Learned:
    """A flush (or a request to remember, `asked`) changed memory."""

    kind: ClassVar[str] = "flush"
    scope: str
    changes: list[AppliedChange]
    messages: int
    asked: bool = False  # the person asked for it (and was answered): no notice tells them again


@dataclass(frozen=True)
class Forgotten:
    """Facts were deleted: by their owner, an admin (`actor`), or because their source was deleted."""

    kind: ClassVar[str] = "forgotten"
    scope: str
    user_id: str
    count: int
    everything: bool = False
    actor: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class OptedOut:
    kind: ClassVar[str] = "opted_out"
    scope: str
    user_id: str


@dataclass(frozen=True)
class OptedIn:
    kind: ClassVar[str] = "opted_in"
    scope: str
    user_id: str


@dataclass(frozen=True)
class ModelFailed:
    """A flush's model call failed for good; its messages stay buffered (`pending`)."""

    kind: ClassVar[str] = "model_error"
    scope: str
    purpose: str
    error: str
    pending: int
    key_rejected: bool = False


@dataclass(frozen=True)
class Skipped:
    """Messages of one channel not learned from: refused by the model (safety), or after repeated
    unusable answers even when read apart from the rest."""

    kind: ClassVar[str] = "skipped"
    scope: str
    messages: int
    refused: bool
    error: str = ""
    channel_id: str = ""


MemoryEvent = Learned | Forgotten | OptedOut | OptedIn | ModelFailed | Skipped
