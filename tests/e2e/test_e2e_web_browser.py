"""The dashboard in a real browser: headless Chromium (Debian's `chromium` package, driven by Playwright with
that executable) against the dashboard served by uvicorn on the test's database, signed in through the
Discord stand-in's OAuth2 pages, on both backends. Every step is a click, a typed word or a download, as a
person would do it; what is checked in the database is read from it.

One browser serves the whole session (each test a fresh tab, the cookies cleared); these tests and
their fixtures share one event loop for it. The screenshots (the README's Dashboard) are taken on every
run on SQLite; WEB_SCREENSHOTS_DIR=docs/screenshots writes them where the docs show them.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.config import Settings
from bot.memory.service import MemoryService
from bot.web.limits import Limits
from bot.web.sessions import COOKIE, Place, Session, SessionSigner
from tests.conftest import open_service
from tests.fakes import FakeEmbedder, FakeLLM
from tests.integration.test_store import file_bytes, traces
from tests.web_site import (
    MEMBER_TEXTS,
    SECRET,
    SENSITIVE_COMMUNITY,
    STAFF_TEXTS,
    Site,
    seed_community,
    serve_site,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the browser's loop

INSTALL = (
    "apt-get install -y --no-install-recommends chromium (Debian's browser; Playwright's own download "
    "is not used) and pip install -e '.[dev]' (the playwright package)"
)
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1000, "height": 720}
MAX_SCREENSHOT_BYTES = 150_000


def chromium_path() -> str:
    """Debian's Chromium; a missing one fails the tests with the command that installs it (no skip)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(f"no Chromium on this machine: {INSTALL}", pytrace=False)
    return found


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium() -> AsyncIterator[Any]:
    """One headless Chromium for the session, with one browsing context (cookies, downloads) that each test
    starts empty: cheaper than a context a test on a busy machine."""
    path = chromium_path()
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.fail(f"the playwright package is missing: {INSTALL}", pytrace=False)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        context = await browser.new_context(viewport=DESKTOP, accept_downloads=True)
        context.set_default_timeout(10_000)  # a page here answers in milliseconds: fail fast, not in 30 s
        yield context
        await context.close()
        await browser.close()


@pytest_asyncio.fixture(loop_scope="session")
async def service(settings: Settings, llm: FakeLLM, embedder: FakeEmbedder) -> AsyncIterator[MemoryService]:
    """conftest's service, on the browser's loop."""
    async with open_service(settings, llm, embedder) as svc:
        yield svc


@pytest_asyncio.fixture(loop_scope="session")
async def site(tmp_path: Path, database: Path | str, service: MemoryService) -> AsyncIterator[Site]:
    async with serve_site(tmp_path, database, service, Limits()) as served:
        yield served


@pytest_asyncio.fixture(loop_scope="session")
async def page(chromium: Any) -> AsyncIterator[Any]:
    """A fresh tab, desktop-sized, signed in nowhere (the session's cookies cleared). The browser must
    report no error of the pages (a stylesheet or image the CSP blocks, a script error); a refusal's own
    status (403, 404) is not one."""
    await chromium.clear_cookies()
    tab = await chromium.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on(
        "console",
        lambda message: (
            errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )
    try:
        yield tab
    finally:
        await tab.close()
    assert errors == []


async def screenshot(page: Any, name: str, tmp_path: Path, backend: str, **options: Any) -> None:
    """A PNG of the page, small enough for the docs, taken on SQLite's run (the pages are the same on both
    backends); kept in WEB_SCREENSHOTS_DIR when set."""
    if backend != "sqlite":
        return
    shot = tmp_path / f"{name}.png"
    await page.screenshot(path=str(shot), **options)
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) < MAX_SCREENSHOT_BYTES, (name, len(data))
    if folder := os.environ.get("WEB_SCREENSHOTS_DIR"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(folder) / shot.name)


