"""The engine's facade: the one object the front-ends (cogs, terminal, CLI, MCP) call, composing the jobs
of the modules named for them and turning what they did into `MemoryEvent`s for the admin log.

Its own jobs are the hot path and what crosses the others: capture (cheap: the switches are cached),
edits and deletions, recall with opt-outs left out, remembering on request, people's and admins'
control (forget, correct, list, export). It composes `switches` (opt-outs, guild settings, where a
person may be remembered), `flusher` (a channel's chunk read and consolidated), `importing`, `lookup`
(the chat model's search_memory), `upkeep` (the background rounds) and `daily_use` (a server's use per
day, counted as it goes).

Its length: the width of what the front-ends may ask, not work of its own. Most methods are a docstring
and a delegation to the module that does the job; splitting the facade would make every front-end
hold several objects and keep them in step.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from bot.memory.capture import CaptureBuffer
from bot.memory.consolidate import Consolidator
from bot.memory.daily_use import DailyUse, DayUse, day_use
from bot.memory.events import Forgotten, Learned, MemoryEvent, OptedIn, OptedOut
from bot.memory.extract import SELECT
from bot.memory.flushing import Flusher
from bot.memory.importing import ImportTriage, import_facts, sort_for_import
from bot.memory.leases import Holder, Leases
from bot.memory.lookup import LookupRequest, facts_by_id, search_memory
from bot.memory.maintenance import USAGE_STATE
from bot.memory.model_ports import Embedder, JsonModel
from bot.memory.models import (
    COMMUNITY_ID,
    MAX_FACT_CHARS,
    AppliedChange,
    AuditEvent,
    BufferedMessage,
    Episode,
    Fact,
    FactStatus,
    GuildSettings,
    NewFact,
    Origin,
    PersonSettings,
    Taught,
    guild_scope,
    iso,
    utcnow,
)
from bot.memory.policy import MemoryPolicy
from bot.memory.ports import Storage, StorageWorker
from bot.memory.recall import Audience, Participant, Recaller, RecallResult, fuse_allowed, gather_hits
from bot.memory.remembering import Remembered, RememberRequest, remembered_facts
from bot.memory.shared import served_episode, served_fact
from bot.memory.switches import NotHere, Switches
from bot.memory.text import MAX_NAME_CHARS, clean, starts_with_marker, worth_reading
from bot.memory.upkeep import Upkeep

log = logging.getLogger(__name__)

SETTLE_SECONDS = 10.0  # how long a control command waits for queued captures to be written


Listener = Callable[[MemoryEvent], None]


class MemoryService:
    def __init__(
        self,
        store: StorageWorker,
        llm: JsonModel,
        embedder: Embedder,
        policy: MemoryPolicy,
        *,
        usage: Callable[[str | None], dict[str, Any]] | None = None,
        holder: Holder | None = None,
        close_models: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """`holder`: this process's name in the leases and its check for dead holders (by default a
        random name, and every other holder's lease is waited for until its deadline). `close_models`
        closes the model clients when the service closes (by default the JSON model's `aclose`)."""
        self.store = store
        self.llm = llm
        self.embedder = embedder
        self.policy = policy
        self._usage = usage or (lambda scope: {})
        self._close_models = close_models or getattr(llm, "aclose", None)
        self.leases = Leases(store, policy.flush.claim_seconds, holder)
        self.consolidator = Consolidator(
            store,
            llm,
            embedder,
            candidate_distance=policy.consolidation.candidate_distance,
            duplicate_distance=policy.consolidation.duplicate_distance,
            # A change looks as far as recall still finds a fact related to a question; with selection
            # (the mode of the models measured weakest) its words settle what it replaces.
            change_distance=policy.recall.max_distance,
            changes_by_words=policy.extraction == SELECT,
            leases=self.leases,
        )
        recall = policy.recall
        self.recaller = Recaller(
            store,
            embedder,
            facts_per_person=recall.facts_per_person,
            max_distance=recall.max_distance,
            token_budget=recall.token_budget,
            keyword_weight=recall.keyword_weight,
            context_weight=recall.context_weight,
        )
        self.switches = Switches(store, policy.settings_poll_seconds)
        self.flusher = Flusher(
            store,
            llm,
            policy,
            self.leases,
            self.consolidator,
            still_captured=self.switches.still_captured,
            emit=self._emit,
        )
        self.capture_buffer = CaptureBuffer(store, policy.flush, self.flush_channels, accept=self._wanted)
        self._listeners: list[Listener] = []
        self._forgotten_at: dict[tuple[str, str], str] = {}  # forget-all times: older queued messages drop
        self._background: set[asyncio.Task[Any]] = set()
        self.daily_use = DailyUse()  # the use per day not written yet; model calls are added by the models
        self.upkeep = Upkeep(store, policy, self.forget_removed_servers, self.write_use_per_day)
        self.recall_failures = 0

    async def start(self, *, scope: str | None = None) -> None:
        """Load caches and start capturing; overdue buffers from a previous run flush first.

        `scope`: flush only that scope's buffers. A front end of its own (the terminal chat) leaves the
        Discord bot's channels to the bot, which may be running on the same database.
        """
        await self.switches.reload()
        await self.flusher.load_counting()
        await self.store.call(Storage.drop_lone_bot_turns)
        await self.capture_buffer.start(scope)
        self.switches.watch()
        self.upkeep.start()

    @property
    def clock(self) -> Callable[[], float]:
        """What times the reading apart of a chunk (the flusher's; a test sets its own)."""
        return self.flusher.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.flusher.clock = clock

    async def reload_caches(self) -> None:
        await self.switches.reload()

    async def close(self, timeout: float = 10.0, *, record_usage: bool = True) -> None:
        """Persist what is queued, let running flushes end within `timeout`, record usage, close the file.

        `record_usage` is for the bot: operator commands leave the bot's last-run figures alone.
        """
        await self.switches.stop()
        await self.upkeep.stop()
        await self.capture_buffer.stop(timeout)
        if self._background:
            await asyncio.wait(self._background, timeout=2.0)
        if record_usage:
            await self.store.call(Storage.set_state, USAGE_STATE, json.dumps(self._usage(None)))
        try:
            await self.write_use_per_day()
        except Exception as exc:  # counts only: a database that cannot take them must not keep it open
            log.warning("could not write the use per day at close: %s", exc)
        await self.store.close()
        if self._close_models is not None:
            await self._close_models()

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _emit(self, event: MemoryEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                log.exception("memory event listener failed")

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- capture ---------------------------------------------------------------------------------------

    def guild(self, guild_id: str) -> GuildSettings:
        return self.switches.guild(guild_id)

    def is_opted_out(self, scope: str, user_id: str) -> bool:
        return self.switches.is_opted_out(scope, user_id)

    def person(self, scope: str, user_id: str) -> PersonSettings:
        """A person's own settings in a scope: whether their memories serve replies, whether they are told
        what is learned about them."""
        return self.switches.person(scope, user_id)

    async def set_person(self, scope: str, user_id: str, settings: PersonSettings) -> None:
        await self.switches.set_person(scope, user_id, settings)

    def not_here(
        self,
        guild_id: str | None,
        channel_ids: Collection[str] = (),
        *,
        person: tuple[str, str] | None = None,
    ) -> NotHere | None:
        """Why nothing of `person` (scope, user id) said here may be remembered, or None (`Switches.not_here`)."""
        return self.switches.not_here(guild_id, channel_ids, person=person)

    def capture(
        self,
        message: BufferedMessage,
        *,
        guild_id: str | None = None,
        parent_channel_id: str | None = None,
    ) -> bool:
        """Queue a message for memory if it may and should be remembered; never waits on I/O.

        The bot's own turns (`is_bot`) are kept as context for extraction, never as facts.
        """
        channels = (
            (message.channel_id,) if parent_channel_id is None else (message.channel_id, parent_channel_id)
        )
        author = None if message.is_bot else (message.scope, message.author_id)
        if self.not_here(guild_id, channels, person=author) is not None:
            return False
        if self.no_memory(message.content) or not worth_reading(message.content):
            return False
        parent = message.parent_channel_id if parent_channel_id is None else parent_channel_id
        content, name = clean(message.content), clean(message.author_name, MAX_NAME_CHARS)
        if (content, name, parent) != (message.content, message.author_name, message.parent_channel_id):
            message = replace(message, content=content, author_name=name, parent_channel_id=parent)
        self.capture_buffer.submit(message)
        if not message.is_bot:
            self.daily_use.message(message.scope)
        return True

    def _wanted(self, message: BufferedMessage) -> bool:
        """Asked as a queued message is written: an opt-out, switch or forget-all made since its capture wins."""
        forgotten = self._forgotten_at.get((message.scope, message.author_id))
        if forgotten is not None and message.created_at <= forgotten:  # said before a forget-all
            return False
        return self.switches.may_keep(message)

    async def _settle_queue(self) -> None:
        """Let queued captures reach the database before a change that must cover them.

        Bounded, so a database that cannot be written never hangs a command; what is still queued after
        that is checked again when written (`_wanted`).
        """
        try:
            await asyncio.wait_for(self.capture_buffer.wait_written(), SETTLE_SECONDS)
        except TimeoutError:
            log.warning("captured messages are not being written; going on without waiting for them")

    def no_memory(self, content: str) -> bool:
        """Whether the author asked, with the no-memory marker, that this message not be remembered."""
        return starts_with_marker(content, self.policy.no_memory_marker)

    async def message_edited(self, message_id: str, content: str) -> bool:
        """An edit: the message's new words replace the old ones in memory. Returns whether the caller
        should capture the message again, with its new text, to learn it.

        A message still in the buffer only has its text replaced. One something was learned from (a fact,
        a community fact, an episode point) counts as deleted first: what was made from its old words
        goes (from every table, and the files, as a deletion does) and the new text is learned anew,
        which the caller asks by capturing it again. An edit that adds the no-memory marker counts as a
        deletion alone.
        """
        if self.no_memory(content):
            await self.message_deleted(message_id)
            return False
        self.capture_buffer.edit(message_id, clean(content))  # in order with what is queued
        # Written before asking: a flush that read the old text then sees the edit and keeps the message.
        await self._settle_queue()
        if not await self.store.call(Storage.learned_from, message_id):
            return False
        await self.message_deleted(message_id)
        return True

    def reply_edited(self, message_id: str, content: str) -> None:
        """The bot's own buffered reply shows new text (a streamed reply grows): only context, never
        learned from, so nothing else is asked of the store."""
        self.capture_buffer.edit(message_id, clean(content))

    async def message_deleted(self, message_id: str, *, attempts: int = 5) -> int:
        """Drop a deleted message from the buffer and forget what was learned from it.

        A failing write is tried again (a few times, a second apart): a deletion must not be lost.
        """
        self.capture_buffer.delete(message_id)
        for attempt in range(1, attempts + 1):
            try:
                removed = await self.store.call(Storage.forget_message, message_id)
                break
            except Exception:
                if attempt == attempts:
                    raise
                log.warning("forgetting deleted message %s failed; trying again", message_id, exc_info=True)
                await asyncio.sleep(1.0)
        self._forgotten_from(removed, actor=None, reason="source deleted")
        return len(removed)

    async def taught_by(self, message_id: str) -> Taught:
        """What a message taught (its facts, the community's, its episode points), before forgetting it."""
        return await self.store.call(Storage.taught_by, message_id)

    async def forget_taught(self, message_id: str, *, actor: str, community_only: bool = False) -> int:
        """Forget what a message taught at someone's request; how many facts went.

        Its author takes back everything, as deleting it would, and it is not learned later either (it
        leaves the buffer). An admin's request on someone else's message (`community_only`) takes back
        only what the server's memory made of it: the author's own facts stay theirs to forget.
        """
        if not community_only:
            self.capture_buffer.delete(message_id)
        why = "forgotten from the message"
        removed = await self.store.call(
            Storage.forget_message, message_id, community_only=community_only, actor=actor, why=why
        )
        self._forgotten_from(removed, actor=actor, reason="what one message taught")
        return len(removed)

    def _forgotten_from(self, removed: list[tuple[str, str, int]], *, actor: str | None, reason: str) -> None:
        """One admin-log event per person whose facts went with a message."""
        for (scope, user_id), count in Counter((scope, user_id) for scope, user_id, _ in removed).items():
            self._emit(Forgotten(scope, user_id, count, actor=actor, reason=reason))

    # ---- flushing --------------------------------------------------------------------------------------

    def share_calls_between(self, shareable: Callable[[str], bool]) -> None:
        """Let quiet channels of one scope share an extraction call when `shareable` says yes for each
        (the bot: channels every member can read); by default every channel has calls of its own."""
        self.capture_buffer.shareable = shareable

    async def flush_channel(self, channel_id: str) -> int:
        """Extract and consolidate one channel's oldest buffered chunk; returns the number of changes."""
        return await self.flush_channels([channel_id])

    async def flush_channels(self, channel_ids: list[str]) -> int:
        """One extraction over the oldest buffered messages of channels of one scope (`Flusher`)."""
        return await self.flusher.flush_channels(channel_ids)

    async def flush_now(self, channel_id: str | None = None) -> None:
        await self.capture_buffer.flush_now(channel_id)

    # ---- recall ----------------------------------------------------------------------------------------

    async def recall(
        self,
        scope: str,
        people: list[Participant],
        query: str,
        *,
        audience: Audience,
        context: str = "",
        count_retrievals: bool = True,
        vector: list[float] | None = None,
        limit: int | None = None,
        community: bool = True,
        channels: Collection[str] = (),
        about: Collection[str] | None = None,
    ) -> RecallResult:
        """Facts of the people present, opted-out people excluded, and in a server the community's facts
        and episodes (`community`); retrieval counts updated off the hot path.

        The operator's `recall` command looks without counting, so evaluating memory leaves it unchanged.
        """
        present = [p for p in people if not self.is_opted_out(scope, p.user_id)]
        result = await self.recaller.recall(
            scope,
            present,
            query,
            audience=audience,
            context=context,
            vector=vector,
            limit=limit,
            community=community,
            channels=channels,
            about=about,
        )
        if result.fact_ids and count_retrievals:
            self._spawn(self.store.call(Storage.record_retrievals, result.fact_ids))
        if count_retrievals:  # the operator's evaluation is not the server's use
            self.daily_use.recall(scope, result.elapsed_ms)
        return result

    async def search_memory(
        self,
        scope: str,
        people: list[Participant],
        request: LookupRequest,
        *,
        audience: Audience,
        shown: Collection[int] = (),
    ) -> dict[str, Any]:
        """The chat model's lookup of a person in the conversation, or of the server, under the block's
        rules (`lookup.search_memory`)."""
        return await search_memory(self, scope, people, request, audience=audience, shown=shown)

    # ---- people's control ------------------------------------------------------------------------------

    async def remember_now(self, request: RememberRequest) -> Remembered:
        """Store at once what a person asked to be remembered about themselves, consolidated against
        what is known of them; returns what became of it (the fact stored, updated or already known) and
        what was refused.

        Only the person's own words are read (`RememberRequest`; `remembering` says why). Nothing is
        stored for a person who opted out here (the caller says so first: `not_here`).
        """
        proposal = await remembered_facts(self.llm, request)
        remembered = Remembered(refused=proposal.refused)
        if not proposal.facts:
            return remembered
        owner = (request.scope, request.user_id)
        changes = await self.consolidator.run(proposal.facts, user_names={owner: request.name})
        if changes:
            self._emit(Learned(request.scope, changes, 1, asked=True))
        for change in changes:
            fact = await self.store.call(Storage.get_fact, change.fact_id) if change.fact_id else None
            if fact is not None:
                remembered.changes.append((change.decision, fact))
        return remembered

    async def matching_facts(self, scope: str, user_id: str, description: str, limit: int = 5) -> list[Fact]:
        """A person's own active facts that match a description ("that I live in Oslo"), best first."""
        description = clean(description)
        if not worth_reading(description):
            return []
        vector = (await self.embedder.embed([description], "query"))[0]
        hits = await self.store.call(
            gather_hits,
            scope,
            [user_id],
            vector,
            description,
            max_distance=self.policy.recall.max_distance,
            pool=limit,
        )
        return [s.fact for s in fuse_allowed(hits[user_id], Audience.operator(), limit)]

    async def correct_fact(self, scope: str, user_id: str, name: str, fact_id: int, text: str) -> Fact | None:
        """Replace the text of one of a person's active facts; the old text leaves no trace.

        The new text is re-embedded, and classified again: a correction is the person's own explicit
        statement, so a sensitive one is kept, marked. None when the fact is not theirs or not active.
        """
        text = clean(text, len(text))
        if not worth_reading(text):
            raise ValueError("the corrected fact is empty")
        if len(text) > MAX_FACT_CHARS:  # refused whole, never cut
            raise ValueError(f"a fact has at most {MAX_FACT_CHARS} characters; this one has {len(text)}")
        owned = await self.store.call(Storage.get_fact, fact_id)
        if (
            owned is None
            or (owned.scope, owned.user_id) != (scope, user_id)
            or owned.status != FactStatus.ACTIVE
        ):
            return None
        classified = await remembered_facts(
            self.llm, RememberRequest(scope, user_id, name, text, message_id="", origin=Origin(""))
        )
        sensitive = any(f.sensitive for f in classified.facts) if classified.facts else owned.sensitive
        [vector] = await self.embedder.embed([text], "document")
        return await self.store.call(Storage.correct_fact, scope, user_id, fact_id, text, vector, sensitive)

    async def export_facts(self, scope: str, user_id: str | None) -> list[Fact]:
        """Every fact held about a person (None: everyone) in a scope, all statuses, oldest first."""
        return await self.store.call(Storage.export_facts, scope, user_id)

    async def list_facts(
        self, scope: str, user_id: str, *, limit: int = 10, offset: int = 0, all_statuses: bool = False
    ) -> list[Fact]:
        found = await self.store.call(
            Storage.list_facts, scope, user_id, all_statuses=all_statuses, limit=limit, offset=offset
        )
        out = self.withheld(scope) if user_id == COMMUNITY_ID else set()
        return [f for f in found if served_fact(f, out)] if out else found

    async def list_episodes(
        self,
        scope: str,
        *,
        channel_ids: Collection[str] | None = None,
        since: str | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Episode]:
        """A server's episodes, newest first (only those of `channel_ids`, and ending after `since`),
        without the points of people who opted out (`shared.served_episode`)."""
        found = await self.store.call(
            Storage.list_episodes, scope, channel_ids=channel_ids, since=since, limit=limit, offset=offset
        )
        out = self.withheld(scope)
        return [e for e in (served_episode(episode, out) for episode in found) if e is not None]

    def withheld(self, scope: str) -> set[str]:
        """The people of a scope whose words shared memory no longer serves: those who opted out."""
        return self.switches.withheld(scope)

    async def forget_episode(self, scope: str, episode_id: int, *, actor: str) -> bool:
        """Hard-delete one episode of a server; whether it was there."""
        return await self.store.call(Storage.forget_episode, scope, episode_id, actor=actor)

    async def correct_episode(
        self, scope: str, episode_id: int, summary: str, *, actor: str = "system"
    ) -> Episode | None:
        """Replace an episode's summary (an admin's correction), re-embedded; the old words leave no trace."""
        summary = clean(summary, len(summary))
        if not worth_reading(summary):
            raise ValueError("the corrected summary is empty")
        [vector] = await self.embedder.embed([summary], "document")
        return await self.store.call(Storage.correct_episode, scope, episode_id, summary, vector, actor=actor)

    async def points_made_from(self, scope: str, fact_id: int) -> dict[int, int]:
        """Per episode of `scope`, how many of its points go when this community fact is forgotten or
        corrected (those made from the same messages; the episodes keep their other points)."""
        return await self.store.call(Storage.points_made_from, scope, fact_id)

    async def episode(self, scope: str, episode_id: int) -> Episode | None:
        """One episode of this scope (an admin's correction opens on it); None when the scope has none."""
        found = await self.store.call(Storage.get_episode, episode_id)
        if found is None or found.scope != scope:
            return None
        return served_episode(found, self.withheld(scope))

    async def used_memories(
        self, scope: str, fact_ids: Sequence[int], episode_ids: Sequence[int], *, audience: Audience
    ) -> tuple[list[Fact], list[Episode]]:
        """What a reply was given that is still held, as its asker may see it now: the active facts and
        the episodes of `scope` that `audience` allows (the reply's own rule, from current permissions),
        without what people who opted out since said."""
        found = await self.store.call(facts_by_id, list(fact_ids))
        out = self.withheld(scope)
        facts = [
            f
            for f in found
            if f is not None
            and f.scope == scope
            and f.status is FactStatus.ACTIVE
            and f.user_id not in out
            and served_fact(f, out)
            and audience.allows(f)
        ]
        episodes = [await self.episode(scope, episode_id) for episode_id in episode_ids]
        return facts, [e for e in episodes if e is not None and audience.allows(e)]

    async def names(self, scope: str, user_ids: list[str]) -> dict[str, str]:
        """The names people last had in a scope, by id (people never seen are left out)."""
        return await self.store.call(Storage.user_names, scope, user_ids)

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Search vectors for many queries in one request (to pass to `recall(vector=...)`)."""
        return await self.embedder.embed(texts, "query")

    async def bot_state(self, key: str) -> str | None:
        """A value the bot keeps between runs (which commands it last synced, say)."""
        return await self.store.call(Storage.get_state, key)

    async def set_bot_state(self, key: str, value: str) -> None:
        await self.store.call(Storage.set_state, key, value)

    async def count_facts(self, scope: str, user_id: str) -> int:
        return await self.store.call(Storage.count_facts, scope, user_id)

    async def search_own_facts(self, scope: str, user_id: str, text: str, limit: int = 25) -> list[Fact]:
        return await self.store.call(Storage.search_own_facts, scope, user_id, text, limit)

    async def own_fact(self, scope: str, user_id: str, fact_id: int) -> Fact | None:
        """One of a person's active facts in a scope, with its sources; None for any other id (unknown,
        someone else's, another scope's, superseded), so a caller cannot tell them apart."""
        found = await self.store.call(Storage.get_fact, fact_id)
        if found is None or (found.scope, found.user_id) != (scope, user_id):
            return None
        return found if found.status == FactStatus.ACTIVE else None

    async def forget(
        self, scope: str, user_id: str, fact_ids: list[int] | None = None, *, actor: str = ""
    ) -> int:
        """Hard-delete one person's facts in a scope (None: all of them); returns how many went."""
        if fact_ids is None:  # messages still queued for the buffer are part of "everything"
            self._forgotten_at[(scope, user_id)] = iso(utcnow())
            await self._settle_queue()
        count = await self.store.call(Storage.forget, scope, user_id, fact_ids, actor=actor or user_id)
        if count or fact_ids is None:
            self._emit(Forgotten(scope, user_id, count, everything=fact_ids is None, actor=actor or user_id))
        return count

    async def server_removed(self, guild_id: str, *, now: datetime | None = None) -> str | None:
        """The bot was removed from a server (kicked, or the server deleted): its memory is kept for the
        grace period (`removed_server_seconds`), then erased, unless the bot is back by then. Returns
        when it will be erased (ISO), None when it is already counting down."""
        if self.guild(guild_id).removed_at is not None:
            return None
        moment = now or utcnow()
        await self.update_guild(guild_id, removed_at=iso(moment))
        return iso(moment + timedelta(seconds=self.policy.removed_server_seconds))

    async def servers_present(self, guild_ids: Collection[str]) -> None:
        """The bot is in these servers (at start, or added back): none of their memories is erased."""
        for guild_id in guild_ids:
            if self.guild(guild_id).removed_at is not None:
                await self.update_guild(guild_id, removed_at=None)

    async def forget_removed_servers(self, *, now: datetime | None = None) -> list[str]:
        """Erase the memory of every server the bot was removed from longer than the grace period ago,
        as its admins' /memory-admin forget-server would; the guild ids erased."""
        cutoff = iso((now or utcnow()) - timedelta(seconds=self.policy.removed_server_seconds))
        gone = self.switches.removed_before(cutoff)
        for guild_id in gone:
            facts, episodes = await self.forget_server(guild_scope(guild_id), actor="removed")
            await self.update_guild(guild_id, removed_at=None)
            log.warning(
                "erased the memory of server %s, removed more than the grace period ago: %d facts, %d episodes",
                guild_id,
                facts,
                episodes,
            )
        return gone

    async def forget_server(self, scope: str, *, actor: str) -> tuple[int, int]:
        """A server's forget-everything: everyone's facts, the community's, every episode and every
        buffered message of the scope, for good; (facts, episodes) that went. Opt-outs and settings stay."""
        await self._settle_queue()  # what was said before the erase is part of "everything"
        self.daily_use.drop(scope)  # its use per day goes too, counted or stored
        facts, episodes = await self.store.call(Storage.forget_scope, scope, actor=actor)
        self._emit(Forgotten(scope, COMMUNITY_ID, facts, everything=True, actor=actor))
        return facts, episodes

    async def set_opt_out(self, scope: str, user_id: str, opted_out: bool) -> None:
        """Record the choice; an opt-out drops what is buffered of the person, queued messages included."""
        await self.switches.set_opt_out(scope, user_id, opted_out, settle=self._settle_queue)
        self._emit((OptedOut if opted_out else OptedIn)(scope, user_id))

    # ---- guild administration ----------------------------------------------------------------------------

    async def update_guild(self, guild_id: str, **changes: Any) -> GuildSettings:
        """Change a guild's settings; switching memory off drops its buffered messages, queued ones too."""
        return await self.switches.update_guild(guild_id, self._settle_queue, **changes)

    async def set_auto_reply(self, guild_id: str, channel_id: str, replies: bool) -> GuildSettings:
        """Whether the bot answers every message in a channel without a mention (an admin's choice, over
        AUTO_REPLY_CHANNEL_IDS), for every process on the database within a poll."""
        return await self.switches.set_auto_reply(guild_id, channel_id, replies)

    async def set_channel_ignored(self, guild_id: str, channel_id: str, ignored: bool) -> None:
        """Ignore or watch a channel (and its threads); ignoring drops what is buffered there."""
        await self.switches.set_channel_ignored(guild_id, channel_id, ignored, settle=self._settle_queue)

    async def set_persona(self, guild_id: str, channel_id: str | None, persona: str | None) -> str | None:
        """Set (or with None clear) the persona of a server or of one of its channels (`Switches.set_persona`)."""
        return await self.switches.set_persona(guild_id, channel_id, persona)

    async def audit(self, scope: str, *, limit: int = 50, offset: int = 0) -> list[AuditEvent]:
        """A scope's audit trail, newest first, as an admin may read it: ids, kinds, actors, times and the
        counts in each event's detail, never a text (a model's reason, a cause in words)."""
        found = await self.store.call(Storage.events, scope, None, limit, offset=offset)
        return [
            AuditEvent(
                e["id"],
                e["fact_id"],
                e["user_id"],
                e["kind"],
                e["actor"],
                e["at"],
                {k: v for k, v in e["detail"].items() if type(v) is int},
            )
            for e in found
        ]

    async def facts_per_day(self, scope: str, since: str) -> dict[str, dict[str, int]]:
        """Per UTC day since `since`, the facts learned (still held) and forgotten in a scope."""
        return await self.store.call(Storage.events_per_day, scope, since)

    async def use_per_day(self, scope: str, since_day: str) -> dict[str, DayUse]:
        """Per UTC day from `since_day` (YYYY-MM-DD) on, as far as written: messages captured, model calls
        and tokens by purpose, recalls and their p50 / p95 (`daily_use`); days without a count are absent."""
        stored = await self.store.call(Storage.use_per_day, scope, since_day)
        return {day: day_use(day, counts) for day, counts in stored.items()}

    async def write_use_per_day(self) -> int:
        """Add this process's use per day counted since the last batch to the database (the upkeep round
        and close); counts a failed write kept for the next batch. Returns the rows written."""
        rows = self.daily_use.take()
        if not rows:
            return 0
        try:
            await self.store.call(Storage.add_use_per_day, rows)
        except BaseException:
            self.daily_use.give_back(rows)
            raise
        return len(rows)

    async def stats(self, scope: str | None = None) -> dict[str, Any]:
        stats = await self.store.call(Storage.stats, scope)
        stats["pending_messages"] += self.capture_buffer.pending_in_memory(scope)
        stats["model_usage"] = self._usage(scope)
        stats["recall_latency_ms"] = self.recaller.latency_ms()
        return stats

    # ---- import ----------------------------------------------------------------------------------------

    async def sort_for_import(self, facts: list[NewFact]) -> ImportTriage:
        """Which of `facts` to import: new ones, known ones, opted-out people's (`importing`)."""
        return await sort_for_import(self.store, facts)

    async def import_facts(
        self, facts: list[NewFact], *, consolidate: bool = False
    ) -> list[AppliedChange] | int:
        """Store facts brought from elsewhere: embedded in batches, added as they are or consolidated."""
        return await import_facts(
            self.store, self.embedder, self.consolidator, facts, consolidate=consolidate
        )
