"""The `commands.Bot` subclass: start-up, command sync, and a graceful close.

`setup_hook` opens the memory engine before any event arrives; `close()` stops capture, persists what is
queued within a bounded time and closes the database, whatever asked for the shutdown (Ctrl-C, SIGTERM,
an error).
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.app import Models, open_memory, open_models
from bot.config import Settings
from bot.discord_bot.adminlog import AdminLog
from bot.discord_bot.audience import AudienceResolver
from bot.discord_bot.reply_memories import ReplyMemories
from bot.memory.service import MemoryService

log = logging.getLogger(__name__)

COGS = (
    "bot.discord_bot.cogs.chat",
    "bot.discord_bot.cogs.memory_commands",
    "bot.discord_bot.cogs.telling",
    "bot.discord_bot.cogs.message_menu",
    "bot.discord_bot.cogs.help",
    "bot.discord_bot.cogs.admin",
    "bot.discord_bot.cogs.errors",
)
SHUTDOWN_TIMEOUT_SECONDS = 5.0  # running flushes get this long to finish; the rest stays buffered
ADMIN_LOG_STOP_SECONDS = 1.5
DEV_GUILD_STATE = "command_dev_guild"  # the server commands were last synced to, to clear when it changes


def intents() -> discord.Intents:
    """Guilds, guild messages, DMs, and the two privileged ones: message content and members."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.guild_messages = True
    wanted.dm_messages = True
    wanted.message_content = True
    wanted.members = True
    return wanted


def point_discord_at(api_base_url: str, gateway_url: str) -> None:
    """Send REST and gateway traffic to a proxy (or a test stand-in) instead of discord.com."""
    import yarl

    if api_base_url:
        base = yarl.URL(api_base_url.rstrip("/"))
        if base.path in ("", "/"):  # a bare host: Discord's REST API lives under /api/v10
            base = base.with_path("/api/v10")
        discord.http.Route.BASE = str(base)
    if gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


# View Channels, Send Messages, Send Messages in Threads, Read Message History: all a reply needs.
NEEDED_PERMISSIONS = discord.Permissions(
    view_channel=True, send_messages=True, send_messages_in_threads=True, read_message_history=True
)


def invite_url(application_id: int) -> str:
    """The OAuth2 link that adds the bot with its slash commands and just the permissions it uses."""
    return discord.utils.oauth_url(
        application_id, permissions=NEEDED_PERMISSIONS, scopes=("bot", "applications.commands")
    )


RESTARTING = "I'm restarting right now; please try again in a minute."


class MemoryTree(app_commands.CommandTree):
    """Refuses commands politely while the bot shuts down, when the database may already be closed."""

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        if getattr(self.client, "shutting_down", False):
            if interaction.type is discord.InteractionType.application_command:
                await interaction.response.send_message(RESTARTING, ephemeral=True)
            return False
        return True


# A text-only bot: without this every start warns that voice needs PyNaCl and davey.
discord.VoiceClient.warn_nacl = False
discord.VoiceClient.warn_dave = False


