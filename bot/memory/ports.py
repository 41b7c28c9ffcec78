"""What the memory engine needs from storage, defined where the engine is.

`Storage`, the queries and writes the engine makes (each one atomic), and `StorageWorker`, which runs
them off the event loop. The `storage` package beside `memory` implements them on SQLite and on
PostgreSQL (a package per backend); another backend is a sibling package implementing the same two
protocols. Its errors are its own (`bot/storage/errors.py`, DatabaseError and its kinds): the engine
names none of them, and the composition root tells them from a model's (`bot/app.py`, `failures`).
The model side is `model_ports.py` beside this.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import pydantic

from bot.memory.models import (
    AppliedChange,
    BufferedMessage,
    Episode,
    Fact,
    GuildSettings,
    NewEpisode,
    NewFact,
    Operation,
    PendingChannel,
    PersonSettings,
    Taught,
)

T = TypeVar("T", bound=pydantic.BaseModel)
P = ParamSpec("P")
R = TypeVar("R")


class Storage(Protocol):
    """The storage the engine (and the bot and CLI, through the engine's worker) reads and writes.

    Every method is one atomic unit of work. Scopes are "dm", "terminal" or "guild:<id>"; a person is (scope, user_id).
    """

    # ---- the message buffer ----------------------------------------------------------------------------

    def buffer_messages(self, messages: Sequence[tuple[BufferedMessage, float]]) -> int:
        """Append (message, captured_at) pairs in order; a message id seen before is ignored."""
        ...

    def update_pending_message(self, message_id: str, content: str) -> bool: ...

    def delete_pending_messages(self, message_ids: Sequence[str]) -> int: ...

    def drop_lone_bot_turns(self) -> int:
        """Drop the bot's buffered turns in channels with no person's message left to give them context."""
        ...

    def pending_channels(self) -> list[PendingChannel]: ...

    def pending_messages(self, channel_id: str, limit: int) -> list[BufferedMessage]:
        """The oldest `limit` buffered messages of a channel, in arrival order."""
        ...

    def mark_attempt(self, message_ids: Sequence[str]) -> None: ...

    # ---- searching -------------------------------------------------------------------------------------

    def knn(
        self, scope: str, user_id: str, vector: Sequence[float], k: int, max_distance: float | None = None
    ) -> list[tuple[Fact, float]]:
        """Exact cosine KNN over one person's active facts, nearest first, with their distances."""
        ...

    def keyword_search(
        self, scope: str, user_id: str, text: str, k: int, *, ignore: Iterable[str] = ()
    ) -> list[Fact]:
        """Active facts of one person matching informative words of `text` (not those in `ignore`), best first."""
        ...

    def person_hits(
        self,
        scope: str,
        user_id: str,
        vector: Sequence[float] | None,
        text: str,
        *,
        pool: int,
        max_distance: float | None,
        ignore: Iterable[str] = (),
    ) -> tuple[list[tuple[Fact, float]], list[Fact]]:
        """`knn(..., pool, max_distance)` and `keyword_search(..., pool, ignore=...)` of one person at once
        (none without a vector, none without text), as recall reads them."""
        ...

    def facts_by_text(
        self, scope: str, user_id: str, texts: Iterable[str], *, all_statuses: bool = False
    ) -> dict[str, Fact]:
        """Facts of one person whose text equals one of `texts` (case-folded), by folded text."""
        ...

    def search_own_facts(self, scope: str, user_id: str, prefix: str, limit: int = 25) -> list[Fact]:
        """Active facts whose text or id contains `prefix` (autocomplete)."""
        ...

    def record_retrievals(self, fact_ids: Sequence[int]) -> None: ...

    # ---- facts -----------------------------------------------------------------------------------------

    def list_facts(
        self,
        scope: str,
        user_id: str,
        *,
        all_statuses: bool = False,
        limit: int = 1000,
        offset: int = 0,
    ) -> list[Fact]:
        """A person's facts in one scope, newest first, with their sources."""
        ...

    def recent_facts(self, scope: str, user_id: str, limit: int) -> list[Fact]:
        """A person's active facts, the most recently stated or confirmed first, with their sources."""
        ...

    def count_facts(self, scope: str, user_id: str, *, all_statuses: bool = False) -> int: ...

    def events(
        self, scope: str, user_id: str | None = None, limit: int = 100, *, offset: int = 0
    ) -> list[dict[str, Any]]:
        """The audit trail of a scope (one person's, or everyone's), newest first: id, fact_id, user_id,
        kind, detail (parsed), actor, at."""
        ...

    def events_per_day(self, scope: str, since: str) -> dict[str, dict[str, int]]:
        """Per UTC day (YYYY-MM-DD) since `since`: facts learned and forgotten in the scope."""
        ...

    def add_use_per_day(self, counts: Sequence[tuple[str, str, str, int]]) -> None:
        """Add (scope, UTC day, what, count) rows to the use per day: a row already there grows by the
        count (several processes add to one day), never is overwritten. Counts only, never a text."""
        ...

    def use_per_day(self, scope: str, since_day: str) -> dict[str, dict[str, int]]:
        """Per UTC day (YYYY-MM-DD) from `since_day` on: the scope's stored counts by what they count."""
        ...

    def get_fact(self, fact_id: int) -> Fact | None: ...

    def export_facts(self, scope: str, user_id: str | None = None) -> list[Fact]:
        """Every fact in a scope (of one person, or everyone's), all statuses, oldest first, with sources."""
        ...

    def correct_fact(
        self, scope: str, user_id: str, fact_id: int, text: str, embedding: Sequence[float], sensitive: bool
    ) -> Fact | None:
        """Replace an active fact's text in place, leaving no trace of the old one: the earlier versions it
        superseded are deleted, and so is every community fact and episode made from one of their
        messages; None when it is not this person's active fact."""
        ...

    def stale_facts(self, limit: int = 50) -> list[tuple[int, str]]:
        """Merged facts still searched with a stand-in vector, oldest first, with their texts."""
        ...

    def stale_episodes(self, limit: int = 20) -> list[tuple[int, str]]:
        """Episodes that lost points since their vector was made, oldest first, with their summaries."""
        ...

    def apply_flush(
        self,
        operations: Sequence[Operation],
        *,
        episodes: Sequence[NewEpisode] = (),
        consumed_message_ids: Sequence[str] = (),
        user_names: dict[tuple[str, str], str] | None = None,
        refreshed: Sequence[tuple[int, Sequence[float]]] = (),
        actor: str = "system",
        read_texts: dict[str, str] | None = None,
        refreshed_episodes: Sequence[tuple[int, str, Sequence[float]]] = (),
    ) -> list[AppliedChange]:
        """Apply consolidation's plan and store the flush's episodes, with the removal of the messages it
        consumed, in one transaction. An episode one of whose messages was deleted, edited or opted out
        of meanwhile is not stored."""
        ...

    def add_facts(self, facts: Sequence[NewFact], *, actor: str = "import") -> list[int]:
        """Store facts as they are (no consolidation), each with its embedding."""
        ...

    def forget(
        self, scope: str, user_id: str, fact_ids: Sequence[int] | None = None, *, actor: str = "system"
    ) -> int:
        """Hard-delete facts (None: all of this person's in this scope) with their history and the facts
        they were merged into; how many of the person's went. Every community fact and episode made from
        one of their messages goes too, and forgetting everything, every one with a message of the person."""
        ...

    def forget_message(
        self,
        message_id: str,
        *,
        community_only: bool = False,
        actor: str = "system",
        why: str = "source deleted",
    ) -> list[tuple[str, str, int]]:
        """A source message was deleted: forget what holds its words, every community fact (with its
        history) and episode made from it included (`community_only`: those alone); (scope, user_id,
        fact_id) of each fact, user_id COMMUNITY_ID for community facts."""
        ...

    def taught_by(self, message_id: str) -> Taught:
        """What `forget_message` would take: the facts holding the message's words, and its episode points."""
        ...

    def forget_scope(self, scope: str, *, actor: str = "system") -> tuple[int, int]:
        """A server's forget-everything: every fact of the scope (everyone's and the community's), every
        episode, every buffered message and its use per day, leaving no trace of the text; opt-outs and
        settings stay. Returns how many facts and episodes went."""
        ...

    # ---- episodes: what a channel talked about (times are ISO texts as `iso()` writes them) -------------

    def episodes_near(
        self,
        scope: str,
        vector: Sequence[float],
        k: int,
        *,
        since: str | None = None,
        until: str | None = None,
        max_distance: float | None = None,
    ) -> list[tuple[Episode, float]]:
        """Exact cosine KNN over one scope's episodes overlapping [since, until), nearest first."""
        ...

    def episodes_between(
        self, scope: str, since: str | None, until: str | None, limit: int = 50
    ) -> list[Episode]:
        """One scope's episodes overlapping [since, until) (None: open at that end), newest first."""
        ...

    def list_episodes(
        self,
        scope: str,
        *,
        channel_ids: Collection[str] | None = None,
        since: str | None = None,
        limit: int = 25,
        offset: int = 0,
    ) -> list[Episode]:
        """One scope's episodes that ended at or after `since`, newest first; with `channel_ids`, those said
        in one of them (a public thread's under its parent channel too, a private thread's under its own
        id only)."""
        ...

    def get_episode(self, episode_id: int) -> Episode | None: ...

    def forget_episode(self, scope: str, episode_id: int, *, actor: str = "system") -> bool:
        """Hard-delete an episode of this scope, recording an event without its text; False if none."""
        ...

    def correct_episode(
        self, scope: str, episode_id: int, summary: str, embedding: Sequence[float], *, actor: str = "system"
    ) -> Episode | None:
        """Replace an episode's summary and vector, leaving no trace of the old words; None if none."""
        ...

    def episode_to_extend(
        self, scope: str, channel_id: str, vector: Sequence[float], since: str, max_distance: float
    ) -> int | None:
        """The channel's latest episode a new chunk of the same talk goes on (ended at or after `since`,
        within `max_distance` of `vector`); None for a new episode."""
        ...

    def learned_from(self, message_id: str) -> bool:
        """Whether anything stored was made from this message (a fact's or an episode's source)."""
        ...

    def points_made_from(self, scope: str, fact_id: int) -> dict[int, int]:
        """Per episode, how many points would go with this community fact (forgotten or corrected)."""
        ...

    # ---- people, servers, state ------------------------------------------------------------------------

    def opted_out(self) -> set[tuple[str, str]]: ...

    def opted_out_among(self, scope: str, user_ids: Iterable[str]) -> set[str]:
        """Which of these people of a scope have opted out."""
        ...

    def set_opt_out(self, scope: str, user_id: str, opted_out: bool) -> int:
        """Record the choice; opting out drops the person's buffered messages (returns how many)."""
        ...

    def user_names(self, scope: str, user_ids: Iterable[str]) -> dict[str, str]: ...

    def person_settings(self) -> dict[tuple[str, str], PersonSettings]:
        """The people whose own settings differ from the defaults, by (scope, user id)."""
        ...

    def save_person_settings(self, scope: str, user_id: str, settings: PersonSettings) -> None: ...

    def set_auto_reply(self, guild_id: str, channel_id: str, replies: bool) -> None:
        """An admin's choice of whether the bot answers every message in a channel without a mention."""
        ...

    def guild_settings(self) -> dict[str, GuildSettings]: ...

    def update_guild_settings(self, guild_id: str, /, **changes: Any) -> GuildSettings:
        """Set memory_enabled, log_channel_id, members_see_others or persona; switching memory off drops
        the server's buffered messages."""
        ...

    def set_channel_ignored(self, guild_id: str, channel_id: str, ignored: bool) -> None: ...

    def set_channel_persona(self, guild_id: str, channel_id: str, persona: str | None) -> None:
        """A channel's own persona (None: the server's is used there again)."""
        ...

    def get_state(self, key: str) -> str | None: ...

    def set_state(self, key: str, value: str) -> None: ...

    def stats(self, scope: str | None = None) -> dict[str, Any]: ...

    # ---- several processes on one database --------------------------------------------------------------

    def claim(self, keys: Sequence[str], owner: str, seconds: float, dead_owners: Sequence[str] = ()) -> bool:
        """Lease every key to `owner` for `seconds` (renewing its own), or none of them if another live
        owner holds one; a dead owner's lease lapses at its deadline, or at once if it is in
        `dead_owners` (holders the caller knows have died)."""
        ...

    def lease_holders(self, keys: Sequence[str]) -> list[str]:
        """The owners of the leases on these keys that have not lapsed (for the caller to judge)."""
        ...

    def release(self, keys: Sequence[str], owner: str) -> None:
        """End `owner`'s leases on these keys (others' leases stay)."""
        ...

    def settings_version(self) -> int:
        """A number that grows with every opt-out, switch or ignored-channel change, in the same
        transaction: a process that sees it change reloads its caches."""
        ...

    # ---- the database itself: health, the embedding model, re-embedding ---------------------------------

    def health(self) -> dict[str, Any]:
        """What `check` reports (backend, versions, schema, embedding); raises when the database is damaged."""
        ...

    def embedding_meta(self) -> tuple[str, int]:
        """The (model, dimensions) the stored vectors were made with."""
        ...

    def word_index_pieces(self) -> int:
        """How many pieces the keyword index is in: a keyword search reads each (a backend whose index
        is one piece, or needs no upkeep, answers 1)."""
        ...

    def vacuum_deleted(self) -> bool:
        """Reclaim the files' space of what was deleted since the last call (PostgreSQL's VACUUM); whether
        it did anything. A backend whose deletes leave nothing behind answers False."""
        ...

    def tidy_word_index(self, pages: int) -> bool:
        """One step of folding the keyword index's pieces into one, about `pages` pages of work; True
        when the step did some. A backend whose index needs no upkeep answers False."""
        ...

    def reembed_unfinished(self) -> bool: ...

    def begin_reembed(self, model: str, dimensions: int) -> int:
        """Start (or resume) re-embedding into `model`; returns the last fact id already done."""
        ...

    def facts_to_reembed(self, after_id: int, limit: int) -> list[tuple[int, str]]: ...

    def count_to_reembed(self, after_fact_id: int, after_episode_id: int) -> int:
        """How many facts and episodes a re-embedding that did these ids has left."""
        ...

    def store_reembedded(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Replace these facts' vectors and record the progress, atomically."""
        ...

    def episodes_reembedded_up_to(self) -> int:
        """The last episode id the re-embedding under way already did (0: none yet)."""
        ...

    def episodes_to_reembed(self, after_id: int, limit: int) -> list[tuple[int, str]]: ...

    def store_reembedded_episodes(self, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Replace these episodes' vectors and record the progress, atomically."""
        ...

    def finish_reembed(self, model: str, dimensions: int) -> None: ...

    def close(self) -> None: ...


class StorageWorker(Protocol):
    """Runs `Storage` calls off the event loop, one at a time, so each call is atomic."""

    async def call(self, fn: Callable[Concatenate[Storage, P], R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """`fn(storage, *args, **kwargs)` on the storage's own thread, its result awaited.

        `fn` is a `Storage` method (`await worker.call(Storage.knn, scope, ...)`) or a function taking
        the storage first that makes several calls in one hop (recall's `gather_hits`).
        """
        ...

    @property
    def row_errors(self) -> tuple[type[Exception], ...]:
        """Errors a call raises because of the values it was given (text the database cannot store),
        not because of the database: writing the same values again fails the same way."""
        ...

    async def close(self) -> None: ...
