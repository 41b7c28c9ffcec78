"""The dashboard over real HTTP: uvicorn serving bot/web/ on 127.0.0.1, a member signing in through the
Discord stand-in's OAuth2, and the engine on a real SQLite file with sqlite-vec (models faked, as the
`service` fixture wires them). SQLite only for now: the pages call the same engine on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import uvicorn

from bot.app import open_memory
from bot.config import Settings, load_settings
from bot.http_serving import listen
from bot.memory.models import NewFact, Origin
from bot.memory.service import MemoryService
from bot.web.pages import build_app
from bot.web.server import CannotServe, web_config
from bot.web.sessions import COOKIE, MAX_COOKIE_CHARS, Place, Session, SessionSigner
from standins.discord import DiscordStandIn
from tests.conftest import make_settings
from tests.integration.test_cli import clean_env, run_cli

SECRET = "s" * 40


@pytest.fixture
def backend() -> str:
    """SQLite only (see the module's docstring)."""
    return "sqlite"


@dataclass
class Site:
    """The dashboard at `url`, Discord's stand-in with ana and bob in Alpha, and the seeded facts' ids by
    a word of each (keeps, writes, plays, lives)."""

    url: str
    discord: DiscordStandIn
    database: Path
    guild_id: int
    facts: dict[str, int]

    @property
    def ana(self) -> dict[str, Any]:
        return next(u for u in self.discord.users.values() if u["username"] == "ana")

    @property
    def bob(self) -> dict[str, Any]:
        return next(u for u in self.discord.users.values() if u["username"] == "bob")

    def rows(self, fact_id: int) -> list[tuple[str, str]]:
        """The fact's row in the facts table, read from the file as any other reader would."""
        with sqlite3.connect(self.database) as conn:
            return conn.execute("SELECT user_id, text FROM facts WHERE id = ?", (fact_id,)).fetchall()


@pytest.fixture
async def site(tmp_path: Path, database: Path, service: MemoryService) -> AsyncIterator[Site]:
    async with DiscordStandIn() as discord:
        alpha, beta = discord.add_guild("Alpha"), discord.add_guild("Beta")
        ana = discord.add_user("ana", guilds=[alpha.id, beta.id])
        bob = discord.add_user("bob", guilds=[alpha.id])
        general = alpha.channels["general"]
        facts = await seed(service, f"guild:{alpha.id}", str(ana["id"]), str(bob["id"]), general)
        sock = listen("127.0.0.1", 0)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        settings = make_settings(
            tmp_path,
            database,
            discord_api_base_url=discord.api_base,
            discord_client_id=str(discord.application_id),
            discord_client_secret=discord.client_secret,
            web_redirect_url=f"{url}/auth/callback",
            web_session_secret=SECRET,
        )
        server = uvicorn.Server(
            uvicorn.Config(build_app(service, web_config(settings)), lifespan="off", log_level="warning")
        )
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.01)
        try:
            yield Site(url, discord, database, alpha.id, facts)
        finally:
            server.should_exit = True
            await serving
            sock.close()


async def seed(service: MemoryService, scope: str, ana: str, bob: str, channel: int) -> dict[str, int]:
    said = iter(range(10**17, 10**17 + 100))

    def fact(user: str, name: str, text: str, where: str = scope) -> NewFact:
        message = str(next(said))
        return NewFact(where, user, name, text, [message], origins={message: Origin(str(channel))})

    await service.import_facts(
        [
            fact(ana, "ana", "ana keeps bees"),
            fact(ana, "ana", "ana writes <script>alert(1)</script> in her notes"),
            fact(bob, "bob", "bob plays the oboe"),
            fact(ana, "ana", "ana lives in Porto", where="dm"),
        ]
    )
    known = await service.export_facts(scope, None) + await service.export_facts("dm", None)
    return {f.text.split()[1]: f.id for f in known}  # keeps, writes, plays, lives


def browser() -> aiohttp.ClientSession:
    """A client that keeps cookies for 127.0.0.1, as a browser would."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def sign_in(http: aiohttp.ClientSession, site: Site, who: dict[str, Any]) -> str:
    """Sign in through the stand-in; the home page's HTML."""
    site.discord.sign_in_as(who)
    async with http.get(site.url + "/auth/login") as r:
        assert r.status == 200 and str(r.url) == site.url + "/"
        return await r.text()


def csrf_of(page: str) -> str:
    [token] = set(re.findall(r'name="csrf" value="([^"]+)"', page))
    return token