async def sign_in(page: Any, site: Site, who: dict[str, Any], *, from_home: bool = False) -> None:
    """Through Discord's (the stand-in's) authorization, back home: from the sign-in page's button
    (`from_home`), or from its link's address."""
    site.discord.sign_in_as(who)
    if from_home:
        await page.goto(site.url + "/")
        await page.get_by_role("link", name="Sign in with Discord").click()
    else:
        await page.goto(site.url + "/auth/login")
    await page.wait_for_url(site.url + "/")
    assert await page.get_by_role("heading", name="Your memory").is_visible()


async def open_alpha(page: Any, site: Site) -> None:
    await page.get_by_role("link", name="Alpha", exact=True).click()
    await page.wait_for_url(f"{site.url}/memory/{site.guild_id}")


def item(page: Any, fact_id: int) -> Any:
    return page.locator(f"#fact-{fact_id}")


async def test_a_member_signs_in_and_sees_only_their_own_facts(
    page: Any, site: Site, tmp_path: Path, backend: str
) -> None:
    await page.goto(site.url + "/")
    await screenshot(page, "sign-in", tmp_path, backend)
    await sign_in(page, site, site.ana, from_home=True)
    assert await page.get_by_role("link", name="Beta").count() == 0  # nothing held about her there
    await open_alpha(page, site)
    main = await page.locator("main").inner_text()
    assert "ana keeps bees" in main and "ana writes <script>alert(1)</script> in her notes" in main
    assert "bob plays the oboe" not in main and "ana lives in Porto" not in main  # bob's; her DMs'
    assert await page.locator("main script").count() == 0  # her text is shown, never run
    await screenshot(page, "member-facts", tmp_path, backend)
    await page.get_by_label("Search your facts").fill("oboe")
    await page.get_by_role("button", name="Search").click()
    assert "No fact of yours here matches that." in await page.locator("main").inner_text()
    await page.goto(site.url + "/")
    await page.get_by_role("link", name="Direct messages with the bot").click()
    main = await page.locator("main").inner_text()
    assert "ana lives in Porto" in main and "ana keeps bees" not in main
    # a phone's width: one column, nothing wider than the screen
    await page.set_viewport_size(PHONE)
    await page.goto(f"{site.url}/memory/{site.guild_id}")
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], width
    await screenshot(page, "member-facts-phone", tmp_path, backend)


async def test_forgetting_a_fact_removes_it_from_every_table_and_the_file(
    page: Any, site: Site, service: MemoryService, backend: str
) -> None:
    bees = site.facts["keeps"]
    assert await service.store.call(traces, backend, ["bees"])  # held before
    await sign_in(page, site, site.ana)
    await open_alpha(page, site)
    await item(page, bees).get_by_text("Forget…").click()
    await item(page, bees).get_by_role("button", name=f"Forget #{bees} for good").click()
    await page.get_by_text(f"Forgot fact #{bees} for good.").wait_for()
    assert "ana keeps bees" not in await page.locator("main").inner_text()
    assert "bees" not in page.url
    assert await service.store.call(traces, backend, ["bees"]) == []
    assert site.rows(site.facts["writes"])  # her other fact stays
    if backend == "sqlite":  # the file and its WAL too
        assert b"bees" not in file_bytes(Path(site.database)).lower()


async def test_a_member_corrects_a_fact(
    page: Any, site: Site, service: MemoryService, tmp_path: Path, backend: str
) -> None:
    bees = site.facts["keeps"]
    await sign_in(page, site, site.ana)
    await open_alpha(page, site)
    await item(page, bees).get_by_role("link", name=f"Correct fact #{bees}").click()
    text = page.get_by_label("The corrected fact")
    assert await text.input_value() == "ana keeps bees"
    await text.fill("ana keeps three hives of bees")
    await screenshot(page, "member-correct", tmp_path, backend)
    await page.get_by_role("button", name="Save the correction").click()
    await page.get_by_text(f"Corrected fact #{bees}.").wait_for()
    assert "ana keeps three hives of bees" in await item(page, bees).inner_text()
    assert site.rows(bees) == [(str(site.ana["id"]), "ana keeps three hives of bees")]
    # "The old words are deleted for good", as the page says
    assert await service.store.call(traces, backend, ["keeps bees"]) == []
    if backend == "sqlite":
        assert b"keeps bees" not in file_bytes(Path(site.database))


