"""Setting up the Discord stand-in's world: guilds, people, roles, channels and threads.

Whatever is added while a bot is connected reaches it as the gateway event Discord sends for it
(GUILD_CREATE, GUILD_MEMBER_ADD, GUILD_ROLE_CREATE, CHANNEL_CREATE ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from standins.discord.gateway import Gateway
from standins.discord.model import (
    BOT_ROLE_PERMISSIONS,
    EVERYONE_PERMISSIONS,
    INTENT_GUILD_MEMBERS,
    INTENT_GUILDS,
    MANAGE_GUILD,
    VIEW_CHANNEL,
    Guild,
    Member,
    overwrite,
    role_payload,
    text_channel_payload,
    thread_payload,
)


class GuildSetup(Gateway):
    """The test API that builds the world a test runs in."""

    def add_guild(
        self,
        name: str,
        *,
        channels: Sequence[str] = ("general", "random", "bot-log"),
        with_thread: bool = True,
        owner: dict[str, Any] | None = None,
        offline_members: int = 0,
        system_channel: str | None = None,
        overwrites: Mapping[str, Sequence[dict[str, Any]]] | None = None,
    ) -> Guild:
        """Add a guild with text channels, a public thread in the first one, roles and the bot as a member.

        The owner is `owner` or a new user named "<name>-owner". Added after the bot connected, the guild
        is sent as GUILD_CREATE. `offline_members` makes it a large guild whose GUILD_CREATE lacks that
        many members, which a client must request (op 8) if it wants the whole list. `system_channel` names
        the channel Discord posts join messages in; `overwrites` gives channels (by name) permission
        overwrites (`model.overwrite`) from the start, as a server the bot joins already has them."""
        guild_id = self._snowflake()
        if owner is None:
            owner = self._new_user(f"{name}-owner")
        owner_id = int(owner["id"])
        self.users.setdefault(owner_id, owner)
        guild = Guild(
            id=guild_id,
            name=name,
            owner_id=owner_id,
            admin_role_id=self._snowflake(),
            bot_role_id=self._snowflake(),
            offline_members=offline_members,
        )
        guild.roles = [
            role_payload(guild_id, "@everyone", EVERYONE_PERMISSIONS, position=0),
            role_payload(guild.admin_role_id, "admin", EVERYONE_PERMISSIONS | MANAGE_GUILD, position=1),
            role_payload(
                guild.bot_role_id,
                self.bot_user["username"],
                BOT_ROLE_PERMISSIONS,
                position=2,
                managed=True,
                bot_id=self.bot_id,
            ),
        ]
        guild.members[owner_id] = Member(owner_id)
        guild.members[self.bot_id] = Member(self.bot_id, roles=[guild.bot_role_id])
        for position, channel_name in enumerate(channels):
            channel_id = self._snowflake()
            guild.channels[channel_name] = channel_id
            payload = text_channel_payload(channel_id, guild_id, channel_name, position)
            payload["permission_overwrites"] = list((overwrites or {}).get(channel_name, ()))
            self._add_channel(payload, guild_id)
        if system_channel is not None:
            guild.system_channel_id = guild.channels[system_channel]
        if with_thread and guild.channels:
            parent = next(iter(guild.channels.values()))
            guild.thread_id = self._snowflake()
            self._add_channel(
                thread_payload(guild.thread_id, guild_id, parent, owner_id, f"{name}-thread"), guild_id
            )
        self.guilds[guild_id] = guild
        if self._ready_sessions():
            self._spawn(self._dispatch_guild_create(guild))
        return guild

    def add_user(
        self,
        name: str,
        *,
        guilds: Iterable[int] | None = None,
        admin_in: Iterable[int] = (),
        bot: bool = False,
    ) -> dict[str, Any]:
        """Add a user who is a member of `guilds` (default: every guild) and admin in `admin_in`.

        Added after the bot connected, each membership is sent as GUILD_MEMBER_ADD."""
        user = self._new_user(name, bot=bot)
        user_id = int(user["id"])
        admin_in = set(admin_in)
        for guild_id in self.guilds if guilds is None else guilds:
            guild = self.guilds[guild_id]
            roles = [guild.admin_role_id] if guild_id in admin_in else []
            member = Member(user_id, roles=roles)
            guild.members[user_id] = member
            if self._ready_sessions():
                data = {**member.payload(user), "guild_id": str(guild_id)}
                self._spawn(self._dispatch("GUILD_MEMBER_ADD", data, intent=INTENT_GUILD_MEMBERS))
        return user

    async def remove_bot(self, guild: Guild) -> None:
        """The bot is kicked (or the server deleted): GUILD_DELETE without `unavailable`, which discord.py
        tells apart from an outage and fires as guild_remove."""
        await self._dispatch("GUILD_DELETE", {"id": str(guild.id)})

    async def add_role(self, guild: Guild, name: str, permissions: int = EVERYONE_PERMISSIONS) -> int:
        """A new role (sent as GUILD_ROLE_CREATE); give it to members with `set_roles`."""
        role_id = self._snowflake()
        role = role_payload(role_id, name, permissions, position=len(guild.roles))
        guild.roles.append(role)
        await self._dispatch("GUILD_ROLE_CREATE", {"guild_id": str(guild.id), "role": role})
        return role_id

    async def set_roles(self, guild: Guild, user: dict[str, Any], role_ids: Sequence[int]) -> None:
        """Replace a member's roles (sent as GUILD_MEMBER_UPDATE)."""
        member = self._ensure_member(guild, int(user["id"]))
        member.roles = list(role_ids)
        data = {**member.payload(self.users[member.user_id]), "guild_id": str(guild.id)}
        await self._dispatch("GUILD_MEMBER_UPDATE", data, intent=INTENT_GUILD_MEMBERS)

    async def add_text_channel(
        self, guild: Guild, name: str, *, overwrites: Sequence[dict[str, Any]] = ()
    ) -> int:
        """A new text channel with permission overwrites (see `model.overwrite`), sent as CHANNEL_CREATE."""
        channel_id = self._snowflake()
        payload = text_channel_payload(channel_id, guild.id, name, len(guild.channels))
        payload["permission_overwrites"] = list(overwrites)
        guild.channels[name] = channel_id
        self._add_channel(payload, guild.id)
        await self._dispatch("CHANNEL_CREATE", payload)
        return channel_id

    async def add_role_channel(self, guild: Guild, name: str, role_id: int) -> int:
        """A text channel only `role_id` (and the bot) can read: @everyone denied View Channel."""
        return await self.add_text_channel(
            guild,
            name,
            overwrites=[
                overwrite(guild.id, deny=VIEW_CHANNEL),
                overwrite(role_id, allow=VIEW_CHANNEL),
                overwrite(guild.bot_role_id, allow=VIEW_CHANNEL),
            ],
        )

    async def set_overwrites(self, channel_id: int, overwrites: Sequence[dict[str, Any]]) -> None:
        """Change who may see a channel (sent as CHANNEL_UPDATE, as when an admin edits permissions)."""
        payload = self.channels[channel_id]
        payload["permission_overwrites"] = list(overwrites)
        await self._dispatch("CHANNEL_UPDATE", payload)

    async def add_thread(
        self,
        guild: Guild,
        parent_id: int,
        name: str,
        *,
        private: bool = False,
        members: Sequence[dict[str, Any]] = (),
    ) -> int:
        """A thread in `parent_id` (sent as THREAD_CREATE); a private one names its `members`."""
        thread_id = self._snowflake()
        owner_id = int(members[0]["id"]) if members else guild.owner_id
        payload = thread_payload(thread_id, guild.id, parent_id, owner_id, name, private=private)
        payload["member_count"] = len(members) + 1
        self._add_channel(payload, guild.id)
        await self._dispatch("THREAD_CREATE", {**payload, "newly_created": True}, intent=INTENT_GUILDS)
        return thread_id
