"""`DiscordStandIn`: a local aiohttp server speaking Discord's v10 gateway and REST API.

The real, unmodified discord.py connects to it (see `runner.run_bot`). Tests drive the "human" side
through async methods (`send_message`, `invoke_command`, `click_button` ...) and assert on what the
bot did through `requests`, `bot_messages()` and the returned `InteractionRecord`s.

The class is put together from one part per concern, all over the one shared world of `state`:
`gateway` (the websocket and event dispatch), `routes` (REST, by area), `guilds` (setting up the
world), `humans` (playing the people) and `cdn` (serving the files they post). This module starts the
server and maps REST paths to routes.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

from aiohttp import web

from standins.discord.cdn import CDN_PREFIX
from standins.discord.guilds import GuildSetup
from standins.discord.humans import Humans
from standins.discord.routes.application import ApplicationRoutes
from standins.discord.routes.interactions import InteractionRoutes
from standins.discord.routes.oauth import AUTHORIZE_PATH, OAuthRoutes
from standins.discord.state import API_PREFIX


class DiscordStandIn(GuildSetup, Humans, InteractionRoutes, ApplicationRoutes, OAuthRoutes):
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
        super().__init__(
            refuse_privileged_intents=refuse_privileged_intents,
            heartbeat_interval=heartbeat_interval,
            token=token,
            interaction_ack_timeout=interaction_ack_timeout,
            bot_name=bot_name,
        )
        self._runner: web.AppRunner | None = None
        self._register_routes()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Listen on a free port of 127.0.0.1."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get(AUTHORIZE_PATH, self._authorize)  # the browser's page: discord.com/oauth2/...
        app.router.add_get(API_PREFIX + AUTHORIZE_PATH, self._authorize)
        app.router.add_get(CDN_PREFIX + "/{channel_id}/{attachment_id}/{filename}", self._cdn)
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
