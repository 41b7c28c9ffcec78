"""People's own memory commands: /facts, /forget and /memory (opt-out, opt-in, status, export, recap).

Every answer is ephemeral, and buttons answer only the person who ran the command. The views here are
reused by the admin cog. Custom ids are stable ("facts:prev", "recap:next", "forget:confirm", ...) so
tests can press them.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_bot.adminlog import plural
from bot.discord_bot.answers import Reply, answer
from bot.discord_bot.audience import Said
from bot.discord_bot.client import RESTARTING, MemoryBot
from bot.discord_bot.discord_text import speaker_name
from bot.discord_bot.error_replies import report_error
from bot.memory.community import MAX_SUMMARY_CHARS
from bot.memory.consult import MCP_ORIGIN
from bot.memory.models import (
    COMMUNITY_ID,
    COMMUNITY_NAME,
    MAX_FACT_CHARS,
    Episode,
    Fact,
    Source,
    guild_id_of,
    guild_scope,
    is_discord_id,
    iso,
    utcnow,
)
from bot.memory.portable import fact_record
from bot.memory.service import MemoryService
from bot.memory.shared import also_removed, point_links
from bot.memory.timespan import time_span

log = logging.getLogger(__name__)

T = TypeVar("T")
ChannelOption = app_commands.AppCommandChannel | app_commands.AppCommandThread

PAGE_SIZE = 10
EPISODES_PER_PAGE = 5
PAGE_CHARS = 1_800  # a page's facts, leaving room in Discord's 2,000 characters for heading and footer
CHOICE_NAME_CHARS = 100
PAGER_TIMEOUT_SECONDS = 300.0
CONFIRM_TIMEOUT_SECONDS = 60.0
OPTOUT_TIMEOUT_SECONDS = 120.0
MAX_LISTED = 1_000  # facts or episodes read for one listing; a person has far fewer facts
RECAP_DAYS = 7  # what /memory recap covers when not told since when

NOT_YOURS = "These buttons are not yours."
REFUSE_OTHERS_GUILD = "You can only see your own facts here; seeing someone else's needs Manage Server."
REFUSE_OTHERS_DM = "In DMs I can only show your own facts."
NOTHING_FORGOTTEN = "Nothing was forgotten."
NOTHING_FORGOTTEN_TIMEOUT = "Nothing was forgotten (timed out)."
NOT_A_CATEGORY = "Pick a channel or a thread, not a category."
RECAP_IN_DMS = (
    "There is nothing to recap in DMs: I keep what a server's channels talked about, not our chats."
)
RECAP_COMMUNITY_OFF = (
    "I don't keep recaps of what channels talk about (community memory is off for this bot)."
)
RECAP_MEMORY_OFF = "Memory is off in this server, so I keep no recap of what was discussed here."
UNKNOWN_SINCE = (
    "I can't tell when “{since}” is: try yesterday, this week, last week, last month, "
    "in October or 3 days ago."
)


# ---- pure helpers ------------------------------------------------------------------------------------------


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def jump_link(scope: str, source: Source) -> str | None:
    """A link to the message a fact was learned from (it leaves the fact's sources when deleted)."""
    if source.origin is None or not is_discord_id(source.message_id):
        return None
    guild = guild_id_of(scope)
    return f"https://discord.com/channels/{guild or '@me'}/{source.origin.channel_id}/{source.message_id}"


def where_learned(fact: Fact) -> str:
    """'said in <#12> · [message](link)', 'said in our DMs', 'told through MCP' (an agent's `remember`,
    whose origin is no channel), or that it is not known."""
    said = [s for s in fact.sources if not s.confirms and s.origin is not None]
    in_discord = [s for s in said if s.origin != MCP_ORIGIN]
    if not said or fact.audience_keys is None:
        where = "where: not recorded (used only in DMs with you)"
    else:
        places = []
        if in_discord and guild_id_of(fact.scope) is None:
            places.append("said in our DMs")
        elif in_discord:
            channels = dict.fromkeys(f"<#{s.origin.channel_id}>" for s in in_discord if s.origin is not None)
            places.append("said in " + ", ".join(channels))
        if len(in_discord) < len(said):
            places.append("told through MCP")
        where = " · ".join(places)
    links = [link for s in said if (link := jump_link(fact.scope, s))]
    if links:
        where += " · " + " ".join(f"[message {n}]({link})" for n, link in enumerate(links[:3], 1))
    if fact.sensitive:
        where += " · sensitive: used only when I talk with you"
    return where


def fact_entry(fact: Fact) -> str:
    """'#123 · 2024-05-01 · Alice lives in Paris' (the id people pass to /forget, the date, the whole
    text) and, below it, where it was learned."""
    return f"#{fact.id} · {fact.recorded_at[:10]} · {' '.join(fact.text.split())}\n   ↳ {where_learned(fact)}"


def paginate(
    items: Sequence[T], entry: Callable[[T], str], *, per_page: int = PAGE_SIZE, chars: int = PAGE_CHARS
) -> list[list[T]]:
    """Items in pages of at most `per_page` whose entries fit in one message, every entry whole."""
    pages: list[list[T]] = [[]]
    size = 0
    for item in items:
        length = len(entry(item)) + 1
        if pages[-1] and (len(pages[-1]) >= per_page or size + length > chars):
            pages.append([])
            size = 0
        pages[-1].append(item)
        size += length
    return pages


def format_page(heading: str, entries: list[str], page: int, pages: int, total: str) -> str:
    """One page (page is 0-based) with a 'Page 1/3 · 27 facts' footer; `total` counts what is listed."""
    return "\n".join([f"**{heading}**", *entries, "", f"Page {page + 1}/{pages} · {total}"])


def discord_time(moment: str, style: str = "f") -> str:
    """A stored ISO time as Discord's timestamp markup, which each reader sees in their own time zone."""
    return f"<t:{int(datetime.fromisoformat(moment).timestamp())}:{style}>"


def episode_link(episode: Episode) -> str | None:
    """A link to the message an episode began with: its oldest source, the smallest Discord id."""
    guild = guild_id_of(episode.scope)
    ids = [int(m) for m in episode.source_message_ids if is_discord_id(m)]
    if guild is None or not ids:
        return None
    return f"https://discord.com/channels/{guild}/{episode.origin.channel_id}/{min(ids)}"


def episode_entry(episode: Episode, *, with_id: bool = False) -> str:
    """'<#12> · <when it began> · [where it began](link)' (with the id first for admins) and, below it,
    its points, each with a link to the message it comes from."""
    head = [f"#{episode.id}"] if with_id else []
    head += [f"<#{episode.origin.channel_id}>", discord_time(episode.started_at)]
    if (link := episode_link(episode)) is not None:
        head.append(f"[where it began]({link})")
    if not episode.points:
        return " · ".join(head) + "\n" + episode.summary.strip()
    lines = [f"- {' '.join(point.text.split())}" for point in episode.points]
    room = PAGE_CHARS - len(" · ".join(head)) - sum(len(line) + 1 for line in lines)
    for n, source in enumerate(point_links(episode)):  # each point's link, as far as a page holds them
        link = f" [↗]({source})" if source else ""
        if len(link) > room:
            break
        lines[n] += link
        room -= len(link)
    return " · ".join(head) + "\n" + "\n".join(lines)


def recap_start(since: str | None, now: datetime) -> datetime | None:
    """Where a recap starts: the beginning of the span `since` names ("yesterday", "last week",
    "October", "3 days ago"), or RECAP_DAYS ago; None when it names none."""
    if since is None:
        return now - timedelta(days=RECAP_DAYS)
    span = time_span(f"since {since}", now)  # "since" lets a bare month ("October") name its span
    return None if span is None else span[0]


def choice_name(fact: Fact) -> str:
    """An autocomplete label like '#12 · Alice lives in Paris', within Discord's 100 characters."""
    return shorten(f"#{fact.id} · {fact.text}", CHOICE_NAME_CHARS)


def may_view_facts(
    *, caller_id: int, subject_id: int, in_guild: bool, manage_guild: bool, members_see_others: bool
) -> bool:
    """Your own facts always; someone else's only in a server, for managers or where the server allows it."""
    if caller_id == subject_id:
        return True
    return in_guild and (manage_guild or members_see_others)


def readable_by(bot: MemoryBot, interaction: discord.Interaction) -> Callable[[Fact], bool]:
    """Which of someone else's facts the caller may see: not sensitive ones, and only those said where
    the caller can read."""
    guild, member = interaction.guild, interaction.user
    if guild is None or not isinstance(member, discord.Member):
        return lambda fact: False
    return lambda fact: not fact.sensitive and bot.audience.member_can_read(guild, member, fact)


def readable_here(bot: MemoryBot, interaction: discord.Interaction) -> Callable[[Said], bool]:
    """Whether the caller can read, now, where an episode or a community fact was said: every such place,
    or the very channel they ask in (a private thread's own episodes, to those who can ask there)."""
    guild, member = interaction.guild, interaction.user
    if guild is None or not isinstance(member, discord.Member):
        return lambda said: False
    here = frozenset({str(interaction.channel_id)})
    return lambda said: said.audience_keys == here or bot.audience.member_can_read(guild, member, said)


def display_name(user: discord.abc.User) -> str:
    """A name safe to put in bold text (markdown escaped; mentions never ping in our messages anyway)."""
    return discord.utils.escape_markdown(getattr(user, "display_name", None) or user.name)


# ---- views ---------------------------------------------------------------------------------------------------


class OwnerOnlyView(discord.ui.View):
    """Controls only one person may use; anyone else is told so privately."""

    def __init__(self, owner_id: int, *, timeout: float) -> None:
        super().__init__(timeout=timeout)
        self.owner_id = owner_id

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        if getattr(interaction.client, "shutting_down", False):  # the database may already be closed
            await interaction.response.send_message(RESTARTING, ephemeral=True)
            return False
        if interaction.user.id == self.owner_id:
            return True
        await interaction.response.send_message(NOT_YOURS, ephemeral=True)
        return False

    async def on_error(self, interaction: discord.Interaction, error: Exception, item: Any, /) -> None:
        await report_error(interaction, error)


class OwnedView(OwnerOnlyView):
    """Buttons only the person who ran the command may press; on timeout they are disabled."""

    def __init__(self, origin: discord.Interaction, *, timeout: float) -> None:
        super().__init__(origin.user.id, timeout=timeout)
        self.origin = origin

    async def edit_origin(self, **changes: Any) -> None:
        """Edit the message this view was sent with (through the command's token, valid for 15 minutes)."""
        try:
            await self.origin.edit_original_response(**changes)
        except discord.HTTPException as exc:
            log.debug("could not edit an expired view's message: %s", exc)

    async def on_timeout(self) -> None:
        for item in self.children:
            if isinstance(item, discord.ui.Button):
                item.disabled = True
        await self.edit_origin(view=self)


class Pager(OwnedView, Generic[T]):
    """First/Previous/Next/Last through a listing that each press reads again (so what was forgotten
    meanwhile disappears), on pages that fit one message with every entry whole. Subclasses say what is
    listed (`items`), how (`entry`) and what else the page offers (`extras`); `name` prefixes the
    buttons' custom ids ("facts:next")."""

    noun = "fact"
    per_page = PAGE_SIZE

    def __init__(
        self,
        origin: discord.Interaction,
        *,
        name: str,
        heading: str,
        empty: str,
        timeout: float | None = None,
    ) -> None:
        # Read at call time (not as a default value) so operators and tests can change the module constant.
        super().__init__(origin, timeout=timeout if timeout is not None else PAGER_TIMEOUT_SECONDS)
        self.heading = heading
        self.empty = empty
        self.page = 0
        self.pages = 1
        self.shown: list[T] = []
        self._extras: list[discord.ui.Item[Any]] = []
        for button, action in (
            (self.first_page, "first"),
            (self.previous_page, "prev"),
            (self.next_page, "next"),
            (self.last_page, "last"),
        ):
            button.custom_id = f"{name}:{action}"

    async def items(self) -> list[T]:
        """Everything listed, in order (read again at each press)."""
        raise NotImplementedError

    def entry(self, item: T) -> str:
        raise NotImplementedError

    def extras(self) -> list[discord.ui.Item[Any]]:
        """Controls for the page shown besides the page buttons (none by default)."""
        return []

    async def render(self) -> str:
        """The current page's text; clamps the page and sets which controls are usable."""
        items = await self.items()
        pages = paginate(items, self.entry, per_page=self.per_page)
        self.pages = len(pages)
        self.page = max(0, min(self.page, self.pages - 1))
        self.shown = pages[self.page]
        for button, disabled in (
            (self.first_page, self.page == 0),
            (self.previous_page, self.page == 0),
            (self.next_page, self.page >= self.pages - 1),
            (self.last_page, self.page >= self.pages - 1),
        ):
            button.disabled = disabled
        for item in self._extras:
            self.remove_item(item)
        self._extras = self.extras()
        for item in self._extras:
            self.add_item(item)
        if not items:
            return self.empty
        entries = [self.entry(item) for item in self.shown]
        return format_page(self.heading, entries, self.page, self.pages, plural(len(items), self.noun))

    async def send(self) -> None:
        """Answer the command with the first page; buttons only when there is more than one page."""
        await answer(self.origin, self._first_page())

    async def _first_page(self) -> Reply:
        content = await self.render()
        if self.pages > 1 or self._extras:
            if self.pages == 1:  # nothing to page through: only the extras
                for button in (self.first_page, self.previous_page, self.next_page, self.last_page):
                    self.remove_item(button)
            return Reply(content, self)
        self.stop()
        return Reply(content)

    async def _turn(self, interaction: discord.Interaction, page: int) -> None:
        """Show `page` (0-based); `render` clamps it, so a page past the end is the last one."""
        self.page = page

        async def show() -> Reply:
            return Reply(await self.render(), self)

        await answer(interaction, show(), update=True)

    @discord.ui.button(label="First", style=discord.ButtonStyle.secondary, custom_id="facts:first")
    async def first_page(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await self._turn(interaction, 0)

    @discord.ui.button(label="Previous", style=discord.ButtonStyle.secondary, custom_id="facts:prev")
    async def previous_page(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await self._turn(interaction, self.page - 1)

    @discord.ui.button(label="Next", style=discord.ButtonStyle.secondary, custom_id="facts:next")
    async def next_page(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await self._turn(interaction, self.page + 1)

    @discord.ui.button(label="Last", style=discord.ButtonStyle.secondary, custom_id="facts:last")
    async def last_page(self, interaction: discord.Interaction, button: discord.ui.Button[Any]) -> None:
        await self._turn(interaction, MAX_LISTED)


class FactsPager(Pager[Fact]):
    """A person's facts (or the server's community facts) with where each was learned; your own facts
    get a Correct menu.

    `visible` keeps only the facts the caller may see (someone else's facts only where the caller could
    read what was said); None shows them all.
    """

    def __init__(
        self,
        origin: discord.Interaction,
        memory: MemoryService,
        *,
        scope: str,
        subject_id: str,
        heading: str,
        empty: str,
        visible: Callable[[Fact], bool] | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(origin, name="facts", heading=heading, empty=empty, timeout=timeout)
        self.memory = memory
        self.scope = scope
        self.subject_id = subject_id
        self.visible = visible
        self.correctable = subject_id == str(origin.user.id)

    async def items(self) -> list[Fact]:
        facts = await self.memory.list_facts(self.scope, self.subject_id, limit=MAX_LISTED)
        return facts if self.visible is None else [f for f in facts if self.visible(f)]

    def entry(self, item: Fact) -> str:
        return fact_entry(item)

    def extras(self) -> list[discord.ui.Item[Any]]:
        return [CorrectMenu(self, self.shown)] if self.correctable and self.shown else []


class EpisodesPager(Pager[Episode]):
    """A server's episodes, newest first, each summary whole with a link to where it began: those of
    one channel (and its threads) when `channel_id` is given, ending after `since`, and `visible` to the
    caller; with their ids for admins."""

    noun = "episode"
    per_page = EPISODES_PER_PAGE

    def __init__(
        self,
        origin: discord.Interaction,
        memory: MemoryService,
        *,
        name: str,
        scope: str,
        visible: Callable[[Episode], bool],
        heading: str,
        empty: str,
        channel_id: str | None = None,
        since: str | None = None,
        with_ids: bool = False,
    ) -> None:
        super().__init__(origin, name=name, heading=heading, empty=empty)
        self.memory = memory
        self.scope = scope
        self.visible = visible
        self.channel_ids = None if channel_id is None else [channel_id]
        self.since = since
        self.with_ids = with_ids

    async def items(self) -> list[Episode]:
        episodes = await self.memory.list_episodes(
            self.scope, channel_ids=self.channel_ids, since=self.since, limit=MAX_LISTED
        )
        return [e for e in episodes if self.visible(e)]

    def entry(self, item: Episode) -> str:
        return episode_entry(item, with_id=self.with_ids)


class CorrectMenu(discord.ui.Select[FactsPager]):
    """Pick one of your facts on this page to fix its text."""

    def __init__(self, pager: FactsPager, facts: list[Fact]) -> None:
        super().__init__(
            custom_id="facts:correct",
            placeholder="Correct a fact…",
            options=[discord.SelectOption(label=choice_name(f), value=str(f.id)) for f in facts],
        )
        self.pager = pager

    async def callback(self, interaction: discord.Interaction) -> None:
        fact = next((f for f in self.pager.shown if str(f.id) == self.values[0]), None)
        if fact is None:
            await interaction.response.send_message("That fact is no longer on this page.", ephemeral=True)
            return
        await interaction.response.send_modal(fact_form(self.pager.memory, fact))


class CorrectText(discord.ui.Modal):
    """A text to edit, prefilled; on submit `apply` replaces it (the old words leave no trace) and its
    answer is shown, or why nothing was changed when it refuses the text (ValueError)."""

    def __init__(
        self,
        *,
        title: str,
        label: str,
        text: str,
        max_length: int,
        apply: Callable[[discord.Interaction, str], Awaitable[str]],
    ) -> None:
        super().__init__(title=title, custom_id="correct:modal")
        self.apply = apply
        self.text: discord.ui.TextInput[CorrectText] = discord.ui.TextInput(
            label=label,
            custom_id="correct:text",
            style=discord.TextStyle.paragraph,
            default=text,
            max_length=max_length,
        )
        self.add_item(self.text)

    async def on_submit(self, interaction: discord.Interaction, /) -> None:
        async def correct() -> Reply:
            try:
                return Reply(await self.apply(interaction, self.text.value))
            except ValueError as exc:  # empty, or longer than it may be
                return Reply(f"{str(exc).capitalize()}; nothing was changed.")

        await answer(interaction, correct())

    async def on_error(self, interaction: discord.Interaction, error: Exception, /) -> None:  # type: ignore[override]  # a modal's errors come without an item
        await report_error(interaction, error)


def fact_form(
    memory: MemoryService,
    fact: Fact,
    *,
    community: bool = False,
    corrected: Callable[[Fact, str], None] | None = None,
) -> CorrectText:
    """The form that corrects one of the submitter's own facts, or (`community`) a community fact;
    `corrected` hears of each correction made, with what else went in words (episode points made from
    the same messages, `shared.also_removed`)."""

    async def correct(interaction: discord.Interaction, text: str) -> str:
        owner, name = (
            (COMMUNITY_ID, COMMUNITY_NAME)
            if community
            else (str(interaction.user.id), speaker_name(interaction.user))
        )
        # The episode points made from the same messages go with the old words: counted before they do.
        also = also_removed(await memory.points_made_from(fact.scope, fact.id)) if community else ""
        fixed = await memory.correct_fact(fact.scope, owner, name, fact.id, text)
        if fixed is None:
            whose = "a community fact" if community else "one of yours"
            return f"Fact #{fact.id} is no longer {whose} here; nothing was changed."
        if corrected is not None:
            corrected(fixed, also)
        return f"Corrected #{fixed.id}: {fixed.text}" + (f"\nAlso removed {also}." if also else "")

    return CorrectText(
        title="Correct a fact",
        label=f"Fact #{fact.id}",
        text=fact.text,
        max_length=MAX_FACT_CHARS,
        apply=correct,
    )


def episode_form(
    memory: MemoryService, episode: Episode, *, corrected: Callable[[Episode], None]
) -> CorrectText:
    """The form that corrects an episode's summary (an admin's); `corrected` hears of the correction."""

    async def correct(interaction: discord.Interaction, text: str) -> str:
        fixed = await memory.correct_episode(episode.scope, episode.id, text, actor=str(interaction.user.id))
        if fixed is None:
            return f"Episode #{episode.id} is no longer here; nothing was changed."
        corrected(fixed)
        return f"Corrected episode #{fixed.id}:\n{fixed.summary}"

    return CorrectText(
        title="Correct an episode",
        label=f"Episode #{episode.id}",
        text=episode.summary,
        max_length=MAX_SUMMARY_CHARS,
        apply=correct,
    )


class ConfirmView(OwnedView):
    """A one-shot confirmation: on confirm `action` runs and its text replaces the message.

    Cancel (if offered) says nothing was forgotten; on timeout the buttons go away and the message becomes
    `timeout_content` (or stays as it was when that is None).
    """

    def __init__(
        self,
        origin: discord.Interaction,
        action: Callable[[], Awaitable[str]],
        *,
        confirm_label: str,
        confirm_id: str = "forget:confirm",
        cancel_id: str | None = "forget:cancel",
        timeout_content: str | None = NOTHING_FORGOTTEN_TIMEOUT,
        timeout: float | None = None,
    ) -> None:
        super().__init__(origin, timeout=timeout if timeout is not None else CONFIRM_TIMEOUT_SECONDS)
        self.action = action
        self.timeout_content = timeout_content
        confirm: discord.ui.Button[Any] = discord.ui.Button(
            label=confirm_label, style=discord.ButtonStyle.danger, custom_id=confirm_id
        )
        confirm.callback = self._confirm  # type: ignore[method-assign]
        self.add_item(confirm)
        if cancel_id is not None:
            cancel: discord.ui.Button[Any] = discord.ui.Button(
                label="Cancel", style=discord.ButtonStyle.secondary, custom_id=cancel_id
            )
            cancel.callback = self._cancel  # type: ignore[method-assign]
            self.add_item(cancel)

    async def _confirm(self, interaction: discord.Interaction) -> None:
        self.stop()

        async def done() -> Reply:
            return Reply(await self.action())

        await answer(interaction, done(), update=True)

    async def _cancel(self, interaction: discord.Interaction) -> None:
        self.stop()
        await interaction.response.edit_message(content=NOTHING_FORGOTTEN, view=None)

    async def on_timeout(self) -> None:
        if self.timeout_content is None:
            await self.edit_origin(view=None)
        else:
            await self.edit_origin(content=self.timeout_content, view=None)


async def fact_choices(
    memory: MemoryService,
    scope: str,
    user_id: int,
    current: str,
    visible: Callable[[Fact], bool] | None = None,
) -> list[app_commands.Choice[int]]:
    """Autocomplete over one person's active facts in this scope, matched on text or id; with `visible`
    (someone else's facts: `readable_by`), only those the caller may see, as `/facts` shows them."""
    facts = await memory.search_own_facts(scope, str(user_id), str(current or ""))
    shown = [f for f in facts if visible is None or visible(f)]
    return [app_commands.Choice(name=choice_name(f), value=f.id) for f in shown[:25]]


async def forget_all(memory: MemoryService, scope: str, user_id: int, *, actor: str) -> str:
    """Forget everything of a person here; says how much as /facts counted it: '3 facts'.

    Superseded versions go too; they are named apart ('3 facts and 1 earlier version') so the number
    matches the one the confirmation question showed.
    """
    current = await memory.count_facts(scope, str(user_id))
    removed = await memory.forget(scope, str(user_id), None, actor=actor)
    earlier = removed - current
    return plural(current, "fact") + (f" and {plural(earlier, 'earlier version')}" if earlier > 0 else "")


async def forget_all_question(
    interaction: discord.Interaction, memory: MemoryService, scope: str, user_id: int, *, whom: str
) -> Reply:
    """'Forget everything I remember about <whom> (3 facts) ...?' with Confirm/Cancel; the caller acts."""
    count = await memory.count_facts(scope, str(user_id))

    async def forget_everything() -> str:
        return f"Forgot {await forget_all(memory, scope, user_id, actor=str(interaction.user.id))}."

    return Reply(
        f"Forget everything I remember about {whom} ({plural(count, 'fact')}), "
        "including messages I haven't read yet? This can't be undone.",
        ConfirmView(interaction, forget_everything, confirm_label="Forget everything"),
    )


def forgot_text(count: int, fact_id: int | None = None) -> str:
    """'Forgot 1 fact.'; a single fact's other versions go with it, which the text explains."""
    if fact_id is not None and count > 1:
        return f"Forgot {plural(count, 'fact')} (#{fact_id} and its other versions)."
    return f"Forgot {plural(count, 'fact')}."


# ---- the cog -------------------------------------------------------------------------------------------------


class MemoryCommands(commands.Cog, name="memory"):
    """What people can do about their own memories."""

    forget_group = app_commands.Group(
        name="forget", description="Make me forget what I remember about you here"
    )
    memory_group = app_commands.Group(
        name="memory", description="Whether I remember what you say here, and what was discussed"
    )

    def __init__(self, bot: MemoryBot) -> None:
        self.bot = bot

    @app_commands.command(name="facts", description="See what I remember about you (or someone else) here")
    @app_commands.describe(user="Whose facts to show (default: yours)")
    async def facts(self, interaction: discord.Interaction, user: discord.User | None = None) -> None:
        subject = user or interaction.user
        in_guild = interaction.guild_id is not None
        settings = (
            self.bot.memory.guild(str(interaction.guild_id)) if interaction.guild_id is not None else None
        )
        allowed = may_view_facts(
            caller_id=interaction.user.id,
            subject_id=subject.id,
            in_guild=in_guild,
            manage_guild=interaction.permissions.manage_guild,
            members_see_others=settings is not None and settings.members_see_others,
        )
        if not allowed:
            refusal = REFUSE_OTHERS_GUILD if in_guild else REFUSE_OTHERS_DM
            await interaction.response.send_message(refusal, ephemeral=True)
            return
        own = subject.id == interaction.user.id
        name = "you" if own else display_name(subject)
        if not own and interaction.guild_id is not None:
            self.bot.admin_log.post(
                interaction.guild_id, f"{display_name(interaction.user)} looked at the facts about {name}."
            )
        await FactsPager(
            interaction,
            self.bot.memory,
            scope=guild_scope(interaction.guild_id),
            subject_id=str(subject.id),
            heading=f"What I remember about {name} here",
            empty=f"I don't remember anything about {name} here yet.",
            visible=None if own else readable_by(self.bot, interaction),
        ).send()

    @forget_group.command(name="fact", description="Forget one thing I remember about you")
    @app_commands.describe(fact="The fact to forget (start typing to search your facts)")
    async def forget_fact(self, interaction: discord.Interaction, fact: app_commands.Range[int, 1]) -> None:
        async def forget_one() -> Reply:
            count = await self.bot.memory.forget(
                guild_scope(interaction.guild_id),
                str(interaction.user.id),
                [fact],
                actor=str(interaction.user.id),
            )
            return Reply(forgot_text(count, fact) if count else f"No fact #{fact} of yours here.")

        await answer(interaction, forget_one())

    @forget_fact.autocomplete("fact")
    async def _own_fact_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[int]]:
        return await fact_choices(
            self.bot.memory, guild_scope(interaction.guild_id), interaction.user.id, current
        )

    @forget_group.command(name="all", description="Forget everything I remember about you here")
    async def forget_all(self, interaction: discord.Interaction) -> None:
        question = forget_all_question(
            interaction,
            self.bot.memory,
            guild_scope(interaction.guild_id),
            interaction.user.id,
            whom="you here",
        )
        await answer(interaction, question)

    @memory_group.command(name="optout", description="Stop remembering what you say here")
    async def optout(self, interaction: discord.Interaction) -> None:
        scope = guild_scope(interaction.guild_id)
        user_id = interaction.user.id
        already = self.bot.memory.is_opted_out(scope, str(user_id))

        async def forget_everything() -> str:
            done = await forget_all(self.bot.memory, scope, user_id, actor=str(user_id))
            if self.bot.memory.is_opted_out(scope, str(user_id)):  # they may have opted back in since
                return f"You're opted out here, and I forgot everything I knew about you ({done})."
            return f"Forgot {done}."

        view = ConfirmView(
            interaction,
            forget_everything,
            confirm_label="Forget everything too",
            confirm_id="optout:forget",
            cancel_id=None,
            timeout_content=None,
            timeout=OPTOUT_TIMEOUT_SECONDS,
        )
        first = "You were already opted out here" if already else "Okay, you're opted out here"

        async def opt_out() -> Reply:
            if not already:
                await self.bot.memory.set_opt_out(scope, str(user_id), True)
            return Reply(
                f"{first}: I won't remember new messages from you, and the ones I hadn't read yet are "
                "dropped. What I already know stays until you forget it: press the button, or use /forget.",
                view,
            )

        await answer(interaction, opt_out())

    @memory_group.command(name="optin", description="Let me remember what you say here again")
    async def optin(self, interaction: discord.Interaction) -> None:
        scope = guild_scope(interaction.guild_id)
        user_id = interaction.user.id

        async def opt_in() -> Reply:
            if not self.bot.memory.is_opted_out(scope, str(user_id)):
                content = "You're already opted in here."
            else:
                await self.bot.memory.set_opt_out(scope, str(user_id), False)
                content = "Okay, you're opted in again: I may remember what you tell me here."
            if (
                interaction.guild_id is not None
                and not self.bot.memory.guild(str(interaction.guild_id)).memory_enabled
            ):
                content += " (Memory is off in this server right now, so nothing is remembered until an admin turns it on.)"
            return Reply(content)

        await answer(interaction, opt_in())

    @memory_group.command(name="export", description="Get a file of everything I hold about you here")
    async def export(self, interaction: discord.Interaction) -> None:
        scope = guild_scope(interaction.guild_id)
        user_id = str(interaction.user.id)
        await interaction.response.defer(ephemeral=True, thinking=True)
        facts = await self.bot.memory.export_facts(scope, user_id)
        document = {
            "about": "Everything this bot holds about you in this place: each fact, whether it is still "
            "current, when it was learned and from which of your messages, in which channel.",
            "scope": scope,
            "user_id": user_id,
            "exported_at": iso(utcnow()),
            "facts": [fact_record(f, speaker_name(interaction.user)) for f in facts],
        }
        data = json.dumps(document, ensure_ascii=False, indent=1).encode()
        await interaction.followup.send(
            f"Here is everything I hold about you here ({plural(len(facts), 'fact')}, current and earlier "
            "versions).",
            file=discord.File(io.BytesIO(data), filename=f"memory-{scope.replace(':', '-')}-{user_id}.json"),
            ephemeral=True,
        )

    @memory_group.command(name="recap", description="What was discussed, in the channels you can read")
    @app_commands.describe(
        channel="Only this channel (and its threads); leave empty for every channel you can read",
        since="From when: yesterday, this week, last week, October, 3 days ago (default: the last 7 days)",
    )
    async def recap(
        self,
        interaction: discord.Interaction,
        channel: ChannelOption | None = None,
        since: app_commands.Range[str, 1, 100] | None = None,
    ) -> None:
        refusal = self._no_recap(interaction, channel)
        start = recap_start(since, utcnow())
        if refusal is None and start is None:
            refusal = UNKNOWN_SINCE.format(since=discord.utils.escape_markdown(since or ""))
        if refusal is not None or start is None:
            await interaction.response.send_message(refusal, ephemeral=True)
            return
        where = "" if channel is None else f" in {channel.mention}"
        when = discord_time(iso(start), "D")
        await EpisodesPager(
            interaction,
            self.bot.memory,
            name="recap",
            scope=guild_scope(interaction.guild_id),
            visible=readable_here(self.bot, interaction),
            heading=f"What was discussed{where} since {when}",
            empty=f"I remember no conversation{where} since {when} in the channels you can read.",
            channel_id=None if channel is None else str(channel.id),
            since=iso(start),
        ).send()

    def _no_recap(self, interaction: discord.Interaction, channel: ChannelOption | None) -> str | None:
        """Why there is no recap to show here, if there is none."""
        if interaction.guild_id is None:
            return RECAP_IN_DMS
        if not self.bot.memory.policy.community:
            return RECAP_COMMUNITY_OFF
        if not self.bot.memory.guild(str(interaction.guild_id)).memory_enabled:
            return RECAP_MEMORY_OFF
        if channel is not None and channel.type is discord.ChannelType.category:
            return NOT_A_CATEGORY
        return None

    @memory_group.command(
        name="status", description="What I remember about you here, and whether I'm remembering"
    )
    async def status(self, interaction: discord.Interaction) -> None:
        await answer(interaction, self._status(interaction))

    async def _status(self, interaction: discord.Interaction) -> Reply:
        scope = guild_scope(interaction.guild_id)
        count = await self.bot.memory.count_facts(scope, str(interaction.user.id))
        lines = [
            f"I remember {plural(count, 'fact')} about you here (see them with /facts)."
            if count
            else "I don't remember anything about you here yet.",
            "You're opted out: I don't remember new messages from you here."
            if self.bot.memory.is_opted_out(scope, str(interaction.user.id))
            else "You're opted in: I may remember what you say here.",
        ]
        if interaction.guild_id is not None:
            settings = self.bot.memory.guild(str(interaction.guild_id))
            lines.append(
                "Memory is on in this server." if settings.memory_enabled else "Memory is off in this server."
            )
            channels = {str(interaction.channel_id), str(getattr(interaction.channel, "parent_id", None))}
            if channels & settings.ignored_channel_ids:
                lines.append("This channel is ignored: nothing said here is remembered.")
        return Reply("\n".join(lines))


async def setup(bot: MemoryBot) -> None:
    await bot.add_cog(MemoryCommands(bot))
