"""`DiscordStandIn`: a local aiohttp server speaking Discord's v10 gateway and REST API.

The real, unmodified discord.py connects to it (see `runner.run_bot`). Tests drive the "human" side
through async methods (`send_message`, `invoke_command`, `click_button` ...) and assert on what the
bot did through `requests`, `bot_messages()` and the returned `InteractionRecord`s.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import logging
import re
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from aiohttp import WSMsgType, web

from standins.discord.model import (
    BOT_ROLE_PERMISSIONS,
    EVERYONE_PERMISSIONS,
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    INTENT_DIRECT_MESSAGES,
    INTENT_GUILD_MEMBERS,
    INTENT_GUILD_MESSAGES,
    INTENT_GUILDS,
    INTENT_MESSAGE_CONTENT,
    MANAGE_GUILD,
    MESSAGE_CHAT_INPUT_COMMAND,
    MESSAGE_DEFAULT,
    MESSAGE_REPLY,
    PRIVILEGED_INTENTS,
    ROLE_MENTION,
    THREAD_TYPES,
    USER_MENTION,
    Guild,
    Member,
    SnowflakeFactory,
    dm_channel_payload,
    error_body,
    field_error,
    find_component,
    iso,
    number_components,
    role_payload,
    snowflake_time,
    text_channel_payload,
    thread_payload,
    user_payload,
)
from standins.discord.records import Changes, InteractionRecord, RecordedRequest, StoredMessage

log = logging.getLogger(__name__)

API_PREFIX = "/api/v10"
MAX_CONTENT = 2000
MAX_EMBEDS = 10
MESSAGE_FLAGS_ALLOWED = (1 << 2) | (1 << 6) | (1 << 12) | (1 << 15)
COMMAND_NAME = re.compile(r"^[-_'\w]{1,32}$")

Body = Any
Handler = Callable[[web.Request, dict[str, str], RecordedRequest], Awaitable[tuple[int, Body]]]

UNKNOWN_MESSAGE = error_body(10008, "Unknown Message")
UNKNOWN_CHANNEL = error_body(10003, "Unknown Channel")
UNKNOWN_INTERACTION = error_body(10062, "Unknown interaction")
UNKNOWN_WEBHOOK = error_body(10015, "Unknown Webhook")


@dataclass(eq=False)
class _Connection:
    """One gateway websocket."""

    ws: web.WebSocketResponse
    query: dict[str, str]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed_by_server: bool = False

    async def close(self, code: int, message: str) -> None:
        """Close from the stand-in's side (the session stays resumable unless told otherwise)."""
        self.closed_by_server = True
        await self.ws.close(code=code, message=message.encode())

    async def send(self, frame: dict[str, Any]) -> None:
        """Send one JSON text frame (never compressed: discord.py reads text frames as plain JSON)."""
        async with self.lock:
            if self.ws.closed:
                return
            try:
                await self.ws.send_str(json.dumps(frame))
            except (ConnectionError, RuntimeError) as exc:
                log.debug("gateway send failed: %s", exc)


