"""The in-memory model of the Discord stand-in: snowflakes, permissions and wire payloads.

Everything here returns plain JSON-able dicts shaped like Discord's v10 API, with snowflakes as
strings, so discord.py parses them exactly as it parses the real thing.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
import time
from dataclasses import dataclass, field
from typing import Any

DISCORD_EPOCH_MS = 1420070400000

# Gateway intents (https://discord.com/developers/docs/events/gateway#gateway-intents).
INTENT_GUILDS = 1 << 0
INTENT_GUILD_MEMBERS = 1 << 1
INTENT_GUILD_PRESENCES = 1 << 8
INTENT_GUILD_MESSAGES = 1 << 9
INTENT_DIRECT_MESSAGES = 1 << 12
INTENT_MESSAGE_CONTENT = 1 << 15
PRIVILEGED_INTENTS = INTENT_GUILD_MEMBERS | INTENT_GUILD_PRESENCES | INTENT_MESSAGE_CONTENT

# Permission bits used by the model.
CREATE_INSTANT_INVITE = 1 << 0
ADMINISTRATOR = 1 << 3
MANAGE_GUILD = 1 << 5
ADD_REACTIONS = 1 << 6
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
MANAGE_MESSAGES = 1 << 13
EMBED_LINKS = 1 << 14
ATTACH_FILES = 1 << 15
READ_MESSAGE_HISTORY = 1 << 16
USE_EXTERNAL_EMOJIS = 1 << 18
CONNECT = 1 << 20
SPEAK = 1 << 21
CHANGE_NICKNAME = 1 << 26
USE_APPLICATION_COMMANDS = 1 << 31
MANAGE_THREADS = 1 << 34
CREATE_PUBLIC_THREADS = 1 << 35
SEND_MESSAGES_IN_THREADS = 1 << 38
ALL_PERMISSIONS = (1 << 51) - 1

EVERYONE_PERMISSIONS = (
    CREATE_INSTANT_INVITE
    | ADD_REACTIONS
    | VIEW_CHANNEL
    | SEND_MESSAGES
    | EMBED_LINKS
    | ATTACH_FILES
    | READ_MESSAGE_HISTORY
    | USE_EXTERNAL_EMOJIS
    | CONNECT
    | SPEAK
    | CHANGE_NICKNAME
    | USE_APPLICATION_COMMANDS
    | CREATE_PUBLIC_THREADS
    | SEND_MESSAGES_IN_THREADS
)
BOT_ROLE_PERMISSIONS = EVERYONE_PERMISSIONS | MANAGE_MESSAGES | MANAGE_THREADS

# Message flags and types.
FLAG_EPHEMERAL = 1 << 6
FLAG_LOADING = 1 << 7
MESSAGE_DEFAULT = 0
MESSAGE_REPLY = 19
MESSAGE_CHAT_INPUT_COMMAND = 20

# Channel types.
GUILD_TEXT = 0
DM = 1
PUBLIC_THREAD = 11
PRIVATE_THREAD = 12
THREAD_TYPES = (PUBLIC_THREAD, PRIVATE_THREAD)

USER_MENTION = re.compile(r"<@!?(\d+)>")
ROLE_MENTION = re.compile(r"<@&(\d+)>")


class SnowflakeFactory:
    """Strictly increasing snowflakes whose timestamp part is now, so `created_at` is sane."""

    def __init__(self) -> None:
        self._last = 0
        self._increment = itertools.count()

    def __call__(self) -> int:
        ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
        candidate = (ms << 22) | (1 << 17) | (next(self._increment) & 0xFFF)
        self._last = max(candidate, self._last + 1)
        return self._last


def snowflake_time(snowflake: int) -> dt.datetime:
    """The creation time encoded in a snowflake."""
    ms = (snowflake >> 22) + DISCORD_EPOCH_MS
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def iso(moment: dt.datetime | None = None) -> str:
    """An ISO-8601 timestamp as Discord writes them."""
    return (moment or dt.datetime.now(dt.UTC)).isoformat()


def user_payload(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    """A user object."""
    payload: dict[str, Any] = {
        "id": str(user_id),
        "username": name,
        "global_name": name,
        "discriminator": "0",
        "avatar": None,
        "public_flags": 0,
        "flags": 0,
        "banner": None,
        "accent_color": None,
        "avatar_decoration_data": None,
    }
    if bot:
        payload["bot"] = True
    return payload


def role_payload(
    role_id: int,
    name: str,
    permissions: int,
    *,
    position: int,
    managed: bool = False,
    bot_id: int | None = None,
) -> dict[str, Any]:
    """A role object (permissions as a string, as in v10)."""
    payload: dict[str, Any] = {
        "id": str(role_id),
        "name": name,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "icon": None,
        "unicode_emoji": None,
        "position": position,
        "permissions": str(permissions),
        "managed": managed,
        "mentionable": False,
        "flags": 0,
    }
    if bot_id is not None:
        payload["tags"] = {"bot_id": str(bot_id)}
    return payload


@dataclass
class Member:
    """A guild member: who, with which roles, since when."""

    user_id: int
    roles: list[int] = field(default_factory=list)
    nick: str | None = None
    joined_at: str = field(default_factory=iso)

    def payload(
        self, user: dict[str, Any] | None = None, *, permissions: int | None = None
    ) -> dict[str, Any]:
        """The member object; with `user` embedded when given, with `permissions` for interactions."""
        data: dict[str, Any] = {
            "roles": [str(r) for r in self.roles],
            "nick": self.nick,
            "avatar": None,
            "banner": None,
            "joined_at": self.joined_at,
            "premium_since": None,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
            "communication_disabled_until": None,
        }
        if user is not None:
            data["user"] = user
        if permissions is not None:
            data["permissions"] = str(permissions)
        return data


@dataclass
class Guild:
    """A guild of the stand-in. `channels` maps channel names to ids."""

    id: int
    name: str
    owner_id: int
    admin_role_id: int
    bot_role_id: int
    channels: dict[str, int] = field(default_factory=dict)
    thread_id: int | None = None
    roles: list[dict[str, Any]] = field(default_factory=list)
    members: dict[int, Member] = field(default_factory=dict)
    offline_members: int = 0  # counted in member_count but not sent: a "large" guild, as Discord sends one
    system_channel_id: int | None = None  # where Discord posts join messages (and bots often greet)

    @property
    def everyone_role_id(self) -> int:
        """The @everyone role shares the guild's id."""
        return self.id

    def role_permissions(self, role_id: int) -> int:
        """The permission bits of one role (0 when unknown)."""
        for role in self.roles:
            if int(role["id"]) == role_id:
                return int(role["permissions"])
        return 0

    def permissions_of(self, user_id: int) -> int:
        """Base guild permissions of a member (no channel overwrites in this model)."""
        if user_id == self.owner_id:
            return ALL_PERMISSIONS
        member = self.members.get(user_id)
        perms = self.role_permissions(self.id)
        if member is not None:
            for role_id in member.roles:
                perms |= self.role_permissions(role_id)
        if perms & ADMINISTRATOR:
            return ALL_PERMISSIONS
        return perms


