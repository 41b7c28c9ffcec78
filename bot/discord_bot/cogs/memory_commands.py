"""People's own memory commands: /facts, /forget and /memory (opt-out, opt-in, settings, status, export,
recap), and the private note to people who asked to be told when something about them is learned.

Every answer is ephemeral, and buttons answer only the person who ran the command. The views are ui/'s,
shared with the admin cog. Custom ids are stable ("facts:prev", "recap:next", "forget:confirm", ...) so
tests can press them.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from datetime import datetime, timedelta

import discord
from discord import app_commands
from discord.ext import commands

from bot.discord_bot.adminlog import plural
from bot.discord_bot.answers import Reply, answer
from bot.discord_bot.channel_option import NOT_A_CATEGORY, ChannelOption
from bot.discord_bot.client import MemoryBot
from bot.discord_bot.discord_text import display_name, speaker_name
from bot.discord_bot.ui.confirm import ConfirmView
from bot.discord_bot.ui.fact_entries import fact_choices, fact_entry
from bot.discord_bot.ui.forgetting import forget_all, forget_all_question, forgot_text
from bot.discord_bot.ui.listings import EpisodesPager, FactsPager
from bot.discord_bot.visibility import may_view_facts, readable_by, readable_here
from bot.memory.events import Learned, MemoryEvent
from bot.memory.models import COMMUNITY_ID, Decision, PersonSettings, guild_id_of, guild_scope, iso, utcnow
from bot.memory.portable import fact_record
from bot.memory.recall import Audience
from bot.memory.timespan import SINCE_EXAMPLES, said_start, since_start

log = logging.getLogger(__name__)

OPTOUT_TIMEOUT_SECONDS = 120.0
RECAP_DAYS = 7  # what /memory recap covers when not told since when

REFUSE_OTHERS_GUILD = "You can only see your own facts here; seeing someone else's needs Manage Server."
REFUSE_OTHERS_DM = "In DMs I can only show your own facts."
RECAP_IN_DMS = (
    "There is nothing to recap in DMs: I keep what a server's channels talked about, not our chats."
)
RECAP_COMMUNITY_OFF = (
    "I don't keep recaps of what channels talk about (community memory is off for this bot)."
)
RECAP_MEMORY_OFF = "Memory is off in this server, so I keep no recap of what was discussed here."
LEARNED_NOTE = "I just learned something about you in {place}:"
LEARNED_NOTE_END = (
    "See everything with /facts there, remove one with /forget fact, and turn these notes off with "
    "/memory settings."
)
NOTED_DECISIONS = (Decision.ADD, Decision.KEEP, Decision.MERGE, Decision.INVALIDATE)
UNKNOWN_SINCE = "I can't read “{since}” as a time in the past. Try, in English: " + SINCE_EXAMPLES + "."


def recap_start(since: str | None, now: datetime) -> datetime | None:
    """Where a recap starts: where `since` says ("2 weeks", "yesterday", "Monday", "20 Nov"), or
    RECAP_DAYS ago; None when it cannot be read."""
    if since is None:
        return now - timedelta(days=RECAP_DAYS)
    return since_start(since, now)


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
        self._notes: set[asyncio.Task[None]] = set()

    async def cog_load(self) -> None:
        self.bot.memory.add_listener(self.on_memory_event)

    async def cog_unload(self) -> None:
        self.bot.memory.remove_listener(self.on_memory_event)

    # ---- telling people what was learned about them --------------------------------------------------

    def on_memory_event(self, event: MemoryEvent) -> None:
        """A flush learned something about people who asked to be told: a private note to each."""
        if not isinstance(event, Learned) or event.asked:
            return
        learned: dict[str, list[int]] = {}
        for change in event.changes:
            if change.fact_id is None or change.decision not in NOTED_DECISIONS:
                continue
            if (
                change.user_id != COMMUNITY_ID
                and self.bot.memory.person(change.scope, change.user_id).notify_learned
            ):
                learned.setdefault(change.user_id, []).append(change.fact_id)
        for user_id, fact_ids in learned.items():
            task = asyncio.create_task(self.tell_learned(event.scope, user_id, fact_ids))
            self._notes.add(task)
            task.add_done_callback(self._notes.discard)

    async def tell_learned(self, scope: str, user_id: str, fact_ids: list[int]) -> None:
        """A DM listing what was just learned about a person (nothing when their DMs are closed)."""
        facts, _ = await self.bot.memory.used_memories(scope, fact_ids, (), audience=Audience(user_id))
        if not facts:  # forgotten or changed meanwhile
            return
        guild_id = guild_id_of(scope)
        guild = self.bot.get_guild(guild_id) if guild_id is not None else None
        place = "our DMs" if guild_id is None else f"**{guild.name if guild else 'a server'}**"
        text = "\n".join(
            [LEARNED_NOTE.format(place=place), *(fact_entry(f) for f in facts), LEARNED_NOTE_END]
        )
        try:
            user = self.bot.get_user(int(user_id)) or await self.bot.fetch_user(int(user_id))
            await user.send(text[:2000])
        except discord.HTTPException as exc:  # DMs closed, or the person gone: the note is not sent
            log.info("could not tell %s what was learned about them: %s", user_id, exc)

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

    @memory_group.command(name="settings", description="Your own memory settings here; see or change them")
    @app_commands.describe(
        use_in_replies="Use what I remember about you in my replies here",
        tell_me="Tell you privately (by DM) when I learn something about you here",
        remember_me="Remember what you say here (off: you're opted out)",
    )
    async def settings(
        self,
        interaction: discord.Interaction,
        use_in_replies: bool | None = None,
        tell_me: bool | None = None,
        remember_me: bool | None = None,
    ) -> None:
        await answer(interaction, self._settings(interaction, use_in_replies, tell_me, remember_me))

    async def _settings(
        self,
        interaction: discord.Interaction,
        use_in_replies: bool | None,
        tell_me: bool | None,
        remember_me: bool | None,
    ) -> Reply:
        scope, user_id = guild_scope(interaction.guild_id), str(interaction.user.id)
        memory = self.bot.memory
        before = memory.person(scope, user_id)
        chosen = PersonSettings(
            before.in_replies if use_in_replies is None else use_in_replies,
            before.notify_learned if tell_me is None else tell_me,
        )
        if chosen != before:
            await memory.set_person(scope, user_id, chosen)
        opted_out = memory.is_opted_out(scope, user_id)
        if remember_me is not None and remember_me == opted_out:
            await memory.set_opt_out(scope, user_id, not remember_me)
        return Reply(settings_text(chosen, opted_out=memory.is_opted_out(scope, user_id), dm=scope == "dm"))

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
        since="From when: 3 days, 2 weeks, yesterday, Monday, 20 Nov, 2026-11-20 (default: the last 7 days)",
    )
    async def recap(
        self,
        interaction: discord.Interaction,
        channel: ChannelOption | None = None,
        since: app_commands.Range[str, 1, 100] | None = None,
    ) -> None:
        refusal = self._no_recap(interaction, channel)
        now = utcnow()
        start = recap_start(since, now)
        if refusal is None and start is None:
            refusal = UNKNOWN_SINCE.format(since=discord.utils.escape_markdown(since or ""))
        if refusal is not None or start is None:
            await interaction.response.send_message(refusal, ephemeral=True)
            return
        where = "" if channel is None else f" in {channel.mention}"
        when = said_start(start, now)
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
        own = self.bot.memory.person(scope, str(interaction.user.id))
        if not own.in_replies:
            lines.append(
                "You asked me not to use what I remember about you in replies here (/memory settings)."
            )
        if own.notify_learned:
            lines.append("I tell you by DM when I learn something about you here.")
        if interaction.guild_id is not None:
            settings = self.bot.memory.guild(str(interaction.guild_id))
            lines.append(
                "Memory is on in this server." if settings.memory_enabled else "Memory is off in this server."
            )
            channels = {str(interaction.channel_id), str(getattr(interaction.channel, "parent_id", None))}
            if channels & settings.ignored_channel_ids:
                lines.append("This channel is ignored: nothing said here is remembered.")
        return Reply("\n".join(lines))


def settings_text(settings: PersonSettings, *, opted_out: bool, dm: bool) -> str:
    """The three settings in words, as they now are."""
    here = "in our DMs" if dm else "in this server"
    lines = [
        f"Your memory settings {here}:",
        "• Use what I remember about you in replies: "
        + ("**on**" if settings.in_replies else "**off** (I still remember, unless you opt out)"),
        "• Tell you by DM when I learn something about you: "
        + ("**on**" if settings.notify_learned else "**off**"),
        "• Remember what you say: "
        + ("**off** (opted out; what I already know stays until you /forget it)" if opted_out else "**on**"),
        "Change them with the options of /memory settings.",
    ]
    return "\n".join(lines)


async def setup(bot: MemoryBot) -> None:
    await bot.add_cog(MemoryCommands(bot))
