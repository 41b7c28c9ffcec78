"""The dashboard over real HTTP: uvicorn serving bot/web/ on 127.0.0.1, a member signing in through the
Discord stand-in's OAuth2, and the engine on both backends (an SQLite file with sqlite-vec, PostgreSQL
with pgvector; models faked, as the `service` fixture wires them). What is checked in the database is
read from it as any other reader would. Tests of the rate limits, which no database changes, run on
SQLite only."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import logging
import re
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app import open_memory
from bot.config import Settings, load_settings
from bot.http_serving import listen
from bot.memory.models import BufferedMessage, NewFact, Origin, PersonSettings, iso, utcnow
from bot.memory.service import MemoryService
from bot.web.exports import CSV_COLUMNS, cell
from bot.web.limits import MAX_KEYS, Limit, Limits, RateLimiter
from bot.web.server import CannotServe, web_config
from bot.web.sessions import COOKIE, MAX_COOKIE_CHARS, Place, Session, SessionSigner
from tests.conftest import make_settings
from tests.integration.test_cli import clean_env, run_cli
from tests.web_site import SECRET, Clock, Site, serve_site

SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"])  # nothing of the database is at stake


@pytest.fixture
def limits() -> Limits:
    """The dashboard's rate limits: its defaults, unless a test parametrizes smaller ones."""
    return Limits()


@pytest.fixture
async def site(
    tmp_path: Path, database: Path | str, service: MemoryService, limits: Limits
) -> AsyncIterator[Site]:
    async with serve_site(tmp_path, database, service, limits) as served:
        yield served


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
        search, csrf = f"{site.url}/memory/{site.guild_id}/search", csrf_of(page)
        status, found = await post(http, search, {"csrf": csrf, "q": "oboe"})
        assert (
            status == 200 and "bob plays the oboe" not in found and "No fact of yours here matches" in found
        )
        status, found = await post(http, search, {"csrf": csrf, "q": "bee"})
        assert status == 200 and "ana keeps bees" in found and "ana writes" not in found
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


async def test_forget_all_asks_first_then_forgets_all_of_hers_in_that_place_only(
    site: Site, service: MemoryService
) -> None:
    alpha = f"guild:{site.guild_id}"
    url = f"{site.url}/memory/{site.guild_id}/forget-all"
    for n, who in enumerate((site.ana, site.bob)):  # said, not read yet
        name = who["username"]
        said = BufferedMessage(
            str(10**17 + 900 + n), alpha, "500", str(who["id"]), name, f"{name} plays the harp", iso(utcnow())
        )
        assert service.capture(said, guild_id=str(site.guild_id))
    await service.capture_buffer.wait_written()
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.ana))
        status, question = await get(http, url)
        assert status == 200 and "(2 facts," in question and "cannot be undone" in question
        assert (
            csrf_of(question) == csrf and len(site.facts_of(alpha, site.ana)) == 2
        )  # asking forgets nothing
        assert (await post(http, url, {}))[0] == 403
        assert (await post(http, url, {"csrf": "wrong"}))[0] == 403
        assert len(site.facts_of(alpha, site.ana)) == 2
        async with http.post(url, data={"csrf": csrf}) as r:
            page = await r.text()
            assert r.status == 200 and str(r.url) == f"{site.url}/memory/{site.guild_id}?done=forgot-all&n=2"
        assert "Forgot everything the bot remembered about you here, for good: 2 facts" in page
        assert "ana keeps bees" not in page and "The bot remembers nothing about you here." in page
    assert site.facts_of(alpha, site.ana) == []
    assert site.facts_of(alpha, site.bob) == ["bob plays the oboe"]  # another member's stay
    assert site.facts_of("dm", site.ana) == ["ana lives in Porto"]  # and her other places'
    sources = site.read(
        "SELECT count(*) FROM fact_sources WHERE fact_id IN (?, ?)",
        (site.facts["keeps"], site.facts["writes"]),
    )
    assert sources == [(0,)]
    assert site.read("SELECT author_id FROM pending_messages WHERE scope = ?", (alpha,)) == [
        (str(site.bob["id"]),)
    ]