class MemoryBot(commands.Bot):
    def __init__(
        self,
        settings: Settings,
        *,
        models: Models | None = None,
        memory: MemoryService | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            **options,
            command_prefix=commands.when_mentioned,
            intents=intents(),
            allowed_mentions=discord.AllowedMentions.none(),
            help_command=None,
            tree_cls=MemoryTree,
            # Every message carries its author's member data and commands their resolved members: nothing
            # needs a server's whole member list, which costs a large server minutes of gateway traffic.
            chunk_guilds_at_startup=False,
        )
        self.settings = settings
        self.models = models or open_models(settings)
        self._memory = memory
        self.admin_log = AdminLog(self, default_channel_id=settings.admin_log_channel_id)
        self.audience = AudienceResolver(self)
        self.reply_memories = ReplyMemories()  # which memories recent replies used, for their askers
        self._closing = False

    @property
    def shutting_down(self) -> bool:
        """From the start of close(): new messages and commands are no longer handled."""
        return self._closing

    @property
    def memory(self) -> MemoryService:
        if self._memory is None:
            raise RuntimeError("the memory service is not open yet")
        return self._memory

    async def setup_hook(self) -> None:
        if self._memory is None:
            self._memory = await open_memory(self.settings, self.models)
        self.memory.add_listener(self.admin_log.on_memory_event)
        self.memory.share_calls_between(self.audience.shareable)
        await self.memory.start()
        for cog in COGS:
            await self.load_extension(cog)
        self.admin_log.start()
        if self.syncs_commands:
            await self.sync_commands()
        if self.application_id is not None:
            log.info("invite the bot to a server with %s", invite_url(self.application_id))

    @property
    def syncs_commands(self) -> bool:
        """Whether this process syncs app commands: with shards over several processes, only the one
        running shard 0 does, so a start of every process costs Discord one sync, not one each."""
        ids = self.settings.shard_ids
        return self.settings.shard_count is None or not ids or 0 in ids

    async def sync_commands(self) -> None:
        """Sync app commands to DEV_GUILD_ID (instant) or globally, only when Discord lacks them.

        A restart with the same commands costs one GET instead of a sync (whose rate limit is tight);
        another application, commands removed on Discord's side, or changed definitions sync again.
        Leaving DEV_GUILD_ID clears that server's copies, which would otherwise show every command twice.
        """
        guild = discord.Object(id=self.settings.dev_guild_id) if self.settings.dev_guild_id else None
        await self._clear_former_dev_guild(guild)
        if guild is not None:
            self.tree.copy_global_to(guild=guild)
        payload = [c.to_dict(self.tree) for c in self.tree.get_commands(guild=guild)]
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
        key = f"command_hash:{self.application_id}:{guild.id if guild else 'global'}"
        if await self.memory.bot_state(key) == digest and await self._commands_present(
            guild, {c["name"] for c in payload}
        ):
            log.info("app commands unchanged; not syncing")
            return
        try:
            synced = await self.tree.sync(guild=guild)
        except discord.HTTPException as exc:
            # The bot still works with the commands Discord already has; the next start tries again.
            log.error(
                "syncing app commands failed (%s %s); continuing with the ones Discord has",
                exc.status,
                exc.text,
            )
            return
        await self.memory.set_bot_state(key, digest)
        await self.memory.set_bot_state(DEV_GUILD_STATE, str(guild.id) if guild else "")
        log.info("synced %d app commands %s", len(synced), f"to guild {guild.id}" if guild else "globally")

    async def _commands_present(self, guild: discord.Object | None, names: set[str]) -> bool:
        """Whether Discord has every command by name (it may have lost them, or this is a new application)."""
        try:
            remote = await self.tree.fetch_commands(guild=guild)
        except discord.HTTPException as exc:
            log.warning("could not list the app commands Discord has (%s); not syncing", exc.status)
            return True
        return names <= {c.name for c in remote}

    async def _clear_former_dev_guild(self, guild: discord.Object | None) -> None:
        former = await self.memory.bot_state(DEV_GUILD_STATE)
        if not former or (guild is not None and str(guild.id) == former):
            return
        target = discord.Object(id=int(former))
        self.tree.clear_commands(guild=target)
        try:
            await self.tree.sync(guild=target)
        except discord.HTTPException as exc:
            log.warning("could not remove the commands of former DEV_GUILD_ID %s: %s", former, exc.status)
            return
        await self.memory.set_bot_state(DEV_GUILD_STATE, "")
        log.info("removed the app commands synced to former DEV_GUILD_ID %s", former)

    async def on_ready(self) -> None:
        stats = await self.memory.stats()
        log.info(
            "ready as %s in %d guilds; %d active facts, %d pending messages",
            self.user,
            len(self.guilds),
            stats["facts"]["active"],
            stats["pending_messages"],
        )
        for guild in self.guilds:
            self.admin_log.post(guild.id, "Memory bot started.")
        # Servers it is in keep their memory, whatever a removal had started counting down.
        await self.memory.servers_present([str(guild.id) for guild in self.guilds])

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        """Kicked, or the server deleted (not an outage: discord.py tells those apart): what was learned
        there is erased after MEMORY_REMOVED_SERVER_DAYS unless the bot is added back meanwhile."""
        erase_at = await self.memory.server_removed(str(guild.id))
        if erase_at is not None:
            line = (
                f"Removed from {guild.name} ({guild.id}): everything learned there will be erased after "
                f"{erase_at[:16].replace('T', ' ')} UTC unless the bot is added back before."
            )
            log.warning(line)
            self.admin_log.post(guild.id, line)  # the operator's default log channel, where it still can

    async def on_guild_join(self, guild: discord.Guild) -> None:
        await self.memory.servers_present([str(guild.id)])

    async def close(self) -> None:
        """Stop taking work, let memory persist (flushes that finish still reach the admin log), then go.

        Bounded to about 8 s in all, inside the 10 s that Docker and most hosts wait before SIGKILL.
        """
        if self._closing:
            return
        self._closing = True
        log.info("shutting down: persisting captured messages")
        for guild in self.guilds:
            self.admin_log.post(guild.id, "Memory bot shutting down.")
        try:
            if self._memory is not None:
                await self._memory.close(timeout=SHUTDOWN_TIMEOUT_SECONDS)
        finally:
            try:
                await self.admin_log.stop(timeout=ADMIN_LOG_STOP_SECONDS)
            except Exception:
                log.exception("admin log did not stop cleanly")
            await super().close()

    async def on_message(self, message: discord.Message, /) -> None:
        """No prefix commands: every command is a slash command, and the chat cog handles messages."""

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        log.exception("unhandled error in %s", event_method)


class ShardedMemoryBot(MemoryBot, commands.AutoShardedBot):
    """The bot running shards SHARD_IDS (default: all) of SHARD_COUNT in this process (discord.py's
    AutoShardedBot); processes running the other shards share its database."""


def make_bot(settings: Settings, **kwargs: Any) -> MemoryBot:
    """The bot the settings ask for: one connection, or the given shards."""
    if settings.shard_count is None:
        return MemoryBot(settings, **kwargs)
    shard_ids = list(settings.shard_ids) or None
    return ShardedMemoryBot(settings, shard_count=settings.shard_count, shard_ids=shard_ids, **kwargs)