async def get(http: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with http.get(url, allow_redirects=False) as r:
        return r.status, await r.text()


async def post(http: aiohttp.ClientSession, url: str, form: dict[str, str]) -> tuple[int, str]:
    async with http.post(url, data=form, allow_redirects=False) as r:
        return r.status, await r.text()


async def test_a_member_signs_in_and_sees_only_their_own_facts(site: Site) -> None:
    async with browser() as http:
        home = await sign_in(http, site, site.ana)
        assert f'href="/memory/{site.guild_id}">Alpha' in home and 'href="/memory/dm"' in home
        assert "Beta" not in home  # a server of hers where the bot holds nothing about her
        async with http.get(f"{site.url}/memory/{site.guild_id}") as r:
            page = await r.text()
            headers = r.headers
        assert (
            "ana keeps bees" in page and "bob plays the oboe" not in page and "ana lives in Porto" not in page
        )
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page
        assert headers["Content-Security-Policy"].startswith("default-src 'self'")
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert "unsafe-inline" not in headers["Content-Security-Policy"]
        assert headers["Referrer-Policy"] == "no-referrer" and headers["X-Content-Type-Options"] == "nosniff"
        assert (await get(http, f"{site.url}/memory/dm"))[1].count("ana lives in Porto") == 1
        # a search finds hers only; a server she did not get listed for is not found
        status, found = await get(http, f"{site.url}/memory/{site.guild_id}?q=oboe")
        assert (
            status == 200 and "bob plays the oboe" not in found and "No fact of yours here matches" in found
        )
        assert "ana keeps bees" in (await get(http, f"{site.url}/memory/{site.guild_id}?q=bee"))[1]
        assert (await get(http, f"{site.url}/memory/{site.guild_id + 1}"))[0] == 404
        async with http.get(site.url + "/static/style.css") as r:
            assert r.status == 200 and r.headers["X-Content-Type-Options"] == "nosniff"
    # the cookie is HttpOnly and SameSite=Lax, and not Secure over http
    async with browser() as http:
        site.discord.sign_in_as(site.ana)
        async with http.get(site.url + "/auth/login", allow_redirects=False) as r:
            cookie = r.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Secure" not in cookie


async def start_sign_in(http: aiohttp.ClientSession, site: Site) -> str:
    """Go to Discord and back up to the callback, not opening it: its URL, with the code and the state."""
    async with http.get(site.url + "/auth/login", allow_redirects=False) as r:
        to_discord = r.headers["Location"]
    assert to_discord.startswith(site.discord.api_base + "/oauth2/authorize?")
    async with http.get(to_discord, allow_redirects=False) as r:
        return r.headers["Location"]


async def test_a_forged_or_missing_state_is_refused(site: Site) -> None:
    site.discord.sign_in_as(site.ana)
    guild_page = f"{site.url}/memory/{site.guild_id}"
    async with browser() as http:
        back = await start_sign_in(http, site)
        status, page = await get(http, re.sub(r"state=[^&]+", "state=forged", back))
        assert status == 400 and "could not be checked" in page
        assert (await get(http, guild_page))[0] == 303  # not signed in
        back = await start_sign_in(http, site)
        assert (await get(http, re.sub(r"&?state=[^&]+", "", back)))[0] == 400
        assert (await get(http, guild_page))[0] == 303
        back = await start_sign_in(http, site)  # the same flow with its own state signs her in
        assert (await get(http, back))[0] == 303 and (await get(http, guild_page))[0] == 200
    async with browser() as http, browser() as other:  # a callback another browser started
        back = await start_sign_in(http, site)
        assert (await get(other, back))[0] == 400
        assert (await get(other, guild_page))[0] == 303


async def test_a_post_without_or_with_a_wrong_csrf_token_is_refused_and_changes_nothing(site: Site) -> None:
    bees = site.facts["keeps"]
    async with browser() as http:
        await sign_in(http, site, site.ana)
        forget = f"{site.url}/memory/{site.guild_id}/facts/{bees}/forget"
        correct = f"{site.url}/memory/{site.guild_id}/facts/{bees}/correct"
        assert (await post(http, forget, {}))[0] == 403
        assert (await post(http, forget, {"csrf": "x" * 32}))[0] == 403
        status, page = await post(http, correct, {"csrf": "wrong", "text": "ana keeps wasps"})
        assert status == 403 and "nothing was done" in page
        assert (await post(http, site.url + "/auth/logout", {}))[0] == 403
        assert (await get(http, f"{site.url}/memory/{site.guild_id}"))[0] == 200  # still signed in
    async with browser() as other, browser() as http:  # another member's token is not hers
        token = csrf_of(await sign_in(other, site, site.bob))
        await sign_in(http, site, site.ana)
        assert (await post(http, forget, {"csrf": token}))[0] == 403
    assert site.rows(bees) == [(str(site.ana["id"]), "ana keeps bees")]


async def test_an_expired_or_forged_session_is_sent_to_sign_in(site: Site) -> None:
    signer = SessionSigner(SECRET, 12 * 3600)
    place = Place(f"guild:{site.guild_id}", "Alpha")
    user = str(site.ana["id"])
    old = Session(issued=time.time() - 12 * 3600 - 5, user_id=user, name="ana", places=(place,))
    fresh = Session(issued=time.time(), user_id=user, name="ana", places=(place,))
    forged = SessionSigner("t" * 40, 12 * 3600).dumps(fresh)
    for value in (signer.dumps(old), forged, signer.dumps(fresh)[:-2] + "00"):
        async with aiohttp.ClientSession(cookies={COOKIE: value}) as http:
            async with http.get(f"{site.url}/memory/{site.guild_id}") as r:
                assert str(r.url) == site.url + "/" and "Sign in with Discord" in await r.text()
            forget = f"{site.url}/memory/{site.guild_id}/facts/{site.facts['keeps']}/forget"
            assert (await post(http, forget, {"csrf": old.csrf}))[0] == 303
    async with aiohttp.ClientSession(cookies={COOKIE: signer.dumps(fresh)}) as http:  # the same, in time
        assert (await get(http, f"{site.url}/memory/{site.guild_id}"))[0] == 200
    assert site.rows(site.facts["keeps"])  # nothing was forgotten by the refused sessions


async def test_another_members_fact_id_answers_like_an_unknown_one(site: Site) -> None:
    oboe, porto, unknown = site.facts["plays"], site.facts["lives"], 10**15
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.ana))
        base = f"{site.url}/memory/{site.guild_id}/facts"
        answers = set()
        for fact_id in (
            oboe,
            porto,
            unknown,
            "99999999999999999999999",
        ):  # bob's, hers elsewhere, none, too big
            answers.add(await post(http, f"{base}/{fact_id}/forget", {"csrf": csrf}))
            answers.add(
                await post(http, f"{base}/{fact_id}/correct", {"csrf": csrf, "text": "ana owns a boat"})
            )
            answers.add(await get(http, f"{base}/{fact_id}/correct"))
        [(status, body)] = answers
        assert status == 404 and "no such fact of yours in Alpha" in body
    assert site.rows(oboe) == [(str(site.bob["id"]), "bob plays the oboe")]
    assert site.rows(porto) == [(str(site.ana["id"]), "ana lives in Porto")]