async def test_the_csv_export_holds_the_json_facts_quoted_with_formulas_defused(
    site: Site, service: MemoryService
) -> None:
    alpha, ana = f"guild:{site.guild_id}", str(site.ana["id"])
    tricky = '=HYPERLINK("http://evil.example","click"), ana said "hi"; ok'
    origin = {"10999": Origin(str(10**17))}
    await service.import_facts(
        [NewFact(alpha, ana, "ana", tricky, ["10999"], origins=origin, sensitive=True)]
    )
    async with browser() as http:
        await sign_in(http, site, site.ana)
        async with http.get(f"{site.url}/memory/{site.guild_id}/export.json") as r:
            document = json.loads(await r.text())
        async with http.get(f"{site.url}/memory/{site.guild_id}/export.csv") as r:
            assert r.status == 200 and r.headers["Content-Type"] == "text/csv; charset=utf-8"
            assert (
                r.headers["Content-Disposition"]
                == f'attachment; filename="memory-guild-{site.guild_id}-{ana}.csv"'
            )
            body = (await r.read()).decode("utf-8")
    assert body.startswith("\ufeffid,text,status,") and body.endswith("\r\n")
    header, *rows = list(csv.reader(io.StringIO(body.removeprefix("\ufeff"))))
    assert tuple(header) == CSV_COLUMNS
    table = [dict(zip(header, row, strict=True)) for row in rows]
    assert [int(r["id"]) for r in table] == [f["id"] for f in document["facts"]]  # the same facts, in order
    assert len(table) == 3 and {f["user_id"] for f in document["facts"]} == {ana}
    by_text = {r["text"]: r for r in table}
    assert by_text["'" + tricky]["sensitive"] == "true"  # the formula is text to a spreadsheet
    assert by_text["'" + tricky]["message_ids"] == "10999"
    bees = by_text["ana keeps bees"]
    [json_bees] = [f for f in document["facts"] if f["text"] == "ana keeps bees"]
    assert bees["status"] == "active" and bees["sensitive"] == "false" and bees["superseded_by"] == ""
    assert (
        bees["said_at"] == json_bees["said_at"]
        and bees["message_ids"] == json_bees["sources"][0]["message_id"]
    )
    assert bees["channel_ids"] == json_bees["sources"][0]["channel_id"]
    assert "ana writes <script>alert(1)</script> in her notes" in by_text


def test_a_csv_cell_is_never_a_formula() -> None:
    for start in ("=", "+", "-", "@", "\t", "\r"):
        assert cell(f"{start}1+1") == f"'{start}1+1"
    assert cell("ana keeps bees") == "ana keeps bees" and cell("a=b") == "a=b"
    assert (cell(None), cell(True), cell(False), cell(12)) == ("", "true", "false", "12")


async def test_settings_and_the_opt_out_are_stored_and_an_opted_out_member_is_told(
    site: Site, service: MemoryService
) -> None:
    alpha, ana = f"guild:{site.guild_id}", str(site.ana["id"])
    url = f"{site.url}/memory/{site.guild_id}/settings"
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.ana))
        status, form = await get(http, url)
        assert status == 200 and 'id="remember" name="remember" value="on" checked' in form
        assert 'name="in_replies" value="on" checked' in form and 'name="notify_learned" value="on">' in form
        assert (await post(http, url, {"notify_learned": "on", "in_replies": "on"}))[0] == 403  # no token
        assert not service.is_opted_out(alpha, ana)
        async with http.post(url, data={"csrf": csrf, "in_replies": "on", "notify_learned": "on"}) as r:
            saved = await r.text()
            assert r.status == 200 and "Your settings here are saved." in saved
        assert "You are opted out here" in saved and 'name="remember" value="on">' in saved
        assert "You are opted out here" in (await get(http, f"{site.url}/memory/{site.guild_id}"))[1]
        await service.reload_caches()  # what the database holds, not this process's cache
        assert service.is_opted_out(alpha, ana) and service.person(alpha, ana) == PersonSettings(True, True)
        assert not service.is_opted_out("dm", ana)  # her other place is left as it was
        [(opted_out,)] = site.read(
            "SELECT opted_out FROM users WHERE scope = ? AND user_id = ?", (alpha, ana)
        )
        assert opted_out
        async with http.post(url, data={"csrf": csrf, "remember": "on"}) as r:  # opted in, replies off
            assert r.status == 200 and "You are opted out here" not in await r.text()
        assert "You are opted out here" not in (await get(http, f"{site.url}/memory/{site.guild_id}"))[1]
    await service.reload_caches()
    assert not service.is_opted_out(alpha, ana)
    assert service.person(alpha, ana) == PersonSettings(in_replies=False, notify_learned=False)


