"""The Discord stand-in's gateway: the websocket a bot connects to, and the events it is sent.

A connection gets HELLO, then IDENTIFY (token and intents checked, privileged ones refusable) opens a
session with READY and a GUILD_CREATE per guild; heartbeats are acknowledged. A session outlives its
socket, so a client that lost it can RESUME and is sent what it missed. Events go to every ready
session whose intents cover them, guild message content hidden without the message content intent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from standins.discord.model import (
    INTENT_DIRECT_MESSAGES,
    INTENT_GUILD_MEMBERS,
    INTENT_GUILD_MESSAGES,
    INTENT_MESSAGE_CONTENT,
    PRIVILEGED_INTENTS,
    THREAD_TYPES,
    Guild,
)
from standins.discord.records import StoredMessage
from standins.discord.state import StandInState

log = logging.getLogger(__name__)


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


class Gateway(StandInState):
    """The websocket endpoint, its sessions, and dispatching events to them."""

    def __init__(
        self, *, refuse_privileged_intents: bool | int, heartbeat_interval: int, **options: Any
    ) -> None:
        super().__init__(**options)
        if refuse_privileged_intents is True:
            self.refused_intents = PRIVILEGED_INTENTS
        else:
            self.refused_intents = int(refuse_privileged_intents or 0)
        self.heartbeat_interval = heartbeat_interval
        self.identify_payloads: list[dict[str, Any]] = []
        self.member_requests: list[dict[str, Any]] = []  # REQUEST_GUILD_MEMBERS (op 8) payloads
        self.gateway_received: list[dict[str, Any]] = []
        self.presence: dict[str, Any] | None = None
        self._sessions: dict[str, _Session] = {}
        self._connections: set[_Connection] = set()

    def _ready_sessions(self) -> list[_Session]:
        return [s for s in self._sessions.values() if s.ready and s.conn is not None]

    @staticmethod
    def _shard_sees(session: _Session, guild_id: int | str | None) -> bool:
        """Discord's rule: a guild's events go to shard (guild_id >> 22) % count; DMs to shard 0."""
        shard = session.identify.get("shard")
        if not shard:
            return True
        shard_id, count = int(shard[0]), int(shard[1])
        if guild_id is None:
            return shard_id == 0
        return (int(guild_id) >> 22) % count == shard_id

    async def wait_until_ready(self, timeout: float = 10.0) -> None:
        """Wait until a bot identified and was sent READY and every GUILD_CREATE."""
        await self._changes.wait_until(lambda: self._ready_sessions() or None, timeout, "a ready bot session")

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

    # ------------------------------------------------------------------ message events

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
        once: bool = False,
    ) -> None:
        """Send a DISPATCH to every identified session whose intents (and shard) cover it; with `once`,
        to the first such session only (an interaction is answered once, by one process)."""
        for session in list(self._sessions.values()):
            if not session.ready or not self._shard_sees(session, data.get("guild_id")):
                continue
            if intent is not None and not session.intents & intent:
                continue
            payload = transform(data, session.intents) if transform else data
            await self._send_event(session, event, payload)
            if once:
                return

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
            "system_channel_id": None if guild.system_channel_id is None else str(guild.system_channel_id),
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
            if not self._shard_sees(session, guild.id):
                continue
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
            "guilds": [
                {"id": str(g), "unavailable": True} for g in self.guilds if self._shard_sees(session, g)
            ],
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
            if self._shard_sees(session, guild.id):
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
