"""REST routes about the bot and its servers: users, the gateway URL, the application, slash commands
(refused as Discord refuses them: bad names, descriptions, duplicates), guilds and members."""

from __future__ import annotations

import copy
import re
from typing import Any

from aiohttp import web

from standins.discord.model import Guild, error_body, field_error
from standins.discord.records import RecordedRequest
from standins.discord.routes.base import Body, RestError, RestServer, parse_id

COMMAND_NAME = re.compile(r"^[-_'\w]{1,32}$")


class ApplicationRoutes(RestServer):
    """Users, gateway, application, commands, guilds."""

    async def _get_me(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        return 200, {
            **self.bot_user,
            "verified": True,
            "mfa_enabled": False,
            "email": None,
            "locale": "en-US",
        }

    async def _get_user(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        user = self.users.get(parse_id(p["user_id"]))
        return (200, user) if user else (404, error_body(10013, "Unknown User"))

    async def _create_dm(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        user_id = parse_id((rec.json or {}).get("recipient_id"))
        if user_id not in self.users:
            return 400, field_error("recipient_id", "NUMBER_TYPE_COERCE", "Value is not snowflake.")
        return 200, self.channels[self.dm_channel_id(user_id)]

    async def _get_gateway(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        return 200, {"url": self.gateway_url}

    async def _get_gateway_bot(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return 200, {"url": self.gateway_url, "shards": 1, "session_start_limit": limit}

    async def _get_application(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        return 200, {
            "id": str(self.application_id),
            "name": self.bot_user["username"],
            "icon": None,
            "description": "",
            "summary": "",
            "type": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": "0" * 64,
            "owner": self.app_owner,
            "team": None,
            "flags": self._application_flags(),
            "bot": self.bot_user,
            "hook": True,
            "redirect_uris": [],
            "interactions_endpoint_url": None,
            "tags": [],
            "approximate_guild_count": len(self.guilds),
            "integration_types_config": {"0": {}},
        }

    # ------------------------------------------------------------------ REST: commands

    async def _get_commands(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        guild_id = parse_id(p["guild_id"]) if "guild_id" in p else None
        return 200, self.synced_commands.get(guild_id, [])

    async def _put_commands(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        if parse_id(p["app"]) != self.application_id:
            return 403, error_body(20012, "You are not authorized to perform this action on this application")
        guild_id = parse_id(p["guild_id"]) if "guild_id" in p else None
        if guild_id is not None and guild_id not in self.guilds:
            return 403, error_body(50001, "Missing Access")
        commands = rec.json if isinstance(rec.json, list) else []
        problem = _validate_commands(commands)
        if problem is not None:
            return 400, problem
        previous = {(c["name"], c.get("type", 1)): c["id"] for c in self.synced_commands.get(guild_id, [])}
        stored = []
        for command in commands:
            kind = command.get("type", 1)
            item = {
                "description": "",
                "options": [],
                "default_member_permissions": None,
                "nsfw": False,
                **copy.deepcopy(command),
                "id": previous.get((command["name"], kind)) or str(self._snowflake()),
                "application_id": str(self.application_id),
                "type": kind,
                "version": str(self._snowflake()),
            }
            if guild_id is not None:
                item["guild_id"] = str(guild_id)
            else:
                item.setdefault("contexts", None)
                item.setdefault("integration_types", [0])
            stored.append(item)
        self.synced_commands[guild_id] = stored
        return 200, stored

    # ------------------------------------------------------------------ guilds

    def _guild(self, guild_id: str) -> Guild:
        guild = self.guilds.get(parse_id(guild_id))
        if guild is None:
            raise RestError(404, error_body(10004, "Unknown Guild"))
        return guild

    async def _get_guild(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        guild = self._guild(p["guild_id"])
        payload = self._guild_create_payload(guild, ~0)
        for key in ("members", "channels", "threads", "presences", "voice_states", "joined_at", "large"):
            payload.pop(key, None)
        payload.pop("member_count", None)
        payload["approximate_member_count"] = len(guild.members)
        payload["approximate_presence_count"] = 0
        return 200, payload

    async def _get_guild_channels(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        guild = self._guild(p["guild_id"])
        return 200, [self.channels[c] for c in guild.channels.values()]

    async def _get_roles(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        return 200, self._guild(p["guild_id"]).roles

    async def _get_members(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        guild = self._guild(p["guild_id"])
        after = int(request.query.get("after", 0))
        limit = int(request.query.get("limit", 1))
        members = sorted((m for m in guild.members.values() if m.user_id > after), key=lambda m: m.user_id)
        return 200, [m.payload(self.users[m.user_id]) for m in members[:limit]]

    async def _get_member(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        guild = self._guild(p["guild_id"])
        member = guild.members.get(parse_id(p["user_id"]))
        if member is None:
            return 404, error_body(10007, "Unknown Member")
        return 200, member.payload(self.users[member.user_id])


def _validate_commands(commands: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Return a 50035 error body for command definitions Discord would refuse."""
    seen: set[tuple[str, int]] = set()
    for index, command in enumerate(commands):
        name, kind = command.get("name", ""), command.get("type", 1)
        if (name, kind) in seen:
            return field_error(
                f"{index}.name", "APPLICATION_COMMANDS_DUPLICATE_NAME", f"Duplicate name {name}"
            )
        seen.add((name, kind))
        if kind == 1:
            problem = _validate_chat_input(command, f"{index}")
            if problem is not None:
                return problem
        elif not 1 <= len(name) <= 32:  # a user or message command: any case and spaces, as long
            return field_error(f"{index}.name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length.")
    return None


def _validate_chat_input(item: dict[str, Any], where: str) -> dict[str, Any] | None:
    name = item.get("name", "")
    if not COMMAND_NAME.match(name) or name != name.lower():
        return field_error(
            f"{where}.name", "APPLICATION_COMMAND_INVALID_NAME", f"Command name is invalid: {name!r}"
        )
    if not 1 <= len(item.get("description") or "") <= 100:
        return field_error(
            f"{where}.description", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
        )
    options = item.get("options") or []
    if len(options) > 25:
        return field_error(f"{where}.options", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
    for i, option in enumerate(options):
        problem = _validate_chat_input(option, f"{where}.options.{i}")
        if problem is not None:
            return problem
        if len(option.get("choices") or []) > 25:
            return field_error(f"{where}.options.{i}.choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer.")
    return None