async def test_forget_one_removes_it_from_the_database(site: Site) -> None:
    bees = site.facts["keeps"]
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.ana))
        async with http.post(
            f"{site.url}/memory/{site.guild_id}/facts/{bees}/forget", data={"csrf": csrf}
        ) as r:
            assert r.status == 200 and f"Forgot fact #{bees} for good." in await r.text()
            assert "keeps bees" not in str(r.url)
        assert "ana keeps bees" not in (await get(http, f"{site.url}/memory/{site.guild_id}"))[1]
    assert site.rows(bees) == []
    assert site.rows(site.facts["writes"])  # her other fact stays


async def test_correct_changes_the_text(site: Site) -> None:
    bees = site.facts["keeps"]
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.ana))
        url = f"{site.url}/memory/{site.guild_id}/facts/{bees}/correct"
        status, form = await get(http, url)
        assert status == 200 and "ana keeps bees" in form and csrf_of(form) == csrf
        status, refused = await post(http, url, {"csrf": csrf, "text": "x" * 501})
        assert status == 400 and "at most 500 characters" in refused
        async with http.post(url, data={"csrf": csrf, "text": "ana keeps three hives of bees"}) as r:
            assert r.status == 200 and f"Corrected fact #{bees}." in await r.text()
    assert site.rows(bees) == [(str(site.ana["id"]), "ana keeps three hives of bees")]


async def test_export_returns_only_their_facts(site: Site) -> None:
    async with browser() as http:
        await sign_in(http, site, site.ana)
        async with http.get(f"{site.url}/memory/{site.guild_id}/export.json") as r:
            assert r.headers["Content-Disposition"].startswith("attachment;")
            document = json.loads(await r.text())
    assert document["scope"] == f"guild:{site.guild_id}"
    assert {f["user_id"] for f in document["facts"]} == {str(site.ana["id"])}
    assert sorted(f["text"] for f in document["facts"]) == [
        "ana keeps bees",
        "ana writes <script>alert(1)</script> in her notes",
    ]


async def test_signing_out_ends_the_session(site: Site) -> None:
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.ana))
        async with http.post(site.url + "/auth/logout", data={"csrf": csrf}) as r:
            assert "Sign in with Discord" in await r.text()
        assert (await get(http, f"{site.url}/memory/{site.guild_id}"))[0] == 303


