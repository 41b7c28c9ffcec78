"""/memory-admin: inspect and purge a member's memories, the server's community facts and episodes,
statistics, the log channel, memory switches and the channels the bot answers without a mention.

Discord shows these commands only to members with Manage Server; the cog checks it again at run time (and
in autocomplete), because a server-side override could expose them and they reveal other people's facts.
Community facts and episodes are listed, corrected and forgotten only where the admin can read what they
were made from. Every action is noted in the admin log, with ids, never texts.

Its length: one slash-command group's handlers, which discord.py binds to one Cog class; the widgets
they use live in `discord_bot/ui/`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import provider_name
from bot.discord_bot.adminlog import plural
from bot.discord_bot.answers import Reply, answer
from bot.discord_bot.channel_option import NOT_A_CATEGORY, ChannelOption
from bot.discord_bot.client import MemoryBot
from bot.discord_bot.discord_text import display_name
from bot.discord_bot.ui.admin_reports import format_stats, format_status
from bot.discord_bot.ui.confirm import ConfirmView
from bot.discord_bot.ui.episode_entries import episode_entry
from bot.discord_bot.ui.fact_entries import fact_choices, fact_entry
from bot.discord_bot.ui.forgetting import forget_all_question, forgot_text
from bot.discord_bot.ui.forms import episode_form, fact_form
from bot.discord_bot.ui.listings import EpisodesPager, FactsPager
from bot.discord_bot.ui.pages import MAX_LISTED
from bot.discord_bot.visibility import readable_by, readable_here
from bot.memory.models import COMMUNITY_ID, Episode, Fact, guild_scope
from bot.memory.shared import also_removed
from bot.memory.switches import PERSONA_MAX_CHARS

T = TypeVar("T")
LOOKUP_SECONDS = 2.0  # a form must open within Discord's 3 seconds: no deferring before it
BUSY = "The database is busy just now; please try again in a moment."


def guild_id(interaction: discord.Interaction) -> int:
    """The server these commands act on (they are guild-only; a DM never gets this far)."""
    if interaction.guild_id is None:
        raise app_commands.NoPrivateMessage
    return interaction.guild_id


class Admin(commands.Cog, name="admin"):
    """Server managers' memory tools."""

    admin_group = app_commands.Group(
        name="memory-admin",
        description="Manage what the bot remembers in this server",
        default_permissions=discord.Permissions(manage_guild=True),
        guild_only=True,
    )
    logchannel_group = app_commands.Group(
        name="logchannel", description="Where the memory log of this server is posted", parent=admin_group
    )
    persona_group = app_commands.Group(
        name="persona",
        description="How the bot presents itself in this server or a channel",
        parent=admin_group,
    )
    moderators_group = app_commands.Group(
        name="moderators",
        description="Whose rules and decisions speak for the server in its memory",
        parent=admin_group,
    )
    community_group = app_commands.Group(
        name="community",
        description="What the bot remembers about the server itself (rules, events, decisions)",
        parent=admin_group,
    )
    autoreply_group = app_commands.Group(
        name="autoreply",
        description="Channels where the bot answers every message, without being mentioned",
        parent=admin_group,
    )
    episodes_group = app_commands.Group(
        name="episodes",
        description="What the bot remembers of the channels' conversations",
        parent=admin_group,
    )

    def __init__(self, bot: MemoryBot) -> None:
        self.bot = bot

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        guild_id(interaction)
        if not interaction.permissions.manage_guild:
            raise app_commands.MissingPermissions(["manage_guild"])
        return True

    def note(self, interaction: discord.Interaction, what: str) -> None:
        """One admin-log line naming the admin: '<admin> disabled memory in this server.'"""
        self.bot.admin_log.post(guild_id(interaction), f"{display_name(interaction.user)} {what}.")

    async def change(
        self, interaction: discord.Interaction, work: Awaitable[object], what: str, content: str
    ) -> None:
        """Apply a setting, note it in the admin log, and confirm it to the admin."""

        async def apply() -> Reply:
            await work
            self.note(interaction, what)
            return Reply(content)

        await answer(interaction, apply())

    async def change_channel(
        self,
        interaction: discord.Interaction,
        channel: ChannelOption,
        work: Callable[[], Awaitable[object]],
        what: str,
        content: str,
    ) -> None:
        """`change` for a setting of one channel or thread; a category is refused before anything runs."""
        if channel.type is discord.ChannelType.category:
            await interaction.response.send_message(NOT_A_CATEGORY, ephemeral=True)
            return
        await self.change(interaction, work(), what, content)

    def visible_of(
        self, interaction: discord.Interaction, user: discord.abc.User
    ) -> Callable[[Fact], bool] | None:
        """Which of `user`'s facts the admin may see, on every list and autocomplete: their own whole
        (None), someone else's without sensitive facts or what was said where they cannot read."""
        return None if user.id == interaction.user.id else readable_by(self.bot, interaction)

    @admin_group.command(name="facts", description="See what the bot remembers about a member")
    @app_commands.describe(user="Whose facts to show")
    async def facts(self, interaction: discord.Interaction, user: discord.User) -> None:
        name = display_name(user)
        self.note(interaction, f"looked at the facts about {name}")
        await FactsPager(
            interaction,
            self.bot.memory,
            scope=guild_scope(guild_id(interaction)),
            subject_id=str(user.id),
            heading=f"What I remember about {name} in this server",
            empty=f"I don't remember anything about {name} in this server.",
            visible=self.visible_of(interaction, user),
        ).send()

    @admin_group.command(name="forget", description="Forget one fact about a member, or everything")
    @app_commands.describe(user="Whose facts to forget", fact="One fact (leave empty to forget everything)")
    async def forget(
        self,
        interaction: discord.Interaction,
        user: discord.User,
        fact: app_commands.Range[int, 1] | None = None,
    ) -> None:
        scope = guild_scope(guild_id(interaction))
        name = display_name(user)
        actor = str(interaction.user.id)

        async def forget_one(fact_id: int) -> Reply:
            count = await self.bot.memory.forget(scope, str(user.id), [fact_id], actor=actor)
            return Reply(forgot_text(count, fact_id) if count else f"No fact #{fact_id} of {name} here.")

        if fact is not None:
            await answer(interaction, forget_one(fact))
        else:
            question = forget_all_question(
                interaction, self.bot.memory, scope, user.id, whom=f"{name} in this server"
            )
            await answer(interaction, question)

    @forget.autocomplete("fact")
    async def _member_fact_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[int]]:
        user = getattr(interaction.namespace, "user", None)
        if user is None or interaction.guild_id is None or not interaction.permissions.manage_guild:
            return []
        visible = self.visible_of(interaction, user)  # as the admin types: what /facts would show them
        return await fact_choices(
            self.bot.memory, guild_scope(guild_id(interaction)), user.id, current, visible
        )

    # ---- community facts and episodes -------------------------------------------------------------------

    async def community_fact(self, interaction: discord.Interaction, fact_id: int) -> Fact | None:
        """One of the server's active community facts that the admin can read (as listed), else None."""
        facts = await self.bot.memory.list_facts(
            guild_scope(guild_id(interaction)), COMMUNITY_ID, limit=MAX_LISTED
        )
        readable = readable_here(self.bot, interaction)
        return next((f for f in facts if f.id == fact_id and readable(f)), None)

    async def episode(self, interaction: discord.Interaction, episode_id: int) -> Episode | None:
        """One of the server's episodes that the admin can read, else None."""
        found = await self.bot.memory.episode(guild_scope(guild_id(interaction)), episode_id)
        return found if found is not None and readable_here(self.bot, interaction)(found) else None

    @community_group.command(name="list", description="The server's community facts, with their ids")
    async def community_list(self, interaction: discord.Interaction) -> None:
        self.note(interaction, "looked at the community facts")
        await FactsPager(
            interaction,
            self.bot.memory,
            scope=guild_scope(guild_id(interaction)),
            subject_id=COMMUNITY_ID,
            heading="What I remember about this server",
            empty="I remember no community facts here that you can read.",
            visible=readable_here(self.bot, interaction),
        ).send()

    @community_group.command(name="correct", description="Fix the text of a community fact")
    @app_commands.describe(fact="The fact's id (see /memory-admin community list)")
    async def community_correct(
        self, interaction: discord.Interaction, fact: app_commands.Range[int, 1]
    ) -> None:
        def form(found: Fact) -> discord.ui.Modal:
            return fact_form(
                self.bot.memory,
                found,
                community=True,
                corrected=lambda fixed, also: self.note(
                    interaction,
                    f"corrected community fact #{fixed.id}" + (f" (also removed {also})" if also else ""),
                ),
            )

        await self._open_form(
            interaction, self.community_fact(interaction, fact), form, no_community_fact(fact)
        )

    @community_group.command(name="forget", description="Forget a community fact, after a confirmation")
    @app_commands.describe(fact="The fact's id (see /memory-admin community list)")
    async def community_forget(
        self, interaction: discord.Interaction, fact: app_commands.Range[int, 1]
    ) -> None:
        scope = guild_scope(guild_id(interaction))

        async def forget() -> str:
            also = also_removed(await self.bot.memory.points_made_from(scope, fact))
            count = await self.bot.memory.forget(scope, COMMUNITY_ID, [fact], actor=str(interaction.user.id))
            if not count:
                return f"Community fact #{fact} was already gone."
            self.note(
                interaction, f"forgot community fact #{fact}" + (f" (also removed {also})" if also else "")
            )
            return forgot_text(count, fact) + (f" Also removed {also}." if also else "")

        async def also(found: Fact) -> str:
            went = also_removed(await self.bot.memory.points_made_from(scope, found.id))
            return f"\nThis also removes {went}, made from the same messages." if went else ""

        found = self.community_fact(interaction, fact)
        await self._ask_to_forget(interaction, found, fact_entry, forget, no_community_fact(fact), also)

    @episodes_group.command(name="list", description="What the channels talked about, newest first, with ids")
    async def episodes_list(self, interaction: discord.Interaction) -> None:
        self.note(interaction, "looked at the episodes")
        await EpisodesPager(
            interaction,
            self.bot.memory,
            name="episodes",
            scope=guild_scope(guild_id(interaction)),
            visible=readable_here(self.bot, interaction),
            heading="What the channels talked about",
            empty="I remember no conversation here in the channels you can read.",
            with_ids=True,
        ).send()

    @episodes_group.command(name="correct", description="Fix the summary of an episode")
    @app_commands.describe(episode="The episode's id (see /memory-admin episodes list)")
    async def episodes_correct(
        self, interaction: discord.Interaction, episode: app_commands.Range[int, 1]
    ) -> None:
        def form(found: Episode) -> discord.ui.Modal:
            return episode_form(
                self.bot.memory,
                found,
                corrected=lambda fixed: self.note(interaction, f"corrected episode #{fixed.id}"),
            )

        await self._open_form(interaction, self.episode(interaction, episode), form, no_episode(episode))

    @episodes_group.command(name="forget", description="Forget an episode, after a confirmation")
    @app_commands.describe(episode="The episode's id (see /memory-admin episodes list)")
    async def episodes_forget(
        self, interaction: discord.Interaction, episode: app_commands.Range[int, 1]
    ) -> None:
        scope = guild_scope(guild_id(interaction))

        async def forget() -> str:
            if not await self.bot.memory.forget_episode(scope, episode, actor=str(interaction.user.id)):
                return f"Episode #{episode} was already gone."
            self.note(interaction, f"forgot episode #{episode}")
            return f"Forgot episode #{episode}."

        def shown(found: Episode) -> str:
            return episode_entry(found, with_id=True)

        found = self.episode(interaction, episode)
        await self._ask_to_forget(interaction, found, shown, forget, no_episode(episode))

    async def _open_form(
        self,
        interaction: discord.Interaction,
        lookup: Awaitable[T | None],
        form: Callable[[T], discord.ui.Modal],
        missing: str,
    ) -> None:
        """Open a correction form on what `lookup` finds. A form must be the first answer, within
        Discord's 3 seconds (it cannot follow a deferral): a slower database gets a "try again"."""
        try:
            found = await asyncio.wait_for(lookup, LOOKUP_SECONDS)
        except TimeoutError:
            await interaction.response.send_message(BUSY, ephemeral=True)
            return
        if found is None:
            await interaction.response.send_message(missing, ephemeral=True)
        else:
            await interaction.response.send_modal(form(found))

    async def _ask_to_forget(
        self,
        interaction: discord.Interaction,
        lookup: Awaitable[T | None],
        shown: Callable[[T], str],
        forget: Callable[[], Awaitable[str]],
        missing: str,
        also: Callable[[T], Awaitable[str]] | None = None,
    ) -> None:
        """Show what `lookup` finds and ask to forget it (Forget/Cancel); `forget` runs on Forget. `also`
        says what else would go with it."""

        async def ask() -> Reply:
            found = await lookup
            if found is None:
                return Reply(missing)
            question = f"Forget this? This can't be undone.\n{shown(found)}"
            if also is not None:
                question += await also(found)
            return Reply(question, ConfirmView(interaction, forget, confirm_label="Forget"))

        await answer(interaction, ask())

    @admin_group.command(name="stats", description="Memory statistics for this server")
    async def stats(self, interaction: discord.Interaction) -> None:
        async def stats() -> Reply:
            figures = await self.bot.memory.stats(guild_scope(guild_id(interaction)))
            return Reply(format_stats({**figures, "provider": provider_name(self.bot.settings)}))

        await answer(interaction, stats())

    @logchannel_group.command(name="set", description="Post the memory log of this server in a channel")
    @app_commands.describe(channel="The channel for the memory log")
    async def logchannel_set(self, interaction: discord.Interaction, channel: discord.TextChannel) -> None:
        content = f"The memory log of this server will be posted in {channel.mention}."
        me = channel.guild.me
        if me is not None and not channel.permissions_for(me).send_messages:
            content += " I can't send messages there yet: please give me Send Messages in that channel."
        if channel.permissions_for(channel.guild.default_role).view_channel:
            content += (
                f"\nHeads-up: everyone can read {channel.mention}. The log names people and counts what was "
                "learned and forgotten (never the facts' texts); a channel only admins can read keeps even "
                "that among them."
            )
        await self.change(
            interaction,
            self.bot.memory.update_guild(str(guild_id(interaction)), log_channel_id=str(channel.id)),
            f"set {channel.mention} as the memory log channel",
            content,
        )

    @moderators_group.command(name="set", description="Members with this role speak for the server")
    @app_commands.describe(role="The moderators' role")
    async def moderators_set(self, interaction: discord.Interaction, role: discord.Role) -> None:
        await self.change(
            interaction,
            self.bot.memory.update_guild(str(guild_id(interaction)), moderator_role_id=str(role.id)),
            f"named {role.mention} as the moderators' role",
            f"Rules and decisions said by members of {role.mention} from now on speak for the server in my "
            "memory, as those of members with Manage Server or Manage Messages do. Anyone else's are kept "
            "as their own word.",
        )

    @moderators_group.command(
        name="clear", description="Only Manage Server or Manage Messages speak for the server"
    )
    async def moderators_clear(self, interaction: discord.Interaction) -> None:
        await self.change(
            interaction,
            self.bot.memory.update_guild(str(guild_id(interaction)), moderator_role_id=None),
            "cleared the moderators' role",
            "From now on only members with Manage Server or Manage Messages where they speak decide for the "
            "server in my memory.",
        )

    @logchannel_group.command(name="clear", description="Stop posting the memory log in a channel of its own")
    async def logchannel_clear(self, interaction: discord.Interaction) -> None:
        async def clear() -> Reply:
            await self.bot.memory.update_guild(str(guild_id(interaction)), log_channel_id=None)
            fallback = self.bot.admin_log.channel_for(guild_id(interaction))
            self.note(interaction, "cleared the memory log channel")
            return Reply(
                "The memory log channel is cleared"
                + (
                    f"; the bot's default log channel <#{fallback.id}> is used instead."
                    if fallback is not None
                    else "; no memory log is posted in this server now."
                )
            )

        await answer(interaction, clear())

    @autoreply_group.command(name="on", description="Answer every message in a channel, without a mention")
    @app_commands.describe(channel="The channel (its threads too)")
    async def autoreply_on(self, interaction: discord.Interaction, channel: ChannelOption) -> None:
        await self._set_auto_reply(interaction, channel, True)

    @autoreply_group.command(name="off", description="Answer in a channel only when mentioned or replied to")
    @app_commands.describe(channel="The channel (its threads too)")
    async def autoreply_off(self, interaction: discord.Interaction, channel: ChannelOption) -> None:
        await self._set_auto_reply(interaction, channel, False)

    async def _set_auto_reply(
        self, interaction: discord.Interaction, channel: ChannelOption, replies: bool
    ) -> None:
        await self.change_channel(
            interaction,
            channel,
            lambda: self.bot.memory.set_auto_reply(str(guild_id(interaction)), str(channel.id), replies),
            f"turned auto-replies {'on' if replies else 'off'} in {channel.mention}",
            f"I'll answer every message in {channel.mention}, without being mentioned."
            if replies
            else f"In {channel.mention} I'll answer only when mentioned or replied to.",
        )

    @autoreply_group.command(name="list", description="The channels where the bot answers without a mention")
    async def autoreply_list(self, interaction: discord.Interaction) -> None:
        settings = self.bot.memory.guild(str(guild_id(interaction)))
        guild = interaction.guild
        known = {str(c.id) for c in guild.channels} if guild is not None else set()
        starting = {str(c) for c in self.bot.settings.auto_reply_channel_ids}
        channels = sorted(c for c in known | set(settings.auto_reply) if settings.replies_in([c], starting))
        content = (
            "I answer every message, without a mention, in " + ", ".join(f"<#{c}>" for c in channels) + "."
            if channels
            else "I answer only when mentioned or replied to, in every channel here."
        )
        await interaction.response.send_message(content, ephemeral=True)

    @admin_group.command(name="ignore", description="Never remember messages in a channel (and its threads)")
    @app_commands.describe(channel="The channel to ignore")
    async def ignore(self, interaction: discord.Interaction, channel: ChannelOption) -> None:
        await self.change_channel(
            interaction,
            channel,
            lambda: self.bot.memory.set_channel_ignored(str(guild_id(interaction)), str(channel.id), True),
            f"turned memory off in {channel.mention}",
            f"I won't remember messages in {channel.mention}"
            + ("" if isinstance(channel, app_commands.AppCommandThread) else " (or its threads)")
            + ", and the ones there I hadn't read yet are dropped.",
        )

    @admin_group.command(name="unignore", description="Remember messages in an ignored channel again")
    @app_commands.describe(channel="The channel to stop ignoring")
    async def unignore(self, interaction: discord.Interaction, channel: ChannelOption) -> None:
        ignored = self.bot.memory.guild(str(guild_id(interaction))).ignored_channel_ids
        parent = getattr(channel, "parent_id", None)
        if str(channel.id) not in ignored:
            if parent is not None and str(parent) in ignored:
                content = (
                    f"{channel.mention} is in <#{parent}>, which is ignored, so it stays ignored: "
                    f"unignore <#{parent}> to remember its threads again."
                )
            else:
                content = f"{channel.mention} isn't ignored; nothing changed."
            await interaction.response.send_message(content, ephemeral=True)
            return
        await self.change(
            interaction,
            self.bot.memory.set_channel_ignored(str(guild_id(interaction)), str(channel.id), False),
            f"turned memory back on in {channel.mention}",
            f"I may remember messages in {channel.mention} again.",
        )

    @admin_group.command(name="enable", description="Let the bot remember what people say in this server")
    async def enable(self, interaction: discord.Interaction) -> None:
        await self.change(
            interaction,
            self.bot.memory.update_guild(str(guild_id(interaction)), memory_enabled=True),
            "enabled memory in this server",
            "Memory is on in this server: I may remember what people say here.",
        )

    @admin_group.command(name="disable", description="Stop remembering what people say in this server")
    async def disable(self, interaction: discord.Interaction) -> None:
        await self.change(
            interaction,
            self.bot.memory.update_guild(str(guild_id(interaction)), memory_enabled=False),
            "disabled memory in this server",
            "Memory is off in this server: I won't remember new messages here, and the ones I hadn't read "
            "yet are dropped. What I already know stays (use /memory-admin forget to remove it).",
        )

    @admin_group.command(
        name="forget-server", description="Forget everything learned in this server, after a confirmation"
    )
    async def forget_server(self, interaction: discord.Interaction) -> None:
        scope = guild_scope(guild_id(interaction))

        async def forget() -> str:
            facts, episodes = await self.bot.memory.forget_server(scope, actor=str(interaction.user.id))
            self.note(interaction, "forgot everything learned in this server")
            return (
                f"Forgot everything learned in this server: {plural(facts, 'fact')} (people's and the "
                f"community's) and {plural(episodes, 'episode')}, and what was waiting to be learned."
            )

        async def ask() -> Reply:
            question = (
                "Forget everything learned in this server: every member's facts, the community facts and "
                "the episodes, and what is waiting to be learned? This can't be undone. Opt-outs and "
                "settings stay."
            )
            return Reply(question, ConfirmView(interaction, forget, confirm_label="Forget all"))

        await answer(interaction, ask())

    @admin_group.command(name="others-visible", description="Whether members may see each other's facts")
    @app_commands.describe(state="on: members can use /facts on each other; off: only their own")
    async def others_visible(self, interaction: discord.Interaction, state: Literal["on", "off"]) -> None:
        visible = state == "on"
        await self.change(
            interaction,
            self.bot.memory.update_guild(str(guild_id(interaction)), members_see_others=visible),
            "let members see each other's facts"
            if visible
            else "made members' facts visible only to themselves",
            "Members can now see each other's facts with /facts."
            if visible
            else "Members can now see only their own facts.",
        )

    @persona_group.command(
        name="set", description="Set the bot's persona for this server, or for one channel"
    )
    @app_commands.describe(
        text="Who the bot is and how it speaks (its system instruction)",
        channel="Only in this channel (and its threads); leave empty for the whole server",
    )
    async def persona_set(
        self,
        interaction: discord.Interaction,
        text: app_commands.Range[str, 1, PERSONA_MAX_CHARS],
        channel: ChannelOption | None = None,
    ) -> None:
        where = "this server" if channel is None else channel.mention
        await self.change(
            interaction,
            self.bot.memory.set_persona(
                str(guild_id(interaction)), None if channel is None else str(channel.id), text
            ),
            f"set the bot's persona in {where}",
            f"From now on I answer in {where} as: {text}",
        )

    @persona_group.command(name="clear", description="Go back to the default persona here")
    @app_commands.describe(channel="The channel whose own persona to remove; leave empty for the server's")
    async def persona_clear(
        self, interaction: discord.Interaction, channel: ChannelOption | None = None
    ) -> None:
        where = "this server" if channel is None else channel.mention
        fallback = "the server's persona" if channel is not None else "my default persona"
        await self.change(
            interaction,
            self.bot.memory.set_persona(
                str(guild_id(interaction)), None if channel is None else str(channel.id), None
            ),
            f"cleared the bot's persona in {where}",
            f"The persona of {where} is cleared: I answer there with {fallback}.",
        )

    @admin_group.command(name="status", description="What is in force in this server: memory, log, personas")
    async def status(self, interaction: discord.Interaction) -> None:
        settings = self.bot.memory.guild(str(guild_id(interaction)))
        await interaction.response.send_message(
            format_status(settings, self.bot.settings.bot_persona), ephemeral=True
        )


def no_community_fact(fact_id: int) -> str:
    return f"No community fact #{fact_id} here that you can read."


def no_episode(episode_id: int) -> str:
    return f"No episode #{episode_id} here that you can read."


async def setup(bot: MemoryBot) -> None:
    await bot.add_cog(Admin(bot))
