"""What the Discord stand-in knows, shared by its gateway, REST routes and test API.

The guilds, people, channels and messages, the interactions tests started and the commands the bot
synced live here once, so that every part reads and changes the same world. A message is stored once
(`StoredMessage`) and rendered per reader (`_render`): REST, the gateway and the tests all see it with
its edits applied.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from standins.discord.model import (
    MESSAGE_DEFAULT,
    MESSAGE_REPLY,
    ROLE_MENTION,
    USER_MENTION,
    Guild,
    Member,
    SnowflakeFactory,
    dm_channel_payload,
    iso,
    number_components,
    snowflake_time,
    user_payload,
)
from standins.discord.records import Changes, InteractionRecord, StoredMessage

API_PREFIX = "/api/v10"

# Whether a client knows a message's component yet: (message id, component type, custom id) -> bool.
ComponentReader = Callable[[int, int, str], bool]


class StandInState:
    """The stand-in's world and the ways of reading it; the gateway and REST parts add their own plumbing."""

    def __init__(self, *, token: str | None, bot_name: str) -> None:
        self.token = token
        self._snowflake = SnowflakeFactory()
        self._changes = Changes()

        self.application_id: int = self._snowflake()
        self.bot_user: dict[str, Any] = user_payload(self.application_id, bot_name, bot=True)
        self.app_owner: dict[str, Any] = user_payload(self._snowflake(), "app-owner")
        self.users: dict[int, dict[str, Any]] = {
            self.application_id: self.bot_user,
            int(self.app_owner["id"]): self.app_owner,
        }
        self.guilds: dict[int, Guild] = {}
        self.channels: dict[int, dict[str, Any]] = {}
        self._channel_guild: dict[int, int | None] = {}
        self._channel_messages: dict[int, list[int]] = {}
        self._dm_channels: dict[int, int] = {}
        self.messages: dict[int, StoredMessage] = {}
        self.deleted_message_ids: list[int] = []
        self.synced_commands: dict[int | None, list[dict[str, Any]]] = {}
        self.interactions: dict[int, InteractionRecord] = {}
        self._interactions_by_token: dict[str, InteractionRecord] = {}

        self._tasks: set[asyncio.Task[Any]] = set()
        self.port: int | None = None
        # How a human's click waits for the bot to have taken in the message it clicks: see `runner.run_bot`.
        self.component_readers: list[ComponentReader] = []

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        if self.port is None:
            raise RuntimeError("the stand-in is not started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        """The value for `discord.http.Route.BASE`."""
        return self.base_url + API_PREFIX

    @property
    def gateway_url(self) -> str:
        """The value for `DiscordWebSocket.DEFAULT_GATEWAY`."""
        return f"ws://127.0.0.1:{self.port}/gateway"

    @property
    def bot_id(self) -> int:
        """The bot user's id (equal to the application id, as for real bots)."""
        return self.application_id

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ the model

    def _new_user(self, name: str, *, bot: bool = False) -> dict[str, Any]:
        user = user_payload(self._snowflake(), name, bot=bot)
        self.users[int(user["id"])] = user
        return user

    def _add_channel(self, payload: dict[str, Any], guild_id: int | None) -> None:
        channel_id = int(payload["id"])
        self.channels[channel_id] = payload
        self._channel_guild[channel_id] = guild_id
        self._channel_messages.setdefault(channel_id, [])

    def dm_channel_id(self, user: dict[str, Any] | int) -> int:
        """The DM channel between the bot and `user`, created on first use."""
        user_id = int(user["id"]) if isinstance(user, Mapping) else int(user)
        if user_id not in self._dm_channels:
            channel_id = self._snowflake()
            self._add_channel(dm_channel_payload(channel_id, self.users[user_id]), None)
            self._dm_channels[user_id] = channel_id
        return self._dm_channels[user_id]

    def guild_of(self, channel_id: int) -> Guild | None:
        """The guild a channel or thread belongs to (None for DMs)."""
        guild_id = self._channel_guild.get(channel_id)
        return None if guild_id is None else self.guilds[guild_id]

    def _ensure_user(self, user: dict[str, Any]) -> int:
        user_id = int(user["id"])
        self.users.setdefault(user_id, user)
        return user_id

    def _ensure_member(self, guild: Guild, user_id: int) -> Member:
        if user_id not in guild.members:
            guild.members[user_id] = Member(user_id)
        return guild.members[user_id]

    # ------------------------------------------------------------------ reading the model

    async def wait_for_bot_message(
        self,
        channel_id: int,
        predicate: Callable[[dict[str, Any]], bool] = lambda m: True,
        timeout: float = 5.0,
        *,
        include_ephemeral: bool = False,
    ) -> dict[str, Any]:
        """The first of the bot's messages in the channel (current state, edits applied) matching `predicate`."""

        def check() -> dict[str, Any] | None:
            messages = self.bot_messages(channel_id, include_ephemeral=include_ephemeral)
            return next((m for m in messages if predicate(m)), None)

        return await self._changes.wait_until(check, timeout, f"a bot message in channel {channel_id}")

    def channel_messages(self, channel_id: int) -> list[dict[str, Any]]:
        """Every visible message of a channel, oldest first, as REST would return them."""
        return [self._render(self.messages[m]) for m in self._channel_messages.get(channel_id, [])]

    def bot_messages(self, channel_id: int, *, include_ephemeral: bool = False) -> list[dict[str, Any]]:
        """The messages the bot created in a channel (REST and interaction responses), oldest first."""
        found = [
            m
            for m in self.messages.values()
            if m.channel_id == channel_id
            and m.author_id == self.bot_id
            and not m.deleted
            and (include_ephemeral or not m.ephemeral)
        ]
        return [self._render(m) for m in sorted(found, key=lambda m: m.id)]

    def get_message(self, message_id: int) -> dict[str, Any] | None:
        """The current payload of any message (also ephemeral ones), or None when unknown or deleted."""
        stored = self.messages.get(message_id)
        return None if stored is None or stored.deleted else self._render(stored)

    # ------------------------------------------------------------------ messages (shared)

    def _reference_to(self, target: StoredMessage) -> dict[str, Any]:
        reference: dict[str, Any] = {
            "type": 0,
            "message_id": target.data["id"],
            "channel_id": target.data["channel_id"],
        }
        if target.guild_id is not None:
            reference["guild_id"] = str(target.guild_id)
        return reference

    def _create_message(
        self,
        channel_id: int,
        author: dict[str, Any],
        *,
        content: str = "",
        embeds: list[dict[str, Any]] | None = None,
        components: list[dict[str, Any]] | None = None,
        attachments: list[dict[str, Any]] | None = None,
        flags: int = 0,
        reference: dict[str, Any] | None = None,
        allowed_mentions: dict[str, Any] | None = None,
        extra_mentions: Sequence[int] = (),
        message_type: int | None = None,
        ephemeral: bool = False,
        interaction: InteractionRecord | None = None,
        tts: bool = False,
        nonce: Any = None,
    ) -> StoredMessage:
        message_id = self._snowflake()
        data: dict[str, Any] = {
            "id": str(message_id),
            "channel_id": str(channel_id),
            "author": author,
            "content": content,
            "timestamp": iso(snowflake_time(message_id)),
            "edited_timestamp": None,
            "tts": tts,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": attachments or [],
            "embeds": embeds or [],
            "components": components or [],
            "pinned": False,
            "type": message_type
            if message_type is not None
            else (MESSAGE_REPLY if reference else MESSAGE_DEFAULT),
            "flags": flags,
        }
        number_components(data["components"])
        if nonce is not None:
            data["nonce"] = nonce
        if reference is not None:
            data["message_reference"] = reference
        if interaction is not None:
            user = interaction.payload.get("member", {}).get("user") or interaction.payload.get("user")
            data["webhook_id"] = str(self.application_id)
            data["application_id"] = str(self.application_id)
            data["interaction_metadata"] = {
                "id": str(interaction.id),
                "type": interaction.type,
                "user": user,
                "authorizing_integration_owners": interaction.payload["authorizing_integration_owners"],
            }
            if interaction.type == 2:
                data["interaction_metadata"]["name"] = interaction.payload["data"]["name"]
                data["interaction"] = {
                    "id": str(interaction.id),
                    "type": 2,
                    "name": interaction.payload["data"]["name"],
                    "user": user,
                }
        stored = StoredMessage(
            data,
            self._channel_guild.get(channel_id),
            ephemeral=ephemeral,
            allowed_mentions=allowed_mentions,
            interaction_token=interaction.token if interaction else None,
        )
        self._compute_mentions(stored, extra_mentions)
        self.messages[message_id] = stored
        if not ephemeral:
            self._channel_messages.setdefault(channel_id, []).append(message_id)
            self.channels[channel_id]["last_message_id"] = str(message_id)
        self._changes.notify()
        return stored

    def _compute_mentions(self, stored: StoredMessage, extra: Sequence[int]) -> None:
        """Fill mentions/mention_roles/mention_everyone the way Discord does, honouring allowed_mentions."""
        data = stored.data
        allowed = stored.allowed_mentions
        parse = set(allowed.get("parse", [])) if allowed is not None else {"users", "roles", "everyone"}
        allowed_users = {int(u) for u in (allowed or {}).get("users", [])}
        allowed_roles = {int(r) for r in (allowed or {}).get("roles", [])}
        user_ids: list[int] = []
        for match in USER_MENTION.finditer(data["content"]):
            uid = int(match.group(1))
            if uid in self.users and ("users" in parse or uid in allowed_users) and uid not in user_ids:
                user_ids.append(uid)
        for uid in extra:
            if uid not in user_ids:
                user_ids.append(uid)
        reference = data.get("message_reference")
        if reference is not None and data["type"] == MESSAGE_REPLY:
            target = self.messages.get(int(reference["message_id"]))
            replied = allowed is None or bool(allowed.get("replied_user"))
            if target is not None and replied and target.author_id not in user_ids:
                user_ids.append(target.author_id)
        data["mentions"] = [self.users[u] for u in user_ids]
        roles = []
        for match in ROLE_MENTION.finditer(data["content"]):
            rid = int(match.group(1))
            if "roles" in parse or rid in allowed_roles:
                roles.append(str(rid))
        data["mention_roles"] = roles
        content = data["content"]
        data["mention_everyone"] = ("@everyone" in content or "@here" in content) and "everyone" in parse

    def _render(
        self, stored: StoredMessage, *, gateway: bool = False, nested: bool = False
    ) -> dict[str, Any]:
        """The wire payload of a message; on the gateway with guild_id and member objects."""
        data = copy.deepcopy(stored.data)
        reference = data.get("message_reference")
        if reference is not None and not nested and data["type"] == MESSAGE_REPLY:
            target = self.messages.get(int(reference["message_id"]))
            data["referenced_message"] = (
                None
                if target is None or target.deleted
                else self._render(target, gateway=gateway, nested=True)
            )
        if gateway and stored.guild_id is not None:
            guild = self.guilds[stored.guild_id]
            data["guild_id"] = str(stored.guild_id)
            member = guild.members.get(stored.author_id)
            if member is not None and "webhook_id" not in data:
                data["member"] = member.payload()
            for mentioned in data["mentions"]:
                m = guild.members.get(int(mentioned["id"]))
                if m is not None:
                    mentioned["member"] = m.payload()
        return data