def web_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = clean_env(
        GEMINI_API_KEY="k",
        GEMINI_BASE_URL="http://127.0.0.1:9",  # never called: nothing here embeds
        DATABASE_PATH=str(tmp_path / "m.sqlite3"),
        DISCORD_CLIENT_ID="123",
        DISCORD_CLIENT_SECRET="not-a-secret",
        WEB_REDIRECT_URL="https://memory.example.com/auth/callback",
        **extra,
    )
    return {k: v for k, v in env.items() if k != "WEB_SESSION_SECRET" or "WEB_SESSION_SECRET" in extra}


async def test_the_command_refuses_to_start_without_a_session_secret(tmp_path: Path) -> None:
    code, out, err = await run_cli("web", env=web_env(tmp_path), cwd=tmp_path)
    assert code == 1 and out == ""
    assert err.splitlines() == [
        "error: WEB_SESSION_SECRET is not set (a random value, such as python -c 'import secrets; "
        "print(secrets.token_urlsafe(32))')"
    ]
    code, _, err = await run_cli("web", env=web_env(tmp_path, WEB_SESSION_SECRET="short"), cwd=tmp_path)
    assert code == 1 and err.startswith("error: WEB_SESSION_SECRET has 5 characters: it needs at least 32")


async def test_the_command_serves_on_127_0_0_1_with_secure_cookies_behind_https(tmp_path: Path) -> None:
    env = web_env(tmp_path, WEB_SESSION_SECRET=SECRET)
    settings = load_settings(env, dotenv_path=None)
    await (await open_memory(settings)).close(record_usage=False)  # a database to serve
    port = listen("127.0.0.1", 0)
    free = port.getsockname()[1]
    port.close()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "web", "--port", str(free), cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line == f"serving the dashboard at http://127.0.0.1:{free}/ (Ctrl+C stops)\n"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{free}/") as r:
                assert r.status == 200 and "Sign in with Discord" in await r.text()
                assert "frame-ancestors 'none'" in r.headers["Content-Security-Policy"]
            async with http.get(f"http://127.0.0.1:{free}/auth/login", allow_redirects=False) as r:
                assert r.headers["Location"].startswith("https://discord.com/oauth2/authorize?client_id=123&")
                assert "; Secure" in r.headers["Set-Cookie"] and "HttpOnly" in r.headers["Set-Cookie"]
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 30) == 0


def test_a_session_lists_as_many_places_as_its_cookie_holds_and_keeps_the_dms() -> None:
    signer = SessionSigner(SECRET, 3600)
    servers = [Place(f"guild:{10**17 + n}", "服务器" * 10 + "…") for n in range(49)]  # 32 characters
    places = (*servers, Place("dm", "DMs"))
    fitted = signer.fitting(Session(issued=time.time(), user_id="1", name="ana", places=places))
    assert 20 <= len(fitted.places) < 50 and fitted.places[-1] == Place("dm", "DMs")
    assert fitted.places[:-1] == places[: len(fitted.places) - 1]
    assert len(signer.dumps(fitted)) <= MAX_COOKIE_CHARS
    assert signer.loads(signer.dumps(fitted)) == fitted


def test_the_secrets_of_the_dashboard_never_reach_the_settings_shown() -> None:
    settings = load_settings(
        {"DISCORD_CLIENT_SECRET": "client-secret-value-1234", "WEB_SESSION_SECRET": "w" * 40},
        dotenv_path=None,
    )
    shown = json.dumps(settings.masked()) + json.dumps(settings.in_effect())
    assert "client-secret-value" not in shown and "w" * 20 not in shown
    assert {"DISCORD_CLIENT_SECRET", "WEB_SESSION_SECRET"} <= Settings.secret_names()


@pytest.mark.parametrize("path", ["", "/", "/auth/login", "/memory/dm", "/static/x", "/{place}", "/cb?x=1"])
def test_a_redirect_url_that_would_shadow_a_page_is_refused(tmp_path: Path, path: str) -> None:
    settings = make_settings(
        tmp_path,
        discord_client_id="1",
        discord_client_secret="c",
        web_session_secret=SECRET,
        web_redirect_url=f"https://memory.example.com{path}",
    )
    with pytest.raises(CannotServe, match="WEB_REDIRECT_URL's path"):
        web_config(settings)
    assert web_config(replace(settings, web_redirect_url="https://m.example.com/auth/callback")).secure


async def test_a_code_discord_refuses_signs_nobody_in(site: Site) -> None:
    site.discord.fail_route("POST", r"^/oauth2/token$", 400, body={"error": "invalid_grant"})
    site.discord.sign_in_as(site.ana)
    async with browser() as http:
        async with http.get(site.url + "/auth/login") as r:
            assert r.status == 502 and "Discord did not accept the sign-in" in await r.text()
        assert (await get(http, f"{site.url}/memory/{site.guild_id}"))[0] == 303