async def test_the_export_downloads_only_their_facts(page: Any, site: Site) -> None:
    await sign_in(page, site, site.ana)
    await open_alpha(page, site)
    async with page.expect_download() as waiting:
        await page.get_by_role("link", name="Export everything as JSON").click()
    download = await waiting.value
    assert download.suggested_filename == f"memory-guild-{site.guild_id}-{site.ana['id']}.json"
    document = json.loads(Path(await download.path()).read_text(encoding="utf-8"))
    assert {f["user_id"] for f in document["facts"]} == {str(site.ana["id"])}
    assert sorted(f["text"] for f in document["facts"]) == [
        "ana keeps bees",
        "ana writes <script>alert(1)</script> in her notes",
    ]
    async with page.expect_download() as waiting:
        await page.get_by_role("link", name="Export everything as CSV").click()
    csv_text = Path(await (await waiting.value).path()).read_text(encoding="utf-8-sig")
    assert "ana keeps bees" in csv_text and "oboe" not in csv_text and "Porto" not in csv_text


async def test_an_admin_without_access_to_staff_sees_no_staff_item_and_no_members_fact(
    page: Any, site: Site, service: MemoryService, tmp_path: Path, backend: str
) -> None:
    await seed_community(service, site)
    await sign_in(page, site, site.cat)
    await page.get_by_role("link", name="Manage Alpha").click()
    seen = []
    for section, shot in (
        ("Community facts", "admin-community-facts"),
        ("Episodes", "admin-episodes"),
        ("Settings", "admin-settings"),
        ("Audit log", "admin-audit"),
        ("Use per day", "admin-use-per-day"),
    ):
        await page.get_by_role("navigation", name="Managing Alpha").get_by_role("link", name=section).click()
        await page.get_by_role("heading", name=section, level=1).wait_for()
        seen.append(await page.locator("main").inner_text())
        await screenshot(page, shot, tmp_path, backend)  # what a window shows, not the whole page
    everything = "\n".join(seen)
    assert "No spoilers before Friday" in everything and "planned a picnic" in everything
    for text in ("#staff", *STAFF_TEXTS, *MEMBER_TEXTS, SENSITIVE_COMMUNITY, "4242"):
        assert text not in everything, text
    chart = page.locator("svg.chart").first
    assert await chart.get_attribute("role") == "img" and await chart.is_visible()
    box = await chart.bounding_box()  # drawn, at the page's width
    assert box is not None and box["width"] > 300 and box["height"] > 100, box
    await page.set_viewport_size(PHONE)  # at a phone's width every admin page fits the screen
    for section in ("Use per day", "Audit log", "Settings", "Episodes", "Community facts"):
        await page.get_by_role("navigation", name="Managing Alpha").get_by_role("link", name=section).click()
        await page.get_by_role("heading", name=section, level=1).wait_for()
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], (section, width)
    await page.set_viewport_size(DESKTOP)
    # dan reads #staff: its items are his to see, a member's fact still is not
    await page.context.clear_cookies()
    await sign_in(page, site, site.dan)
    await page.get_by_role("link", name="Manage Alpha").click()
    listed = await page.locator("main").inner_text()
    assert STAFF_TEXTS[0] in listed and not any(text in listed for text in (*MEMBER_TEXTS, "4242"))


