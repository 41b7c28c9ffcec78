"""The Discord stand-in's OAuth2 flow over HTTP, as a dashboard drives it: authorize, token, users/@me and
users/@me/guilds with the bearer token."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest

from standins.discord import DiscordStandIn

pytestmark = pytest.mark.e2e

REDIRECT = "http://127.0.0.1:9/auth/callback"


async def authorize(http: aiohttp.ClientSession, standin: DiscordStandIn, **query: str) -> dict[str, str]:
    """The query Discord sends the browser back with (code, state or error)."""
    params = {
        "client_id": str(standin.application_id),
        "response_type": "code",
        "scope": "identify guilds",
        "redirect_uri": REDIRECT,
        "state": "s-123",
        **query,
    }
    async with http.get(standin.base_url + "/oauth2/authorize", params=params, allow_redirects=False) as r:
        assert r.status == 302
        location = r.headers["Location"]
    assert location.startswith(REDIRECT + "?")
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def exchange(
    http: aiohttp.ClientSession,
    standin: DiscordStandIn,
    code: str,
    *,
    secret: str | None = None,
    redirect: str = REDIRECT,
) -> tuple[int, dict[str, str]]:
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect}
    auth = aiohttp.encode_basic_auth(str(standin.application_id), secret or standin.client_secret)
    async with http.post(standin.api_base + "/oauth2/token", data=form, headers={"Authorization": auth}) as r:
        return r.status, await r.json()


async def test_a_person_signs_in_and_the_token_reads_who_they_are_and_their_servers() -> None:
    async with DiscordStandIn() as standin, aiohttp.ClientSession() as http:
        alpha, beta = standin.add_guild("Alpha"), standin.add_guild("Beta")
        ana = standin.add_user("ana", guilds=[alpha.id], admin_in=[alpha.id])
        standin.sign_in_as(ana)
        back = await authorize(http, standin)
        assert back["state"] == "s-123" and back["code"]
        status, token = await exchange(http, standin, back["code"])
        assert status == 200 and token["token_type"] == "Bearer" and token["scope"] == "guilds identify"
        bearer = {"Authorization": f"Bearer {token['access_token']}"}
        async with http.get(standin.api_base + "/users/@me", headers=bearer) as r:
            assert r.status == 200 and (await r.json())["id"] == ana["id"]
        async with http.get(standin.api_base + "/users/@me/guilds", headers=bearer) as r:
            listed = await r.json()
        assert [g["name"] for g in listed] == ["Alpha"]  # not Beta, where ana is no member
        assert int(listed[0]["permissions"]) & (1 << 5)  # Manage Server, from her admin role
        assert beta.id not in {int(g["id"]) for g in listed}
        # the code is used once; a wrong token is refused
        assert (await exchange(http, standin, back["code"]))[0] == 400
        async with http.get(standin.api_base + "/users/@me", headers={"Authorization": "Bearer nope"}) as r:
            assert r.status == 401


async def test_the_token_endpoint_checks_the_client_the_code_and_the_redirect() -> None:
    async with DiscordStandIn() as standin, aiohttp.ClientSession() as http:
        standin.add_guild("Alpha")
        standin.sign_in_as(standin.add_user("ana"))
        code = (await authorize(http, standin))["code"]
        assert await exchange(http, standin, code, secret="wrong") == (401, {"error": "invalid_client"})
        assert (await exchange(http, standin, code, redirect="http://127.0.0.1:9/other"))[1]["error"] == (
            "invalid_grant"
        )
        # a code refused for its redirect URI was spent: sign in again
        code = (await authorize(http, standin))["code"]
        assert (await exchange(http, standin, code))[0] == 200


async def test_authorize_refuses_without_a_person_or_with_scopes_discord_does_not_know() -> None:
    async with DiscordStandIn() as standin, aiohttp.ClientSession() as http:
        assert (await authorize(http, standin)) == {"error": "access_denied", "state": "s-123"}
        standin.sign_in_as(standin.add_user("ana"))
        assert (await authorize(http, standin, scope="identify admin"))["error"] == "invalid_scope"
        async with http.get(
            standin.base_url + "/oauth2/authorize",
            params={"client_id": "1", "redirect_uri": REDIRECT, "response_type": "code"},
            allow_redirects=False,
        ) as r:
            assert r.status == 400  # another application's id: no redirect at all