def text_channel_payload(channel_id: int, guild_id: int, name: str, position: int) -> dict[str, Any]:
    """A guild text channel."""
    return {
        "id": str(channel_id),
        "type": GUILD_TEXT,
        "guild_id": str(guild_id),
        "name": name,
        "position": position,
        "permission_overwrites": [],
        "topic": None,
        "nsfw": False,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "parent_id": None,
        "default_auto_archive_duration": 1440,
        "flags": 0,
    }


def overwrite(target_id: int, *, member: bool = False, allow: int = 0, deny: int = 0) -> dict[str, Any]:
    """A channel permission overwrite for a role (or a member)."""
    return {"id": str(target_id), "type": 1 if member else 0, "allow": str(allow), "deny": str(deny)}


def thread_payload(
    thread_id: int, guild_id: int, parent_id: int, owner_id: int, name: str, *, private: bool = False
) -> dict[str, Any]:
    """A public (or private) thread."""
    return {
        "id": str(thread_id),
        "type": PRIVATE_THREAD if private else PUBLIC_THREAD,
        "guild_id": str(guild_id),
        "parent_id": str(parent_id),
        "owner_id": str(owner_id),
        "name": name,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "total_message_sent": 0,
        "flags": 0,
        "applied_tags": [],
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": iso(),
            "locked": False,
            "invitable": True,
            "create_timestamp": iso(),
        },
    }


def dm_channel_payload(channel_id: int, recipient: dict[str, Any]) -> dict[str, Any]:
    """A DM channel between the bot and one user."""
    return {
        "id": str(channel_id),
        "type": DM,
        "last_message_id": None,
        "flags": 0,
        "recipients": [recipient],
    }


def error_body(code: int, message: str, errors: dict[str, Any] | None = None) -> dict[str, Any]:
    """Discord's JSON error body."""
    body: dict[str, Any] = {"code": code, "message": message}
    if errors is not None:
        body["errors"] = errors
    return body


def field_error(field_name: str, code: str, message: str) -> dict[str, Any]:
    """A 50035 Invalid Form Body error for one field."""
    return error_body(
        50035, "Invalid Form Body", {field_name: {"_errors": [{"code": code, "message": message}]}}
    )


def number_components(components: list[dict[str, Any]], start: int = 1) -> int:
    """Give every component a numeric `id` as Discord does; returns the next free id."""
    next_id = start
    for component in components:
        if "id" not in component:
            component["id"] = next_id
        next_id = max(next_id, int(component["id"])) + 1
        for key in ("components",):
            if isinstance(component.get(key), list):
                next_id = number_components(component[key], next_id)
        if isinstance(component.get("accessory"), dict):
            next_id = number_components([component["accessory"]], next_id)
    return next_id


def find_component(components: list[dict[str, Any]], custom_id: str) -> dict[str, Any] | None:
    """The component with this custom_id anywhere in a component tree."""
    for component in components:
        if component.get("custom_id") == custom_id:
            return component
        for key in ("components",):
            found = find_component(component.get(key) or [], custom_id)
            if found is not None:
                return found
        accessory = component.get("accessory")
        if isinstance(accessory, dict) and accessory.get("custom_id") == custom_id:
            return accessory
    return None