async def test_a_forged_state_signs_nobody_in(page: Any, site: Site) -> None:
    """The way to Discord (and so the way back) carries a `state` this browser was not given, as an
    attacker's link would: Discord approves, and the dashboard still signs nobody in."""

    async def forge(route: Any) -> None:
        response = await route.fetch(max_redirects=0)
        headers = dict(response.headers)
        headers["location"] = headers["location"].replace("state=", "state=forged", 1)
        await route.fulfill(response=response, headers=headers)

    await page.route(f"{site.url}/auth/login", forge)
    site.discord.sign_in_as(site.ana)
    await page.goto(site.url + "/")
    await page.get_by_role("link", name="Sign in with Discord").click()
    await page.get_by_role("heading", name="Not signed in").wait_for()
    assert "could not be checked" in await page.locator("main").inner_text()
    assert site.discord.authorize_requests[-1]["state"].startswith("forged")  # Discord approved it
    await page.goto(f"{site.url}/memory/{site.guild_id}")  # not signed in: the sign-in page
    assert page.url == site.url + "/"
    assert await page.get_by_role("link", name="Sign in with Discord").is_visible()


async def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(page: Any, site: Site) -> None:
    bees = site.facts["keeps"]
    await sign_in(page, site, site.ana)
    await open_alpha(page, site)
    await item(page, bees).get_by_text("Forget…").click()
    await item(page, bees).locator('input[name="csrf"]').evaluate("input => input.remove()")
    await item(page, bees).get_by_role("button", name=f"Forget #{bees} for good").click()
    await page.get_by_role("heading", name="Form refused").wait_for()
    assert "nothing was done" in await page.locator("main").inner_text()
    assert site.rows(bees) == [(str(site.ana["id"]), "ana keeps bees")]


async def test_an_expired_session_is_sent_to_sign_in(page: Any, site: Site) -> None:
    """A session cookie signed with the dashboard's own secret, issued longer ago than a sign-in lasts."""
    place = Place(f"guild:{site.guild_id}", "Alpha")
    issued = time.time() - 12 * 3600 - 5
    old = Session(issued=issued, user_id=str(site.ana["id"]), name="ana", places=(place,))
    value = SessionSigner(SECRET, 12 * 3600).dumps(old)
    await page.context.add_cookies([{"name": COOKIE, "value": value, "url": site.url}])
    await page.goto(f"{site.url}/memory/{site.guild_id}")
    assert page.url == site.url + "/"
    assert await page.get_by_role("link", name="Sign in with Discord").is_visible()
    assert "ana keeps bees" not in await page.content()


async def test_another_members_fact_id_is_refused_like_an_unknown_one(page: Any, site: Site) -> None:
    oboe, bees = site.facts["plays"], site.facts["keeps"]
    await sign_in(page, site, site.ana)
    answers = set()
    for fact_id in (oboe, 10**15):  # bob's, and none
        response = await page.goto(f"{site.url}/memory/{site.guild_id}/facts/{fact_id}/correct")
        assert response is not None
        answers.add((response.status, await page.locator("main").inner_text()))
    [(status, text)] = answers
    assert status == 404 and "There is no such fact of yours in Alpha." in text
    # her own forget form, pointed at bob's fact in the page: refused, and his fact stays
    await page.goto(site.url + "/")
    await open_alpha(page, site)
    form = item(page, bees).locator("form")
    await form.evaluate(
        "(form, id) => { form.action = form.action.replace(/\\/\\d+\\/forget$/, `/${id}/forget`) }", oboe
    )
    await item(page, bees).get_by_text("Forget…").click()
    async with page.expect_response(lambda r: r.url.endswith(f"/{oboe}/forget")) as answered:
        await item(page, bees).get_by_role("button", name=f"Forget #{bees} for good").click()
    assert (await answered.value).status == 404
    assert site.rows(oboe) == [(str(site.bob["id"]), "bob plays the oboe")]
    assert site.rows(bees)


async def test_a_member_who_is_not_an_admin_cannot_open_the_admin_pages(page: Any, site: Site) -> None:
    await sign_in(page, site, site.ana)
    assert await page.get_by_role("link", name="Manage Alpha").count() == 0
    base = f"{site.url}/admin/{site.guild_id}"
    for path in ("", "/episodes", "/settings", "/audit", "/usage"):
        response = await page.goto(base + path)
        assert response is not None and response.status == 404, path
        assert "There is no such page here." in await page.locator("main").inner_text()