@dataclass(eq=False)
class _Session:
    """A gateway session: survives a dropped socket so the client can RESUME it."""

    session_id: str
    intents: int
    identify: dict[str, Any]
    conn: _Connection | None
    seq: int = 0
    ready: bool = False
    backlog: list[dict[str, Any]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass
class _FailRule:
    """An injected failure: answer matching requests with `status` and `body`, `remaining` times."""

    method: str
    pattern: re.Pattern[str]
    status: int
    remaining: int | None
    body: dict[str, Any]


class DiscordStandIn:
    """A local stand-in for Discord's gateway and REST API, with a test API to play the humans."""

    def __init__(
        self,
        *,
        refuse_privileged_intents: bool | int = False,
        heartbeat_interval: int = 41250,
        token: str | None = None,
        interaction_ack_timeout: float | None = 3.0,
        bot_name: str = "memory-bot",
    ) -> None:
        """`refuse_privileged_intents`: True refuses all privileged intents, an int refuses those bits.
        `token`: when set, other tokens are rejected (401 on REST, 4004 on the gateway).
        `interaction_ack_timeout`: seconds the bot has to answer an interaction (None: no limit)."""
        if refuse_privileged_intents is True:
            self.refused_intents = PRIVILEGED_INTENTS
        else:
            self.refused_intents = int(refuse_privileged_intents or 0)
        self.heartbeat_interval = heartbeat_interval
        self.token = token
        self.interaction_ack_timeout = interaction_ack_timeout
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

        self.requests: list[RecordedRequest] = []
        self.unknown_routes: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.synced_commands: dict[int | None, list[dict[str, Any]]] = {}
        self.identify_payloads: list[dict[str, Any]] = []
        self.member_requests: list[dict[str, Any]] = []  # REQUEST_GUILD_MEMBERS (op 8) payloads
        self.gateway_received: list[dict[str, Any]] = []
        self.presence: dict[str, Any] | None = None
        self.interactions: dict[int, InteractionRecord] = {}
        self._interactions_by_token: dict[str, InteractionRecord] = {}

        self._sessions: dict[str, _Session] = {}
        self._connections: set[_Connection] = set()
        self._fail_rules: list[_FailRule] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._register_routes()
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Listen on a free port of 127.0.0.1."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", API_PREFIX + "/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        site = web.SockSite(self._runner, sock)
        await site.start()

    async def stop(self) -> None:
        """Close every gateway socket and the server."""
        for conn in list(self._connections):
            with contextlib.suppress(Exception):
                await conn.close(1001, "stand-in stopping")
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> DiscordStandIn:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

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

    # ------------------------------------------------------------------ model setup

    def add_guild(
        self,
        name: str,
        *,
        channels: Sequence[str] = ("general", "random", "bot-log"),
        with_thread: bool = True,
        owner: dict[str, Any] | None = None,
        offline_members: int = 0,
    ) -> Guild:
        """Add a guild with text channels, a public thread in the first one, roles and the bot as a member.

        The owner is `owner` or a new user named "<name>-owner". Added after the bot connected, the guild
        is sent as GUILD_CREATE. `offline_members` makes it a large guild whose GUILD_CREATE lacks that
        many members, which a client must request (op 8) if it wants the whole list."""
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
            self._add_channel(text_channel_payload(channel_id, guild_id, channel_name, position), guild_id)
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

    # ------------------------------------------------------------------ failure injection

    def fail_route(
        self,
        method: str,
        path_regex: str,
        status: int = 403,
        count: int | None = 1,
        *,
        body: dict[str, Any] | None = None,
    ) -> None:
        """Answer the next `count` (None: all) matching REST requests with an error.

        `path_regex` is searched in the path after /api/v10 (e.g. r"/channels/\\d+/messages$"). The
        default bodies are Discord's: 403 Missing Permissions, 404 Unknown, 429 with retry_after."""
        if body is None:
            body = {
                403: error_body(50013, "Missing Permissions"),
                404: error_body(0, "404: Not Found"),
                429: {"message": "You are being rate limited.", "retry_after": 0.05, "global": False},
                500: error_body(0, "500: Internal Server Error"),
            }.get(status, error_body(0, f"{status}: stand-in injected failure"))
        self._fail_rules.append(_FailRule(method.upper(), re.compile(path_regex), status, count, body))

    # ------------------------------------------------------------------ waiting

    def _ready_sessions(self) -> list[_Session]:
        return [s for s in self._sessions.values() if s.ready and s.conn is not None]

    async def wait_until_ready(self, timeout: float = 10.0) -> None:
        """Wait until a bot identified and was sent READY and every GUILD_CREATE."""
        await self._changes.wait_until(lambda: self._ready_sessions() or None, timeout, "a ready bot session")

    async def wait_for_request(
        self, predicate: Callable[[RecordedRequest], bool], timeout: float = 5.0, *, start: int = 0
    ) -> RecordedRequest:
        """The first recorded request from index `start` on (default: all of them) matching `predicate`."""

        def check() -> RecordedRequest | None:
            return next((r for r in self.requests[start:] if r.status is not None and predicate(r)), None)

        return await self._changes.wait_until(check, timeout, "a matching REST request")

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

    # ------------------------------------------------------------------ reading the model

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

    # ------------------------------------------------------------------ the humans' side

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
        message_type: int | None = None,
        webhook_id: int | None = None,
    ) -> dict[str, Any]:
        """A human posts in a channel or thread: stored and dispatched as MESSAGE_CREATE.

        `mention_bot` puts "<@botid>" in front of the content; `<@id>` in the content and `mentions`
        both fill the mentions array. `reply_to` makes it a reply (message_reference + referenced_message)."""
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
            attachments=list(attachments),
            reference=reference,
            extra_mentions=extra,
            message_type=message_type,
        )
        if webhook_id is not None:
            stored.data["webhook_id"] = str(webhook_id)
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

    def _find_command(self, name: str, guild_id: int | None) -> tuple[dict[str, Any] | None, int | None]:
        if guild_id is not None:
            for cmd in self.synced_commands.get(guild_id, []):
                if cmd["name"] == name and cmd.get("type", 1) == 1:
                    return cmd, guild_id
        for cmd in self.synced_commands.get(None, []):
            if cmd["name"] == name and cmd.get("type", 1) == 1:
                return cmd, None
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
        return await self._start_interaction(3, author, data, guild_id, channel_id, message=stored)

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
        await self._dispatch("INTERACTION_CREATE", payload)
        return record

    # ------------------------------------------------------------------ connection control

    async def reconnect_bots(self, *, resume: bool = True) -> None:
        """Ask connected bots to reconnect: op 7 RECONNECT (they RESUME) or op 9 (they IDENTIFY again)."""
        for session in self._ready_sessions():
            assert session.conn is not None
            if resume:
                await session.conn.send({"op": 7, "d": None, "s": None, "t": None})
            else:
                self._sessions.pop(session.session_id, None)
                session.ready = False
                await session.conn.send({"op": 9, "d": False, "s": None, "t": None})

    async def disconnect_bots(self, code: int = 4000) -> None:
        """Drop every gateway socket with `code` (4000 lets the client RESUME)."""
        for conn in list(self._connections):
            await conn.close(code, "stand-in disconnect")

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

    async def _dispatch_message(self, event: str, stored: StoredMessage) -> None:
        if stored.ephemeral:
            return
        intent = INTENT_GUILD_MESSAGES if stored.guild_id is not None else INTENT_DIRECT_MESSAGES
        payload = self._render(stored, gateway=True)
        await self._dispatch(event, payload, intent=intent, transform=self._hide_content)

    def _hide_content(self, payload: dict[str, Any], intents: int) -> dict[str, Any]:
        """Without the message content intent, guild messages arrive empty unless they concern the bot."""
        if intents & INTENT_MESSAGE_CONTENT or "guild_id" not in payload:
            return payload
        if payload["author"]["id"] == str(self.bot_id):
            return payload
        if any(m["id"] == str(self.bot_id) for m in payload.get("mentions", [])):
            return payload
        hidden = dict(payload)
        hidden.update(content="", embeds=[], attachments=[], components=[])
        return hidden

    async def _delete(self, stored: StoredMessage) -> None:
        stored.deleted = True
        self.deleted_message_ids.append(stored.id)
        ids = self._channel_messages.get(stored.channel_id, [])
        if stored.id in ids:
            ids.remove(stored.id)
        self._changes.notify()
        if stored.ephemeral:
            return
        data: dict[str, Any] = {"id": str(stored.id), "channel_id": str(stored.channel_id)}
        if stored.guild_id is not None:
            data["guild_id"] = str(stored.guild_id)
        intent = INTENT_GUILD_MESSAGES if stored.guild_id is not None else INTENT_DIRECT_MESSAGES
        await self._dispatch("MESSAGE_DELETE", data, intent=intent)

    # ------------------------------------------------------------------ gateway

    async def _dispatch(
        self,
        event: str,
        data: dict[str, Any],
        *,
        intent: int | None = None,
        transform: Callable[[dict[str, Any], int], dict[str, Any]] | None = None,
    ) -> None:
        """Send a DISPATCH to every identified session whose intents cover it."""
        for session in list(self._sessions.values()):
            if not session.ready:
                continue
            if intent is not None and not session.intents & intent:
                continue
            payload = transform(data, session.intents) if transform else data
            await self._send_event(session, event, payload)

    async def _send_event(self, session: _Session, event: str, data: dict[str, Any]) -> None:
        async with session.lock:
            session.seq += 1
            frame = {"op": 0, "t": event, "s": session.seq, "d": data}
            session.backlog.append(frame)
            del session.backlog[:-2000]
            if session.conn is not None:
                await session.conn.send(frame)

    def _guild_create_payload(self, guild: Guild, intents: int) -> dict[str, Any]:
        members = guild.members.values()
        if not intents & INTENT_GUILD_MEMBERS:
            members = [m for m in members if m.user_id == self.bot_id]
        channels, threads = [], []
        for channel_id, guild_id in self._channel_guild.items():
            if guild_id != guild.id:
                continue
            channel = self.channels[channel_id]
            (threads if channel["type"] in THREAD_TYPES else channels).append(channel)
        return {
            "id": str(guild.id),
            "name": guild.name,
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "owner_id": str(guild.owner_id),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "roles": guild.roles,
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "application_id": None,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "vanity_url_code": None,
            "description": None,
            "banner": None,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "preferred_locale": "en-US",
            "public_updates_channel_id": None,
            "nsfw_level": 0,
            "premium_progress_bar_enabled": False,
            "joined_at": guild.members[self.bot_id].joined_at,
            "large": guild.offline_members > 0,
            "unavailable": False,
            "member_count": len(guild.members) + guild.offline_members,
            "voice_states": [],
            "members": [m.payload(self.users[m.user_id]) for m in members],
            "channels": channels,
            "threads": threads,
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    async def _dispatch_guild_create(self, guild: Guild) -> None:
        """The bot joined a guild: GUILD_CREATE without `unavailable` (discord.py then fires guild_join)."""
        for session in self._ready_sessions():
            payload = self._guild_create_payload(guild, session.intents)
            del payload["unavailable"]
            await self._send_event(session, "GUILD_CREATE", payload)

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        conn = _Connection(ws, dict(request.query))
        self._connections.add(conn)
        session: _Session | None = None
        try:
            await conn.send(
                {"op": 10, "s": None, "t": None, "d": {"heartbeat_interval": self.heartbeat_interval}}
            )
            async for msg in ws:
                if msg.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                    continue
                try:
                    frame = json.loads(msg.data)
                except ValueError:
                    await conn.close(4002, "Error while decoding payload.")
                    break
                self.gateway_received.append(frame)
                session = await self._on_gateway_frame(conn, session, frame)
        finally:
            self._connections.discard(conn)
            if session is not None and session.conn is conn:
                session.conn = None
                session.ready = False
                if ws.close_code in (1000, 1001) and not conn.closed_by_server:
                    # A client's clean close ends its session, as on Discord.
                    self._sessions.pop(session.session_id, None)
            self._changes.notify()
        return ws

    async def _on_gateway_frame(
        self, conn: _Connection, session: _Session | None, frame: dict[str, Any]
    ) -> _Session | None:
        op, d = frame.get("op"), frame.get("d")
        if op == 1:
            await conn.send({"op": 11, "s": None, "t": None, "d": None})
        elif op == 2:
            if session is not None:
                await conn.close(4005, "Already authenticated.")
                return session
            return await self._identify(conn, d or {})
        elif op == 6:
            return await self._resume(conn, d or {})
        elif op == 3:
            self.presence = d
        elif op == 8 and session is not None:
            self.member_requests.append(d or {})
            await self._send_member_chunk(session, d or {})
        elif session is None and op not in (1, 2, 6):
            await conn.close(4003, "Not authenticated.")
        return session

    async def _identify(self, conn: _Connection, d: dict[str, Any]) -> _Session | None:
        self.identify_payloads.append(d)
        if self.token is not None and d.get("token") != self.token:
            await conn.close(4004, "Authentication failed.")
            return None
        intents = d.get("intents")
        if not isinstance(intents, int):
            await conn.close(4013, "Invalid intent(s).")
            return None
        if intents & self.refused_intents:
            await conn.close(4014, "Disallowed intent(s).")
            return None
        session = _Session(session_id=secrets.token_hex(16), intents=intents, identify=d, conn=conn)
        self._sessions[session.session_id] = session
        ready: dict[str, Any] = {
            "v": 10,
            "user": {**self.bot_user, "verified": True, "mfa_enabled": False, "email": None},
            "guilds": [{"id": str(g), "unavailable": True} for g in self.guilds],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(self.application_id), "flags": self._application_flags()},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "user_settings": {},
            "auth": {},
        }
        if "shard" in d:
            ready["shard"] = d["shard"]
        await self._send_event(session, "READY", ready)
        for guild in list(self.guilds.values()):
            await self._send_event(session, "GUILD_CREATE", self._guild_create_payload(guild, intents))
        session.ready = True
        self._changes.notify()
        return session

    async def _resume(self, conn: _Connection, d: dict[str, Any]) -> _Session | None:
        session = self._sessions.get(str(d.get("session_id")))
        if session is None or (self.token is not None and d.get("token") != self.token):
            await conn.send({"op": 9, "s": None, "t": None, "d": False})
            return None
        last = int(d.get("seq") or 0)
        async with session.lock:
            old, session.conn = session.conn, conn
            if old is not None and old is not conn:
                # The old socket may not have noticed it is dead yet; the resumed one takes over.
                await old.close(4000, "session resumed elsewhere")
            for frame in session.backlog:
                if frame["s"] > last:
                    await conn.send(frame)
        await self._send_event(session, "RESUMED", {})
        session.ready = True
        self._changes.notify()
        return session

    async def _send_member_chunk(self, session: _Session, d: dict[str, Any]) -> None:
        guild = self.guilds.get(int(d.get("guild_id", 0)))
        if guild is None:
            return
        wanted = {int(u) for u in d.get("user_ids") or []}
        query = (d.get("query") or "").lower()
        members = [
            m
            for m in guild.members.values()
            if (not wanted or m.user_id in wanted)
            and self.users[m.user_id]["username"].lower().startswith(query)
        ]
        limit = d.get("limit") or 0
        if limit:
            members = members[:limit]
        chunk: dict[str, Any] = {
            "guild_id": str(guild.id),
            "members": [m.payload(self.users[m.user_id]) for m in members],
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [str(u) for u in wanted if u not in guild.members],
        }
        if d.get("nonce") is not None:
            chunk["nonce"] = d["nonce"]
        if d.get("presences"):
            chunk["presences"] = []
        await self._send_event(session, "GUILD_MEMBERS_CHUNK", chunk)

    def _application_flags(self) -> int:
        flags = 0
        if not self.refused_intents & INTENT_GUILD_MEMBERS:
            flags |= 1 << 15
        if not self.refused_intents & INTENT_MESSAGE_CONTENT:
            flags |= 1 << 19
        return flags

    # ------------------------------------------------------------------ REST plumbing

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        method = request.method.upper()
        body, files = await _read_body(request)
        recorded = RecordedRequest(method, path, dict(request.query), body, dict(request.headers), files)
        self.requests.append(recorded)
        try:
            status, payload = await self._answer(request, method, path, recorded)
        except _RestError as exc:
            status, payload = exc.status, exc.body
        except Exception as exc:
            log.exception("stand-in error on %s %s", method, path)
            self.errors.append(f"{method} {path}: {exc!r}")
            status, payload = 400, error_body(0, f"stand-in error: {exc!r}")
        recorded.status, recorded.response = status, payload
        self._changes.notify()
        return _response(status, payload, f"{method} {path}")

    async def _answer(
        self, request: web.Request, method: str, path: str, recorded: RecordedRequest
    ) -> tuple[int, Body]:
        for rule in self._fail_rules:
            if rule.method in (method, "*") and rule.pattern.search(path) and rule.remaining != 0:
                if rule.remaining is not None:
                    rule.remaining -= 1
                return rule.status, rule.body
        is_webhook = path.startswith(("/webhooks/", "/interactions/"))
        if (
            self.token is not None
            and not is_webhook
            and request.headers.get("Authorization") != f"Bot {self.token}"
        ):
            return 401, error_body(0, "401: Unauthorized")
        for route_method, pattern, handler in self._routes:
            if route_method != method:
                continue
            match = pattern.fullmatch(path)
            if match is not None:
                return await handler(request, match.groupdict(), recorded)
        self.unknown_routes.append((method, path))
        return 404, error_body(0, "404: Not Found")

    def _route(self, method: str, pattern: str, handler: Handler) -> None:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
        self._routes.append((method, re.compile(regex), handler))

    def _register_routes(self) -> None:
        r = self._route
        r("GET", "/users/@me", self._get_me)
        r("GET", "/users/{user_id}", self._get_user)
        r("POST", "/users/@me/channels", self._create_dm)
        r("GET", "/gateway", self._get_gateway)
        r("GET", "/gateway/bot", self._get_gateway_bot)
        r("GET", "/applications/@me", self._get_application)
        r("GET", "/oauth2/applications/@me", self._get_application)
        r("GET", "/applications/{app}/commands", self._get_commands)
        r("PUT", "/applications/{app}/commands", self._put_commands)
        r("GET", "/applications/{app}/guilds/{guild_id}/commands", self._get_commands)
        r("PUT", "/applications/{app}/guilds/{guild_id}/commands", self._put_commands)
        r("GET", "/channels/{channel_id}", self._get_channel)
        r("GET", "/channels/{channel_id}/messages", self._get_messages)
        r("POST", "/channels/{channel_id}/messages", self._post_message)
        r("GET", "/channels/{channel_id}/messages/{message_id}", self._get_message)
        r("PATCH", "/channels/{channel_id}/messages/{message_id}", self._patch_message)
        r("DELETE", "/channels/{channel_id}/messages/{message_id}", self._delete_message)
        r("POST", "/channels/{channel_id}/typing", self._typing)
        r("PUT", "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me", self._add_reaction)
        r(
            "DELETE",
            "/channels/{channel_id}/messages/{message_id}/reactions/{emoji}/@me",
            self._remove_reaction,
        )
        r("GET", "/guilds/{guild_id}", self._get_guild)
        r("GET", "/guilds/{guild_id}/channels", self._get_guild_channels)
        r("GET", "/guilds/{guild_id}/roles", self._get_roles)
        r("GET", "/guilds/{guild_id}/members", self._get_members)
        r("GET", "/guilds/{guild_id}/members/{user_id}", self._get_member)
        r("POST", "/interactions/{interaction_id}/{token}/callback", self._interaction_callback)
        r("POST", "/webhooks/{app}/{token}", self._followup)
        r("GET", "/webhooks/{app}/{token}/messages/{message_id}", self._get_webhook_message)
        r("PATCH", "/webhooks/{app}/{token}/messages/{message_id}", self._edit_webhook_message)
        r("DELETE", "/webhooks/{app}/{token}/messages/{message_id}", self._delete_webhook_message)

    # ------------------------------------------------------------------ REST: users, gateway, application

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
        user = self.users.get(_int(p["user_id"]))
        return (200, user) if user else (404, error_body(10013, "Unknown User"))

    async def _create_dm(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        user_id = _int((rec.json or {}).get("recipient_id"))
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
        guild_id = _int(p["guild_id"]) if "guild_id" in p else None
        return 200, self.synced_commands.get(guild_id, [])

    async def _put_commands(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        if _int(p["app"]) != self.application_id:
            return 403, error_body(20012, "You are not authorized to perform this action on this application")
        guild_id = _int(p["guild_id"]) if "guild_id" in p else None
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

    # ------------------------------------------------------------------ REST: channels and messages

    def _channel(self, channel_id: str) -> dict[str, Any]:
        channel = self.channels.get(_int(channel_id))
        if channel is None:
            raise _RestError(404, UNKNOWN_CHANNEL)
        return channel

    def _message(self, channel_id: str, message_id: str) -> StoredMessage:
        self._channel(channel_id)
        stored = self.messages.get(_int(message_id))
        if stored is None or stored.deleted or stored.ephemeral or stored.channel_id != _int(channel_id):
            raise _RestError(404, UNKNOWN_MESSAGE)
        return stored

    def _rest_view(self, stored: StoredMessage) -> dict[str, Any]:
        """A message as the bot may read it over REST (content hidden without the intent)."""
        payload = self._render(stored)
        intents = self._current_intents()
        if stored.guild_id is not None:
            payload["guild_id"] = str(stored.guild_id)
            payload = self._hide_content(payload, intents)
            payload.pop("guild_id")
        return payload

    def _current_intents(self) -> int:
        if not self.identify_payloads:
            return ~0
        return int(self.identify_payloads[-1].get("intents") or 0)

    async def _get_channel(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        return 200, self._channel(p["channel_id"])

    async def _get_messages(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        self._channel(p["channel_id"])
        ids = sorted(self._channel_messages.get(_int(p["channel_id"]), []))
        q = request.query
        limit = max(1, min(100, int(q.get("limit", 50))))
        if "before" in q:
            chosen = [i for i in ids if i < int(q["before"])][-limit:]
        elif "after" in q:
            chosen = [i for i in ids if i > int(q["after"])][:limit]
        elif "around" in q:
            around = int(q["around"])
            older = [i for i in ids if i < around][-(limit // 2) :] if limit > 1 else []
            newer = [i for i in ids if i >= around][: limit - len(older)]
            chosen = older + newer
        else:
            chosen = ids[-limit:]
        return 200, [self._rest_view(self.messages[i]) for i in reversed(chosen)]

    async def _get_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        return 200, self._rest_view(self._message(p["channel_id"], p["message_id"]))

    async def _post_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        channel_id = _int(p["channel_id"])
        self._channel(p["channel_id"])
        body = rec.json or {}
        _validate_message_body(body, rec.files, require_content=True)
        reference = None
        ref = body.get("message_reference")
        if ref:
            target = self.messages.get(_int(ref.get("message_id")))
            if target is None or target.deleted or target.ephemeral:
                if ref.get("fail_if_not_exists", True):
                    raise _RestError(
                        400,
                        field_error(
                            "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
                        ),
                    )
            else:
                reference = self._reference_to(target)
                if ref.get("type") == 1:
                    reference["type"] = 1
        stored = self._create_message(
            channel_id,
            self.bot_user,
            content=body.get("content") or "",
            embeds=body.get("embeds") or [],
            components=body.get("components") or [],
            attachments=_attachments(rec.files, body, self._snowflake),
            flags=int(body.get("flags") or 0) & MESSAGE_FLAGS_ALLOWED & ~FLAG_EPHEMERAL,
            reference=reference,
            allowed_mentions=body.get("allowed_mentions"),
            tts=bool(body.get("tts")),
            nonce=body.get("nonce"),
        )
        await self._dispatch_message("MESSAGE_CREATE", stored)
        return 200, self._render(stored)

    async def _patch_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        stored = self._message(p["channel_id"], p["message_id"])
        if stored.author_id != self.bot_id:
            raise _RestError(403, error_body(50005, "Cannot edit a message authored by another user"))
        await self._apply_edit(stored, rec)
        return 200, self._render(stored)

    async def _apply_edit(self, stored: StoredMessage, rec: RecordedRequest) -> None:
        body = rec.json or {}
        _validate_message_body(body, rec.files, require_content=False)
        data = stored.data
        for key in ("content", "embeds", "components"):
            if key in body:
                data[key] = body[key] if body[key] is not None else ("" if key == "content" else [])
        if "components" in body:
            number_components(data["components"])
        if "attachments" in body or rec.files:
            kept = {str(a.get("id")) for a in body.get("attachments") or []}
            old = [a for a in data["attachments"] if a["id"] in kept]
            data["attachments"] = old + _attachments(rec.files, body, self._snowflake)
        if "flags" in body and body["flags"] is not None:
            keep = data["flags"] & FLAG_EPHEMERAL
            data["flags"] = (int(body["flags"]) & MESSAGE_FLAGS_ALLOWED & ~FLAG_EPHEMERAL) | keep
        data["flags"] &= ~FLAG_LOADING
        if "allowed_mentions" in body:
            stored.allowed_mentions = body["allowed_mentions"]
        data["edited_timestamp"] = iso()
        self._compute_mentions(stored, [])
        self._changes.notify()
        await self._dispatch_message("MESSAGE_UPDATE", stored)

    async def _delete_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        stored = self._message(p["channel_id"], p["message_id"])
        await self._delete(stored)
        return 204, None

    async def _typing(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        self._channel(p["channel_id"])
        return 204, None

    async def _add_reaction(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        stored = self._message(p["channel_id"], p["message_id"])
        reactions = stored.data.setdefault("reactions", [])
        name = unquote(p["emoji"])
        if not any(r["emoji"]["name"] == name for r in reactions):
            reactions.append({"emoji": {"id": None, "name": name}, "count": 1, "me": True})
        self._changes.notify()
        return 204, None

    async def _remove_reaction(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        stored = self._message(p["channel_id"], p["message_id"])
        name = unquote(p["emoji"])
        stored.data["reactions"] = [r for r in stored.data.get("reactions", []) if r["emoji"]["name"] != name]
        self._changes.notify()
        return 204, None

    # ------------------------------------------------------------------ REST: guilds

    def _guild(self, guild_id: str) -> Guild:
        guild = self.guilds.get(_int(guild_id))
        if guild is None:
            raise _RestError(404, error_body(10004, "Unknown Guild"))
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
        member = guild.members.get(_int(p["user_id"]))
        if member is None:
            return 404, error_body(10007, "Unknown Member")
        return 200, member.payload(self.users[member.user_id])

    # ------------------------------------------------------------------ REST: interactions

    def _interaction(self, interaction_id: str, token: str) -> InteractionRecord:
        record = self._interactions_by_token.get(token)
        if record is None or str(record.id) != interaction_id:
            raise _RestError(404, UNKNOWN_INTERACTION)
        return record

    def _webhook_interaction(self, app: str, token: str) -> InteractionRecord:
        record = self._interactions_by_token.get(token)
        if record is None or _int(app) != self.application_id:
            raise _RestError(404, UNKNOWN_WEBHOOK)
        return record

    def _callback_result(
        self, record: InteractionRecord, kind: int, message: StoredMessage | None, *, with_resource: bool
    ) -> dict[str, Any]:
        """The InteractionCallbackResponse discord.py asks for with `?with_response=1`."""
        interaction: dict[str, Any] = {"id": str(record.id), "type": record.type}
        if message is not None:
            interaction["response_message_id"] = message.data["id"]
            interaction["response_message_loading"] = bool(message.data["flags"] & FLAG_LOADING)
            interaction["response_message_ephemeral"] = message.ephemeral
        result: dict[str, Any] = {"interaction": interaction}
        if with_resource and message is not None:
            result["resource"] = {"type": kind, "message": self._render(message)}
        return result

    async def _interaction_callback(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._interaction(p["interaction_id"], p["token"])
        age = time.monotonic() - record.created
        if self.interaction_ack_timeout is not None and age > self.interaction_ack_timeout:
            record.errors.append(f"callback after {age:.2f}s")
            return 404, UNKNOWN_INTERACTION
        if record.acknowledged:
            record.errors.append("second callback")
            return 400, error_body(40060, "Interaction has already been acknowledged.")
        body = rec.json or {}
        kind = int(body.get("type", 0))
        data = body.get("data") or {}
        allowed = {2: {1, 4, 5, 9}, 3: {4, 5, 6, 7, 9}, 4: {8}, 5: {4, 5, 6, 7}}.get(record.type, {1})
        if kind not in allowed:
            return 400, field_error(
                "type", "INTERACTION_RESPONSE_TYPE_INVALID", f"Invalid response type {kind}"
            )
        message: StoredMessage | None = None
        channel_id = int(record.payload["channel_id"])
        if kind in (4, 5):
            _validate_message_body(data, rec.files, require_content=kind == 4)
            ephemeral = bool(int(data.get("flags") or 0) & FLAG_EPHEMERAL)
            flags = (int(data.get("flags") or 0) & MESSAGE_FLAGS_ALLOWED) | (FLAG_LOADING if kind == 5 else 0)
            message = self._create_message(
                channel_id,
                self.bot_user,
                content=(data.get("content") or "") if kind == 4 else "",
                embeds=(data.get("embeds") or []) if kind == 4 else [],
                components=(data.get("components") or []) if kind == 4 else [],
                attachments=_attachments(rec.files, data, self._snowflake) if kind == 4 else [],
                flags=flags,
                allowed_mentions=data.get("allowed_mentions"),
                ephemeral=ephemeral,
                interaction=record,
                message_type=MESSAGE_CHAT_INPUT_COMMAND if record.type == 2 else MESSAGE_DEFAULT,
            )
            record.original_message_id = message.id
        elif kind in (6, 7):
            source = record.payload.get("message")
            message = self.messages.get(int(source["id"])) if source else None
            if message is None:
                return 400, UNKNOWN_MESSAGE
            record.original_message_id = message.id
        elif kind == 8:
            choices = data.get("choices") or []
            if len(choices) > 25:
                return 400, field_error(
                    "data.choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                )
        record.acknowledged = True
        entry = record.add("callback", body)
        if kind == 7 and message is not None:
            await self._apply_edit(message, RecordedRequest("PATCH", rec.path, {}, data, {}, rec.files))
        elif message is not None:
            await self._dispatch_message("MESSAGE_CREATE", message)
        if message is not None:
            entry["message"] = self._render(message)
        with_response = request.query.get("with_response", "").lower() in ("1", "true")
        if not with_response:
            return 204, None
        return 200, self._callback_result(record, kind, message, with_resource=kind in (4, 5, 7))

    async def _followup(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._webhook_interaction(p["app"], p["token"])
        if not record.acknowledged:
            record.errors.append("followup before the callback")
            return 404, UNKNOWN_WEBHOOK
        body = rec.json or {}
        original = self.messages.get(record.original_message_id or 0)
        if (
            original is not None
            and original.data["flags"] & FLAG_LOADING
            and original.interaction_token == record.token
            and not original.deleted
        ):
            # The first followup after a "thinking" defer replaces the loading message.
            await self._apply_edit(original, rec)
            stored = original
        else:
            _validate_message_body(body, rec.files, require_content=True)
            flags = int(body.get("flags") or 0)
            stored = self._create_message(
                int(record.payload["channel_id"]),
                self.bot_user,
                content=body.get("content") or "",
                embeds=body.get("embeds") or [],
                components=body.get("components") or [],
                attachments=_attachments(rec.files, body, self._snowflake),
                flags=flags & MESSAGE_FLAGS_ALLOWED,
                allowed_mentions=body.get("allowed_mentions"),
                ephemeral=bool(flags & FLAG_EPHEMERAL),
                interaction=record,
            )
            await self._dispatch_message("MESSAGE_CREATE", stored)
        record.followup_ids.append(stored.id)
        record.add("followup", body, self._render(stored))
        if request.query.get("wait", "").lower() in ("1", "true"):
            return 200, self._render(stored)
        return 204, None

    def _webhook_message(self, record: InteractionRecord, message_id: str) -> StoredMessage:
        if message_id == "@original":
            mid = record.original_message_id
        else:
            mid = _int(message_id)
            if mid not in record.followup_ids and mid != record.original_message_id:
                raise _RestError(404, UNKNOWN_MESSAGE)
        stored = self.messages.get(mid or 0)
        if stored is None or stored.deleted:
            raise _RestError(404, UNKNOWN_MESSAGE)
        return stored

    async def _get_webhook_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._webhook_interaction(p["app"], p["token"])
        return 200, self._render(self._webhook_message(record, p["message_id"]))

    async def _edit_webhook_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._webhook_interaction(p["app"], p["token"])
        stored = self._webhook_message(record, p["message_id"])
        await self._apply_edit(stored, rec)
        kind = "edit_original" if p["message_id"] == "@original" else "edit_message"
        record.add(kind, rec.json, self._render(stored))
        return 200, self._render(stored)

    async def _delete_webhook_message(
        self, request: web.Request, p: dict[str, str], rec: RecordedRequest
    ) -> tuple[int, Body]:
        record = self._webhook_interaction(p["app"], p["token"])
        stored = self._webhook_message(record, p["message_id"])
        await self._delete(stored)
        record.add("delete_original" if p["message_id"] == "@original" else "delete_message", None)
        return 204, None


class _RestError(Exception):
    """Abort a REST handler with a Discord error."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("message"))
        self.status = status
        self.body = body


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _RestError(
            400, field_error("id", "NUMBER_TYPE_COERCE", f"Value {value!r} is not snowflake.")
        ) from None


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


def _validate_message_body(
    body: dict[str, Any], files: list[dict[str, Any]], *, require_content: bool
) -> None:
    """Discord's checks that catch real bugs: length, embed count, empty messages."""
    content = body.get("content")
    if content is not None and len(content) > MAX_CONTENT:
        raise _RestError(
            400, field_error("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
        )
    embeds = body.get("embeds") or []
    if len(embeds) > MAX_EMBEDS:
        raise _RestError(400, field_error("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length."))
    for index, embed in enumerate(embeds):
        if len(embed.get("description") or "") > 4096:
            raise _RestError(
                400,
                field_error(
                    f"embeds.{index}.description", "BASE_TYPE_MAX_LENGTH", "Must be 4096 or fewer in length."
                ),
            )
    has_something = (
        content or embeds or body.get("components") or files or body.get("sticker_ids") or body.get("poll")
    )
    if require_content and not has_something:
        raise _RestError(400, error_body(50006, "Cannot send an empty message"))


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


def _attachments(
    files: list[dict[str, Any]], body: dict[str, Any], snowflake: Callable[[], int]
) -> list[dict[str, Any]]:
    """Attachment objects for uploaded files (descriptions from the payload's `attachments`)."""
    described = {str(a.get("id")): a for a in body.get("attachments") or []}
    result = []
    for index, upload in enumerate(files):
        attachment_id = snowflake()
        meta = described.get(str(index), {})
        url = f"https://cdn.discordapp.com/attachments/0/{attachment_id}/{upload['filename']}"
        result.append(
            {
                "id": str(attachment_id),
                "filename": meta.get("filename") or upload["filename"],
                "description": meta.get("description"),
                "size": upload["size"],
                "url": url,
                "proxy_url": url,
                "content_type": upload.get("content_type"),
            }
        )
    return result


async def _read_body(request: web.Request) -> tuple[Any, list[dict[str, Any]]]:
    """The JSON body, or `payload_json` plus file descriptions of a multipart body."""
    files: list[dict[str, Any]] = []
    if request.content_type.startswith("multipart/"):
        body: Any = None
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                break
            name = getattr(part, "name", None)
            raw = await part.read()  # type: ignore[union-attr]
            if name == "payload_json":
                body = json.loads(raw)
            else:
                files.append(
                    {
                        "field": name,
                        "filename": getattr(part, "filename", None) or name,
                        "size": len(raw),
                        "content_type": part.headers.get("Content-Type"),
                        "data": bytes(raw),
                    }
                )
        return body, files
    raw_text = await request.text()
    if not raw_text:
        return None, files
    try:
        return json.loads(raw_text), files
    except ValueError:
        return raw_text, files


def _response(status: int, payload: Body, route: str) -> web.Response:
    """A response with exactly `Content-Type: application/json` and generous rate-limit headers."""
    reset_after = 60.0
    headers = {
        "X-RateLimit-Limit": "10000",
        "X-RateLimit-Remaining": "9999",
        "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
        "X-RateLimit-Reset-After": f"{reset_after:.3f}",
        "X-RateLimit-Bucket": hashlib.sha1(route.encode()).hexdigest()[:16],
    }
    if status == 429:
        retry_after = float(payload.get("retry_after", 0.05)) if isinstance(payload, dict) else 0.05
        headers.update(
            {
                "Retry-After": f"{retry_after:.3f}",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset-After": f"{retry_after:.3f}",
                "X-RateLimit-Scope": "user",
                "Via": "1.1 google",
            }
        )
    if status == 204 or payload is None:
        return web.Response(status=status, headers=headers)
    headers["Content-Type"] = "application/json"
    return web.Response(status=status, body=json.dumps(payload).encode(), headers=headers)