async def test_a_sensitive_fact_is_marked_with_what_is_kept_of_its_consent(
    site: Site, service: MemoryService
) -> None:
    alpha, ana = f"guild:{site.guild_id}", str(site.ana["id"])
    origin = {str(10**17 + 500): Origin(str(10**17 + 7))}
    asked = NewFact(
        alpha, ana, "ana", "ana takes insulin", [str(10**17 + 500)], origins=origin, sensitive=True
    )
    await service.import_facts([asked])
    async with browser() as http:
        await sign_in(http, site, site.ana)
        page = (await get(http, f"{site.url}/memory/{site.guild_id}"))[1]
    insulin = page[page.index("ana takes insulin") :]
    insulin = insulin[: insulin.index("</li>")]
    assert "sensitive: used only in replies to you" in insulin
    assert "Kept because you asked" in insulin and "learned in a channel of this server" in insulin
    assert f"/channels/{site.guild_id}/{10**17 + 7}/{10**17 + 500}" in insulin
    assert re.search(r"Said \d{4}-\d\d-\d\d \d\d:\d\d UTC, .*stored \d{4}-\d\d-\d\d \d\d:\d\d UTC", insulin)
    bees = page[page.index("ana keeps bees") :]
    assert "Kept because you asked" not in bees[: bees.index("</li>")]


