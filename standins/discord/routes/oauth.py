"""Discord's OAuth2 authorization code flow, as a web dashboard signs people in with it.

`GET /oauth2/authorize` stands for the page where a person approves the application: it signs in
whoever the test chose (`sign_in_as`) at once and redirects back to `redirect_uri` with a code and the
`state` it was given. `POST /api/v10/oauth2/token` exchanges the code, checking the client's id and
secret (HTTP Basic or form fields), the code and the redirect URI, as Discord does; `GET /users/@me` and
`/users/@me/guilds` with `Authorization: Bearer <token>` answer for the person the token was issued to.
Codes are used once; tokens carry the scopes that were asked for.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from aiohttp import web

from standins.discord.model import error_body
from standins.discord.records import RecordedRequest
from standins.discord.routes.base import Body, RestServer

AUTHORIZE_PATH = "/oauth2/authorize"
OAUTH_SCOPES = frozenset({"identify", "guilds", "email", "guilds.members.read"})


@dataclass(frozen=True)
class Grant:
    """What a code or a token stands for: who approved, with which scopes, for which redirect URI."""

    user_id: int
    scopes: frozenset[str]
    redirect_uri: str


class OAuthRoutes(RestServer):
    """The authorization page, the token endpoint and the bearer-token routes."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.client_secret = secrets.token_urlsafe(24)  # the client id is the application id
        self.signing_in: int | None = None  # who the next authorize signs in (None: the page refuses)
        self.authorize_requests: list[dict[str, str]] = []
        self._codes: dict[str, Grant] = {}
        self._tokens: dict[str, Grant] = {}

    def sign_in_as(self, user: dict[str, Any] | int | None) -> None:
        """The person who approves the next authorization requests (None: nobody, they are refused)."""
        self.signing_in = None if user is None else int(user["id"] if isinstance(user, dict) else user)

    def revoke_tokens(self) -> None:
        """Every access token issued stops working (as when a person removes the application)."""
        self._tokens.clear()

    async def _authorize(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.authorize_requests.append(query)
        redirect_uri = query.get("redirect_uri", "")
        if query.get("client_id") != str(self.application_id) or not redirect_uri.startswith(
            ("http://", "https://")
        ):
            return web.Response(status=400, text="Invalid OAuth2 redirect_uri or client_id")
        back: dict[str, str] = {}
        scopes = frozenset(query.get("scope", "").split())
        if query.get("response_type") != "code":
            back["error"] = "unsupported_response_type"
        elif not scopes or not scopes <= OAUTH_SCOPES:
            back["error"] = "invalid_scope"
        elif self.signing_in is None:
            back["error"] = "access_denied"
        else:
            code = secrets.token_urlsafe(16)
            self._codes[code] = Grant(self.signing_in, scopes, redirect_uri)
            back["code"] = code
        if "state" in query:
            back["state"] = query["state"]
        raise web.HTTPFound(_with_query(redirect_uri, back))

    async def _answer_oauth(
        self, request: web.Request, method: str, path: str, recorded: RecordedRequest
    ) -> tuple[int, Body] | None:
        """The token endpoint, and any request carrying a bearer token; None for the bot's own."""
        if method == "POST" and path == "/oauth2/token":
            return self._token(request, recorded)
        authorization = request.headers.get("Authorization", "")
        if not authorization.startswith("Bearer "):
            return None
        grant = self._tokens.get(authorization.removeprefix("Bearer "))
        if grant is None:
            return 401, error_body(0, "401: Unauthorized")
        if method == "GET" and path == "/users/@me" and "identify" in grant.scopes:
            return 200, self.users[grant.user_id]
        if method == "GET" and path == "/users/@me/guilds" and "guilds" in grant.scopes:
            return 200, self._partial_guilds(grant.user_id)
        return 403, error_body(50001, "Missing Access")

    def _token(self, request: web.Request, recorded: RecordedRequest) -> tuple[int, Body]:
        form = dict(parse_qsl(recorded.json)) if isinstance(recorded.json, str) else {}
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        basic = request.headers.get("Authorization", "")
        if basic.startswith("Basic "):
            client_id, _, client_secret = base64.b64decode(basic[6:]).decode().partition(":")
        if client_id != str(self.application_id) or client_secret != self.client_secret:
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") != "authorization_code":
            return 400, {"error": "unsupported_grant_type"}
        grant = self._codes.pop(form.get("code", ""), None)  # a code is used once
        if grant is None or grant.redirect_uri != form.get("redirect_uri"):
            return 400, {"error": "invalid_grant", "error_description": 'Invalid "code" in request.'}
        token = secrets.token_urlsafe(24)
        self._tokens[token] = grant
        return 200, {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": 604800,
            "refresh_token": secrets.token_urlsafe(24),
            "scope": " ".join(sorted(grant.scopes)),
        }

    def _partial_guilds(self, user_id: int) -> list[dict[str, Any]]:
        """The person's servers as `users/@me/guilds` lists them (the bot need not be in them)."""
        return [
            {
                "id": str(guild.id),
                "name": guild.name,
                "icon": None,
                "banner": None,
                "owner": guild.owner_id == user_id,
                "permissions": str(guild.permissions_of(user_id)),
                "features": [],
            }
            for guild in self.guilds.values()
            if user_id in guild.members
        ]


def _with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
