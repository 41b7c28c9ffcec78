"""The humans' side of the Discord stand-in: what tests make people do, sent to the bot as Discord would.

People post, reply, edit, delete and DM (MESSAGE_CREATE / UPDATE / DELETE), run slash commands and
autocomplete them, run message commands, click buttons, pick from selects and submit modals
(INTERACTION_CREATE). Each
interaction returns the `InteractionRecord` on which the bot's answers are recorded.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from standins.discord.cdn import Cdn, Upload
from standins.discord.gateway import Gateway
from standins.discord.model import EVERYONE_PERMISSIONS, Guild, find_component, iso
from standins.discord.records import InteractionRecord, StoredMessage

CLICK_WAIT_SECONDS = 3.0


class Humans(Cdn, Gateway):
    """The test API that plays the people talking to the bot."""

    async def send_message(
        self,
        channel_id: int,
        author: dict[str, Any],
        content: str,
        *,
        reply_to: int | None = None,
        mentions: Sequence[dict[str, Any]] = (),
        mention_bot: bool = False,
        embeds: Sequence[dict[str, Any]] = (),
        attachments: Sequence[dict[str, Any]] = (),
        files: Sequence[Upload] = (),
        stickers: Sequence[str] = (),
        message_type: int | None = None,
        webhook_id: int | None = None,
    ) -> dict[str, Any]:
        """A human posts in a channel or thread: stored and dispatched as MESSAGE_CREATE.

        `mention_bot` puts "<@botid>" in front of the content; `<@id>` in the content and `mentions`
        both fill the mentions array. `reply_to` makes it a reply (message_reference + referenced_message).
        `files` are served by the stand-in's CDN and listed after `attachments` (objects as given);
        `stickers` are sticker names."""
        if channel_id not in self.channels:
            raise KeyError(f"unknown channel {channel_id}")
        author_id = self._ensure_user(author)
        guild = self.guild_of(channel_id)
        if guild is not None:
            self._ensure_member(guild, author_id)
        if mention_bot:
            content = f"<@{self.bot_id}> {content}"
        extra = [self._ensure_user(u) for u in mentions]
        if mention_bot:
            extra.append(self.bot_id)
        reference = None
        if reply_to is not None:
            if reply_to not in self.messages:
                raise KeyError(f"unknown message {reply_to}")
            reference = self._reference_to(self.messages[reply_to])
        stored = self._create_message(
            channel_id,
            self.users[author_id],
            content=content,
            embeds=list(embeds),
            attachments=[*attachments, *(self._attach(channel_id, f) for f in files)],
            reference=reference,
            extra_mentions=extra,
            message_type=message_type,
        )
        if webhook_id is not None:
            stored.data["webhook_id"] = str(webhook_id)
        if stickers:
            stored.data["sticker_items"] = [
                {"id": str(self._snowflake()), "name": name, "format_type": 1} for name in stickers
            ]
        await self._dispatch_message("MESSAGE_CREATE", stored)
        return self._render(stored)

    async def send_dm(self, author: dict[str, Any], content: str, **kwargs: Any) -> dict[str, Any]:
        """A human DMs the bot: MESSAGE_CREATE without guild_id in their DM channel."""
        self._ensure_user(author)
        return await self.send_message(self.dm_channel_id(author), author, content, **kwargs)

    async def edit_message(self, channel_id: int, message_id: int, content: str) -> dict[str, Any]:
        """Someone edits a message: MESSAGE_UPDATE with the full payload."""
        stored = self._require_message(channel_id, message_id)
        stored.data["content"] = content
        stored.data["edited_timestamp"] = iso()
        self._compute_mentions(stored, [])
        await self._dispatch_message("MESSAGE_UPDATE", stored)
        self._changes.notify()
        return self._render(stored)

    async def delete_message(self, channel_id: int, message_id: int) -> None:
        """Someone deletes a message: MESSAGE_DELETE {id, channel_id, guild_id}."""
        stored = self._require_message(channel_id, message_id)
        await self._delete(stored)

    def _require_message(self, channel_id: int, message_id: int) -> StoredMessage:
        stored = self.messages.get(message_id)
        if stored is None or stored.deleted or stored.channel_id != channel_id:
            raise KeyError(f"no message {message_id} in channel {channel_id}")
        return stored

    # ------------------------------------------------------------------ interactions (test side)

    async def invoke_command(
        self,
        author: dict[str, Any],
        name: str,
        *,
        guild_id: int | None = None,
        channel_id: int | None = None,
        options: Sequence[dict[str, Any]] | Mapping[str, Any] = (),
        subcommand: str | None = None,
        group: str | None = None,
    ) -> InteractionRecord:
        """A human runs a slash command: INTERACTION_CREATE type 2.

        `options` is a list of `{"name", "value"[, "type"]}` or a mapping name -> value; types come from
        the synced command, else from the Python value. User values may be user dicts or ids.
        Without guild_id and channel_id the command runs in the author's DM with the bot."""
        return await self._command_interaction(
            2, author, name, guild_id, channel_id, options, subcommand, group, focused=None
        )

    async def invoke_message_command(
        self, author: dict[str, Any], name: str, message: dict[str, Any] | int
    ) -> InteractionRecord:
        """A human picks a message command (Apps, in a message's menu): INTERACTION_CREATE type 2 whose
        data has type 3, the message as `target_id` and, in `resolved.messages`, the message itself."""
        message_id = int(message if isinstance(message, int) else message["id"])
        stored = self.messages.get(message_id)
        if stored is None or stored.deleted or stored.ephemeral:
            raise KeyError(f"message {message_id} is unknown, deleted or ephemeral")
        guild = self.guild_of(stored.channel_id)
        guild_id = guild.id if guild is not None else None
        command, command_guild = self._find_command(name, guild_id, kind=3)
        data: dict[str, Any] = {
            "id": command["id"] if command else str(self._snowflake()),
            "name": name,
            "type": 3,
            "target_id": str(message_id),
            "resolved": {"messages": {str(message_id): self._render(stored)}},
        }
        if command_guild is not None:
            data["guild_id"] = str(command_guild)
        return await self._start_interaction(2, author, data, guild_id, stored.channel_id)

    async def autocomplete(
        self,
        author: dict[str, Any],
        name: str,
        *,
        focused_option: str,
        value: str,
        guild_id: int | None = None,
        channel_id: int | None = None,
        options: Sequence[dict[str, Any]] | Mapping[str, Any] = (),
        subcommand: str | None = None,
        group: str | None = None,
    ) -> InteractionRecord:
        """A human types into an autocompleted option: INTERACTION_CREATE type 4."""
        return await self._command_interaction(
            4, author, name, guild_id, channel_id, options, subcommand, group, focused=(focused_option, value)
        )

    async def click_button(
        self,
        author: dict[str, Any],
        message: dict[str, Any] | int,
        custom_id: str,
        *,
        guild_id: int | None = None,
        channel_id: int | None = None,
    ) -> InteractionRecord:
        """A human clicks a button on a message: INTERACTION_CREATE type 3 (component_type 2)."""
        return await self._component_interaction(author, message, custom_id, None, guild_id, channel_id)

    async def select_option(
        self,
        author: dict[str, Any],
        message: dict[str, Any] | int,
        custom_id: str,
        values: Sequence[str],
        *,
        guild_id: int | None = None,
        channel_id: int | None = None,
    ) -> InteractionRecord:
        """A human picks values in a select menu: INTERACTION_CREATE type 3."""
        return await self._component_interaction(
            author, message, custom_id, list(values), guild_id, channel_id
        )

    async def submit_modal(
        self, author: dict[str, Any], opened_by: InteractionRecord, values: Mapping[str, str]
    ) -> InteractionRecord:
        """A human submits the modal the bot opened (callback type 9) with text input values by custom_id."""
        callback = opened_by.callback
        if callback is None or callback.get("type") != 9:
            raise ValueError("that interaction did not open a modal")
        modal = callback["data"]

        def fill(component: dict[str, Any]) -> dict[str, Any]:
            if component.get("type") == 1:
                return {"type": 1, "components": [fill(c) for c in component.get("components", [])]}
            if component.get("type") == 18:
                return {"type": 18, "id": component.get("id", 0), "component": fill(component["component"])}
            if component.get("type") == 4:
                cid = component["custom_id"]
                return {
                    "type": 4,
                    "id": component.get("id", 0),
                    "custom_id": cid,
                    "value": values.get(cid, ""),
                }
            return copy.deepcopy(component)

        data = {"custom_id": modal["custom_id"], "components": [fill(c) for c in modal.get("components", [])]}
        base = opened_by.payload
        guild_id = int(base["guild_id"]) if base.get("guild_id") else None
        return await self._start_interaction(5, author, data, guild_id, int(base["channel_id"]))

    async def _command_interaction(
        self,
        kind: int,
        author: dict[str, Any],
        name: str,
        guild_id: int | None,
        channel_id: int | None,
        options: Sequence[dict[str, Any]] | Mapping[str, Any],
        subcommand: str | None,
        group: str | None,
        focused: tuple[str, str] | None,
    ) -> InteractionRecord:
        if channel_id is None and guild_id is not None:
            channel_id = next(iter(self.guilds[guild_id].channels.values()))
        if channel_id is None:
            self._ensure_user(author)
            channel_id = self.dm_channel_id(author)
        guild = self.guild_of(channel_id)
        guild_id = guild.id if guild is not None else None

        command, command_guild = self._find_command(name, guild_id)
        schema = command.get("options", []) if command else []
        path = [p for p in (group, subcommand) if p]
        for part in path:
            schema = next((o.get("options", []) for o in schema if o.get("name") == part), [])
        resolved: dict[str, dict[str, Any]] = {}
        built = self._build_options(options, schema, guild, resolved)
        if focused is not None:
            focus_name, focus_value = focused
            focus_type = next((o.get("type", 3) for o in schema if o.get("name") == focus_name), 3)
            built = [o for o in built if o["name"] != focus_name]
            built.append({"name": focus_name, "type": focus_type, "value": focus_value, "focused": True})
        if subcommand:
            built = [{"type": 1, "name": subcommand, "options": built}]
        if group:
            built = [{"type": 2, "name": group, "options": built}]
        data: dict[str, Any] = {
            "id": command["id"] if command else str(self._snowflake()),
            "name": name,
            "type": 1,
            "options": built,
        }
        if command_guild is not None:
            data["guild_id"] = str(command_guild)
        if resolved:
            data["resolved"] = resolved
        return await self._start_interaction(kind, author, data, guild_id, channel_id)

    def _find_command(
        self, name: str, guild_id: int | None, *, kind: int = 1
    ) -> tuple[dict[str, Any] | None, int | None]:
        """The synced command of this name and type (1 slash, 3 message), the guild's before the global."""
        for where in (guild_id, None) if guild_id is not None else (None,):
            for cmd in self.synced_commands.get(where, []):
                if cmd["name"] == name and cmd.get("type", 1) == kind:
                    return cmd, where
        return None, None

    def _build_options(
        self,
        options: Sequence[dict[str, Any]] | Mapping[str, Any],
        schema: list[dict[str, Any]],
        guild: Guild | None,
        resolved: dict[str, dict[str, Any]],
    ) -> list[dict[str, Any]]:
        given = (
            [{"name": k, "value": v} for k, v in options.items()]
            if isinstance(options, Mapping)
            else [dict(o) for o in options]
        )
        built = []
        for option in given:
            declared = next((o for o in schema if o.get("name") == option["name"]), None)
            value = option.get("value")
            kind = option.get("type") or (declared or {}).get("type") or _infer_option_type(value)
            if kind in (6, 9) and value is not None:
                user = value if isinstance(value, Mapping) else self.users[int(value)]
                user_id = self._ensure_user(dict(user))
                value = str(user_id)
                resolved.setdefault("users", {})[value] = self.users[user_id]
                if guild is not None and user_id in guild.members:
                    member = guild.members[user_id].payload(permissions=guild.permissions_of(user_id))
                    resolved.setdefault("members", {})[value] = member
            elif kind == 7 and value is not None:
                channel = self.channels[int(value)]
                value = channel["id"]
                resolved.setdefault("channels", {})[value] = {
                    "id": value,
                    "name": channel.get("name"),
                    "type": channel["type"],
                    "permissions": str(EVERYONE_PERMISSIONS),
                }
            elif kind == 8 and value is not None and guild is not None:
                value = str(value)
                role = next(r for r in guild.roles if r["id"] == value)
                resolved.setdefault("roles", {})[value] = role
            built.append({"name": option["name"], "type": kind, "value": value})
        return built

    async def _component_interaction(
        self,
        author: dict[str, Any],
        message: dict[str, Any] | int,
        custom_id: str,
        values: list[str] | None,
        guild_id: int | None,
        channel_id: int | None,
    ) -> InteractionRecord:
        message_id = int(message if isinstance(message, int) else message["id"])
        stored = self.messages.get(message_id)
        if stored is None or stored.deleted:
            raise KeyError(f"message {message_id} is unknown or deleted")
        component = find_component(stored.data.get("components", []), custom_id)
        if component is None:
            raise ValueError(f"message {message_id} has no component with custom_id {custom_id!r}")
        if component.get("disabled"):
            raise ValueError(f"component {custom_id!r} of message {message_id} is disabled")
        channel_id = channel_id or stored.channel_id
        guild = self.guild_of(channel_id)
        guild_id = guild.id if guild is not None else guild_id
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component["type"]}
        if "id" in component:
            data["id"] = component["id"]
        if values is not None:
            data["values"] = values
        await self._until_a_client_knows(message_id, component["type"], custom_id)
        return await self._start_interaction(3, author, data, guild_id, channel_id, message=stored)

    async def _until_a_client_knows(self, message_id: int, component_type: int, custom_id: str) -> None:
        """A human sees a button only after their client shows the message, which is after the bot's
        request that sent it has returned; a test clicks the moment the stand-in stores it. Until the bot
        has read that answer, discord.py has no view for the message and drops the click, so the click
        waits (a bounded while: a button the bot no longer listens to is still clicked) for a client
        that knows the component."""
        if not self.component_readers:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLICK_WAIT_SECONDS
        while not any(knows(message_id, component_type, custom_id) for knows in self.component_readers):
            if loop.time() > deadline:
                return
            await asyncio.sleep(0.01)

    async def _start_interaction(
        self,
        kind: int,
        author: dict[str, Any],
        data: dict[str, Any],
        guild_id: int | None,
        channel_id: int,
        *,
        message: StoredMessage | None = None,
    ) -> InteractionRecord:
        author_id = self._ensure_user(author)
        interaction_id = self._snowflake()
        token = "aW50ZXJhY3Rpb24" + secrets.token_urlsafe(24)
        channel = dict(self.channels[channel_id])
        guild = self.guilds.get(guild_id) if guild_id is not None else None
        payload: dict[str, Any] = {
            "id": str(interaction_id),
            "application_id": str(self.application_id),
            "type": kind,
            "data": data,
            "channel_id": str(channel_id),
            "token": token,
            "version": 1,
            "locale": "en-US",
            "entitlements": [],
            "attachment_size_limit": 26214400,
        }
        if guild is not None:
            member = self._ensure_member(guild, author_id)
            perms = guild.permissions_of(author_id)
            channel["permissions"] = str(perms)
            payload["guild_id"] = str(guild.id)
            payload["guild"] = {"id": str(guild.id), "locale": "en-US", "features": []}
            payload["guild_locale"] = "en-US"
            payload["member"] = member.payload(self.users[author_id], permissions=perms)
            payload["app_permissions"] = str(guild.permissions_of(self.bot_id))
            payload["authorizing_integration_owners"] = {"0": str(guild.id)}
            payload["context"] = 0
        else:
            payload["user"] = self.users[author_id]
            payload["app_permissions"] = str(EVERYONE_PERMISSIONS)
            payload["authorizing_integration_owners"] = {"0": "0"}
            payload["context"] = 1
        payload["channel"] = channel
        if message is not None:
            payload["message"] = self._render(message)
        record = InteractionRecord(interaction_id, token, payload, self._changes)
        self.interactions[interaction_id] = record
        self._interactions_by_token[token] = record
        await self._dispatch("INTERACTION_CREATE", payload, once=True)
        return record


def _infer_option_type(value: Any) -> int:
    if isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return 4
    if isinstance(value, float):
        return 10
    if isinstance(value, Mapping) and "username" in value:
        return 6
    return 3