async def test_a_search_is_a_form_whose_words_reach_no_url_and_no_log(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    async with browser() as http:
        page = await sign_in(http, site, site.ana)
        page = (await get(http, f"{site.url}/memory/{site.guild_id}"))[1]
        assert 'method="post" action="/memory/' in page and 'method="get"' not in page
        with caplog.at_level(logging.INFO):
            async with http.post(
                f"{site.url}/memory/{site.guild_id}/search", data={"csrf": csrf_of(page), "q": "bees"}
            ) as r:
                found = await r.text()
                assert str(r.url) == f"{site.url}/memory/{site.guild_id}/search"
        assert "ana keeps bees" in found and 'value="bees"' in found
        assert all("bees" not in record.getMessage() for record in caplog.records)
        assert not re.search(r'href="[^"]*bees', found) and not re.search(r'action="[^"]*bees', found)
        # a query string is not a search: the page lists everything and does not repeat the words
        status, listed = await get(http, f"{site.url}/memory/{site.guild_id}?q=oboe")
        assert status == 200 and "ana writes" in listed and "oboe" not in listed
        assert (await post(http, f"{site.url}/memory/{site.guild_id}/search", {"q": "bees"}))[0] == 403


@SQLITE_ONLY
async def test_sign_in_is_rate_limited_per_address_and_the_limit_resets(site: Site) -> None:
    most = Limits().sign_in_per_address
    async with browser() as http:
        for _ in range(most.requests):
            assert (await get(http, site.url + "/auth/login"))[0] == 302
        status, page = await get(http, site.url + "/auth/login")
        assert status == 429 and "Too many attempts" in page
        async with http.get(site.url + "/auth/callback?code=x&state=y", allow_redirects=False) as r:
            assert r.status == 429 and r.headers["Retry-After"] == str(int(most.seconds))
        # behind a reverse proxy on this machine, each client is counted apart (uvicorn reads the
        # X-Forwarded-For a proxy on 127.0.0.1 sets)
        proxied = {"X-Forwarded-For": "203.0.113.9"}
        async with http.get(site.url + "/auth/login", headers=proxied, allow_redirects=False) as r:
            assert r.status == 302
        site.clock.now += most.seconds - 1
        async with http.get(site.url + "/auth/login", allow_redirects=False) as r:
            assert r.status == 429 and r.headers["Retry-After"] == "1"
        site.clock.now += 1
        await sign_in(http, site, site.ana)  # a new window: signed in
        assert (await get(http, f"{site.url}/memory/{site.guild_id}"))[0] == 200


@SQLITE_ONLY
@pytest.mark.parametrize(
    "limits", [Limits(forms_per_address=Limit(6, 60.0), forms_per_session=Limit(3, 60.0))]
)
async def test_forms_are_rate_limited_per_session_and_per_address_and_the_limits_reset(
    site: Site, limits: Limits
) -> None:
    per_session, per_address = limits.forms_per_session.requests, limits.forms_per_address.requests
    assert per_address == 2 * per_session
    bees = site.facts["keeps"]
    async with browser() as ana, browser() as bob, browser() as ana_again:
        forget = f"{site.url}/memory/{site.guild_id}/facts/{bees}/forget"
        await sign_in(ana, site, site.ana)
        bob_csrf = csrf_of(await sign_in(bob, site, site.bob))
        for _ in range(per_session):  # refused for their token, but counted
            assert (await post(ana, forget, {"csrf": "wrong"}))[0] == 403
        async with ana.post(forget, data={"csrf": "wrong"}, allow_redirects=False) as r:
            assert r.status == 429 and r.headers["Retry-After"] == str(int(limits.forms_per_session.seconds))
        logout = site.url + "/auth/logout"
        for _ in range(per_session):  # another session from the same address still may
            assert (await post(bob, logout, {"csrf": "wrong"}))[0] == 403
        ana_csrf = csrf_of(await sign_in(ana_again, site, site.ana))  # a sign-in is not a form
        status, page = await post(ana_again, forget, {"csrf": ana_csrf})
        assert status == 429 and "Too many attempts" in page  # the address is at its limit
        assert site.rows(bees)  # nothing was done
        site.clock.now += limits.forms_per_address.seconds
        assert (await post(bob, logout, {"csrf": bob_csrf}))[0] == 303
        assert (await post(ana, forget, {"csrf": csrf_of((await get(ana, site.url + "/"))[1])}))[0] == 303
    assert site.rows(bees) == []


async def test_search_results_page_through_forms_and_the_list_through_page_numbers(
    site: Site, service: MemoryService
) -> None:
    alpha, ana = f"guild:{site.guild_id}", str(site.ana["id"])
    hives = [
        NewFact(alpha, ana, "ana", f"ana tends hive number {n}", [str(10**17 + 600 + n)]) for n in range(55)
    ]
    await service.import_facts(hives)
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.ana))
        search = f"{site.url}/memory/{site.guild_id}/search"
        status, first = await post(http, search, {"csrf": csrf, "q": "hive"})
        assert status == 200 and first.count('<li id="fact-') == 50 and "page 1" in first
        [pager] = re.findall(r'<nav class="pager".*?</nav>', first, re.S)
        assert 'name="q" value="hive"' in pager and 'name="page" value="2"' in pager and "href" not in pager
        status, second = await post(http, search, {"csrf": csrf, "q": "hive", "page": "2"})
        assert status == 200 and second.count('<li id="fact-') == 5 and "ana keeps bees" not in second
        assert 'name="page" value="1"' in second and "Next page" not in second
        status, listed = await get(http, f"{site.url}/memory/{site.guild_id}?page=2")
        assert status == 200 and listed.count('<li id="fact-') == 7 and "57 facts" in listed
        assert f'href="/memory/{site.guild_id}" rel="prev"' in listed


def test_the_rate_limiter_holds_at_most_its_bound_of_keys_idle_ones_first() -> None:
    clock, limit = Clock(), Limit(1, 60.0)
    limiter = RateLimiter(clock)
    for n in range(MAX_KEYS):
        assert limiter.hit([("forms", str(n), limit)]) == 0
    assert limiter.hit([("forms", "0", limit)]) == 60 and len(limiter) == MAX_KEYS
    clock.now += 30
    assert limiter.hit([("forms", "new", limit)]) == 0 and len(limiter) == MAX_KEYS  # the oldest went
    clock.now += 30
    assert limiter.hit([("forms", "newer", limit)]) == 0 and len(limiter) == 2  # the idle ones went
    assert limiter.hit([("forms", "new", limit)]) == 30  # a key still in its window is kept
