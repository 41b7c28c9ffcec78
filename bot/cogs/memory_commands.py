"""People's own memory commands: /facts, /forget and /memory (opt-out, opt-in, status).

Every answer is ephemeral, and buttons answer only the person who ran the command. The views here are
reused by the admin cog. Custom ids are stable ("facts:prev", "forget:confirm", ...) so tests can press them.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.adminlog import plural
from bot.client import RESTARTING, MemoryBot
from bot.cogs.answers import Reply, answer
from bot.cogs.errors import report_error
from bot.discord_text import speaker_name
from bot.memory.models import (
    MAX_FACT_CHARS,
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

log = logging.getLogger(__name__)

PAGE_SIZE = 10
PAGE_CHARS = 1_800  # a page's facts, leaving room in Discord's 2,000 characters for heading and footer
CHOICE_NAME_CHARS = 100
PAGER_TIMEOUT_SECONDS = 300.0
CONFIRM_TIMEOUT_SECONDS = 60.0
OPTOUT_TIMEOUT_SECONDS = 120.0
MAX_LISTED = 1_000  # facts read for one listing; a person has far fewer

NOT_YOURS = "These buttons are not yours."
REFUSE_OTHERS_GUILD = "You can only see your own facts here; seeing someone else's needs Manage Server."
REFUSE_OTHERS_DM = "In DMs I can only show your own facts."
NOTHING_FORGOTTEN = "Nothing was forgotten."
NOTHING_FORGOTTEN_TIMEOUT = "Nothing was forgotten (timed out)."


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
    """'said in <#12> · [message](link)', 'said in our DMs', or that it is not known."""
    said = [s for s in fact.sources if not s.confirms and s.origin is not None]
    if not said or fact.audience_keys is None:
        where = "where: not recorded (used only in DMs with you)"
    elif guild_id_of(fact.scope) is None:
        where = "said in our DMs"
    else:
        channels = dict.fromkeys(f"<#{s.origin.channel_id}>" for s in said if s.origin is not None)
        where = "said in " + ", ".join(channels)
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


def paginate(facts: list[Fact], *, per_page: int = PAGE_SIZE, chars: int = PAGE_CHARS) -> list[list[Fact]]:
    """Facts in pages of at most `per_page` that fit in one message, whole texts and all."""
    pages: list[list[Fact]] = [[]]
    size = 0
    for fact in facts:
        entry = len(fact_entry(fact)) + 1
        if pages[-1] and (len(pages[-1]) >= per_page or size + entry > chars):
            pages.append([])
            size = 0
        pages[-1].append(fact)
        size += entry
    return pages


def format_facts_page(heading: str, facts: list[Fact], page: int, pages: int, total: int) -> str:
    """One page of facts (page is 0-based) with a 'Page 1/3 · 27 facts' footer."""
    lines = [
        f"**{heading}**",
        *(fact_entry(f) for f in facts),
        "",
        f"Page {page + 1}/{pages} · {plural(total, 'fact')}",
    ]
    return "\n".join(lines)


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


class FactsPager(OwnedView):
    """First/Previous/Next/Last through a person's facts, with where each was learned; each press
    re-reads, so forgotten facts disappear. Your own facts get a Correct menu.

    `visible` keeps only the facts the caller may see (someone else's facts only where the caller could
    read what was said); None shows them all.
    """

    def __init__(
        self,
        origin: discord.Interaction,
        memory: MemoryService,
        *,
        scope: str,
        subject_id: int,
        heading: str,
        empty: str,
        visible: Callable[[Fact], bool] | None = None,
        timeout: float | None = None,
    ) -> None:
        # Read at call time (not as a default value) so operators and tests can change the module constant.
        super().__init__(origin, timeout=timeout if timeout is not None else PAGER_TIMEOUT_SECONDS)
        self.memory = memory
        self.scope = scope
        self.subject_id = subject_id
        self.heading = heading
        self.empty = empty
        self.visible = visible
        self.correctable = subject_id == origin.user.id
        self.page = 0
        self.pages = 1
        self.shown: list[Fact] = []

    async def render(self) -> str:
        """The current page's text; clamps the page and sets which controls are usable."""
        facts = await self.memory.list_facts(self.scope, str(self.subject_id), limit=MAX_LISTED)
        if self.visible is not None:
            facts = [f for f in facts if self.visible(f)]
        pages = paginate(facts)
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
        self._offer_corrections()
        if not facts:
            return self.empty
        return format_facts_page(self.heading, self.shown, self.page, self.pages, len(facts))

    def _offer_corrections(self) -> None:
        for item in [c for c in self.children if isinstance(c, CorrectMenu)]:
            self.remove_item(item)
        if self.correctable and self.shown:
            self.add_item(CorrectMenu(self, self.shown))

    async def send(self) -> None:
        """Answer the command with the first page; buttons only when there is more than one page."""
        await answer(self.origin, self._first_page())

    async def _first_page(self) -> Reply:
        content = await self.render()
        if self.pages > 1 or (self.correctable and self.shown):
            if self.pages == 1:  # nothing to page through: only the Correct menu
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
        await interaction.response.send_modal(CorrectFact(self.pager.memory, fact))


class CorrectFact(discord.ui.Modal, title="Correct a fact"):
    """The fact's text, to edit; on submit it is replaced, re-embedded, and the old text is gone."""

    def __init__(self, memory: MemoryService, fact: Fact) -> None:
        super().__init__(custom_id="correct:modal")
        self.memory = memory
        self.fact = fact
        self.text: discord.ui.TextInput[CorrectFact] = discord.ui.TextInput(
            label=f"Fact #{fact.id}",
            custom_id="correct:text",
            style=discord.TextStyle.paragraph,
            default=fact.text,
            max_length=MAX_FACT_CHARS,
        )
        self.add_item(self.text)

    async def on_submit(self, interaction: discord.Interaction, /) -> None:
        async def correct() -> Reply:
            name = speaker_name(interaction.user)
            try:
                fixed = await self.memory.correct_fact(
                    self.fact.scope, str(interaction.user.id), name, self.fact.id, self.text.value
                )
            except ValueError as exc:  # empty, or longer than a fact may be
                return Reply(f"{str(exc).capitalize()}; nothing was changed.")
            if fixed is None:
                return Reply(f"Fact #{self.fact.id} is no longer one of yours here; nothing was changed.")
            return Reply(f"Corrected #{fixed.id}: {fixed.text}")

        await answer(interaction, correct())

    async def on_error(self, interaction: discord.Interaction, error: Exception, /) -> None:  # type: ignore[override]  # a modal's errors come without an item
        await report_error(interaction, error)


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
    memory: MemoryService, scope: str, user_id: int, current: str
) -> list[app_commands.Choice[int]]:
    """Autocomplete over one person's active facts in this scope, matched on text or id."""
    facts = await memory.search_own_facts(scope, str(user_id), str(current or ""))
    return [app_commands.Choice(name=choice_name(f), value=f.id) for f in facts[:25]]


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
    memory_group = app_commands.Group(name="memory", description="Whether I remember what you say here")

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
            subject_id=subject.id,
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
