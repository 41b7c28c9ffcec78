"""Signing in with Discord: OAuth2's authorization code flow, scopes `identify` and `guilds`.

The browser is sent to Discord's authorization page with the application's id, the redirect URL and a
random `state`; Discord sends it back with a code, which the server exchanges (with the client secret)
for an access token, reads who the person is and which servers they are in, and forgets the token.
DISCORD_API_BASE_URL points all of it at a proxy or at the tests' stand-in, as it does the bot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bot.config import Settings

log = logging.getLogger(__name__)

DISCORD_API = "https://discord.com/api/v10"
DISCORD_AUTHORIZE = "https://discord.com/oauth2/authorize"
SCOPES = "identify guilds"
TIMEOUT_SECONDS = 10.0
ADMINISTRATOR = 1 << 3
MANAGE_GUILD = 1 << 5


class SignInFailed(Exception):
    """Discord refused the code or the token, or could not be reached: said to the person in a line."""


@dataclass(frozen=True)
class Member:
    """Who signed in, the servers Discord says they are in (ids and names), and those where Discord's list
    says they own the server or hold Manage Server or Administrator: a hint of where to ask the bot's own
    reading of the server's permissions (`bot/discord_rest.py`), never trusted on its own."""

    user_id: str
    name: str
    guilds: tuple[tuple[str, str], ...]
    may_manage: frozenset[str] = frozenset()


@dataclass(frozen=True)
class DiscordSignIn:
    client_id: str
    client_secret: str
    redirect_url: str
    api_base: str = DISCORD_API
    authorize_base: str = DISCORD_AUTHORIZE

    @classmethod
    def from_settings(cls, settings: Settings) -> DiscordSignIn:
        api = settings.discord_api_base_url
        return cls(
            settings.discord_client_id,
            settings.discord_client_secret,
            settings.web_redirect_url,
            api_base=api or DISCORD_API,
            authorize_base=f"{api}/oauth2/authorize" if api else DISCORD_AUTHORIZE,
        )

    def authorize_url(self, state: str) -> str:
        """Discord's page asking the person to let the dashboard read who they are and their servers."""
        query = {
            "client_id": self.client_id,
            "response_type": "code",
            "scope": SCOPES,
            "redirect_uri": self.redirect_url,
            "state": state,
        }
        return f"{self.authorize_base}?{urlencode(query)}"

    async def member(self, code: str) -> Member:
        """Exchange the code, then read the person and their servers with the token."""
        timeout = aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as http:
                token = await self._token(http, code)
                bearer = {"Authorization": f"Bearer {token}"}
                me = await _json(http, "GET", f"{self.api_base}/users/@me", headers=bearer)
                guilds = await _json(http, "GET", f"{self.api_base}/users/@me/guilds", headers=bearer)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("Discord sign-in failed: %s", type(exc).__name__)
            raise SignInFailed("Discord could not be reached; try again in a moment") from None
        if not isinstance(me, dict) or not str(me.get("id", "")).isdigit() or not isinstance(guilds, list):
            raise SignInFailed("Discord's answer was not what was expected; try again")
        name = str(me.get("global_name") or me.get("username") or me["id"])
        listed = tuple(
            (str(g["id"]), str(g.get("name") or g["id"]))
            for g in guilds
            if isinstance(g, dict) and str(g.get("id", "")).isdigit()
        )
        hinted = frozenset(
            str(g["id"])
            for g in guilds
            if isinstance(g, dict) and str(g.get("id", "")).isdigit() and _manager_hint(g)
        )
        return Member(str(me["id"]), name, listed, hinted)

    async def _token(self, http: aiohttp.ClientSession, code: str) -> str:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_url,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
        }
        answer = await _json(http, "POST", f"{self.api_base}/oauth2/token", data=form)
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise SignInFailed("Discord's answer was not what was expected; try again")
        return token


def _manager_hint(guild: dict[str, Any]) -> bool:
    """Whether an entry of `users/@me/guilds` says its member owns the server or may manage it."""
    bits = str(guild.get("permissions", "0"))
    permissions = int(bits) if bits.isdigit() else 0
    return guild.get("owner") is True or bool(permissions & (MANAGE_GUILD | ADMINISTRATOR))


async def _json(http: aiohttp.ClientSession, method: str, url: str, **options: Any) -> Any:
    """A JSON answer; a refusal is SignInFailed, logged by status only (never a code or a token)."""
    async with http.request(method, url, **options) as response:
        if response.status >= 400:
            log.warning("Discord refused the sign-in: %s %s answered %d", method, url, response.status)
            raise SignInFailed("Discord did not accept the sign-in; please sign in again")
        try:
            return await response.json(content_type=None)
        except ValueError:
            raise SignInFailed("Discord's answer was not what was expected; try again") from None
