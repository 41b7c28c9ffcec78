"""The dashboard's admin pages over real HTTP, on both backends: who is an admin (Manage Server, read from the
Discord stand-in's current permissions with the bot's token), the server's community facts and episodes
under /memory-admin's rule (only what was said where the admin can read now; never a member's fact), the
settings, the audit log (no texts) and the use per day (an inline SVG chart with its table).

The site is test_web.py's: Alpha has #general and #staff (only the staff role, dan's, and the bot read it);
cat and dan have Manage Server there, ana and bob do not."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from bot import discord_rest
from bot.llm.usage import Usage
from bot.memory.model_ports import Purpose, usage_scope
from bot.memory.models import (
    utcnow,
)
from bot.memory.service import MemoryService
from bot.web.charts import Series, bar_chart
from tests.integration import test_web
from tests.integration.test_web import browser, csrf_of, get, post, sign_in
from tests.web_site import MEMBER_TEXTS, SENSITIVE_COMMUNITY, STAFF_TEXTS, Site, pages_of, seed_community

site, limits = test_web.site, test_web.limits  # the fixtures: the dashboard over HTTP, its rate limits


async def test_an_admin_without_access_to_staff_sees_no_staff_item_and_no_members_fact(
    site: Site, service: MemoryService
) -> None:
    ids = await seed_community(service, site)
    base = f"{site.url}/admin/{site.guild_id}"
    async with browser() as http:
        home = await sign_in(http, site, site.cat)
        assert f'href="/admin/{site.guild_id}">Manage Alpha' in home
        pages = [(await get(http, url)) for url in pages_of(site)]
        assert [status for status, _ in pages] == [200] * 5
        everything = "".join(page for _, page in pages)
        assert "#staff" not in everything  # not even its name: the settings list the channels she reads
        [(sensitive,)] = site.read("SELECT sensitive FROM facts WHERE text = ?", (SENSITIVE_COMMUNITY,))
        assert sensitive  # held, marked, and on no page
        assert "No spoilers before Friday" in everything and "planned a picnic" in everything
        for text in (*STAFF_TEXTS, *MEMBER_TEXTS, SENSITIVE_COMMUNITY, "4242"):
            assert text not in everything, text
        csrf = csrf_of(pages[0][1])
        for path, words in (("/search", "launch"), ("/episodes/search", "budget")):
            status, found = await post(http, base + path, {"csrf": csrf, "q": words})
            assert status == 200 and "you can read here matches that" in found
            assert not any(text in found for text in STAFF_TEXTS)
        status, found = await post(http, base + "/search", {"csrf": csrf, "q": "spoilers"})
        assert status == 200 and "No spoilers before Friday" in found
        # an id of #staff answers exactly as an unknown one, and nothing changes
        for kind, staff_id, unknown in (
            ("facts", ids["launch"], 10**15),
            ("episodes", ids["budget"], 10**15),
        ):
            answers = set()
            for item in (staff_id, unknown, "x"):
                url = f"{base}/{kind}/{item}"
                answers.add(await get(http, f"{url}/correct"))
                answers.add(await post(http, f"{url}/correct", {"csrf": csrf, "text": "The launch moved"}))
                answers.add(await post(http, f"{url}/forget", {"csrf": csrf}))
            [(status, body)] = answers
            assert status == 404 and "that you can read" in body and f"#{staff_id}" not in body
    assert site.read("SELECT text FROM facts WHERE id = ?", (ids["launch"],)) == [(STAFF_TEXTS[0],)]
    [(budget,)] = site.read("SELECT summary FROM episodes WHERE id = ?", (ids["budget"],))
    assert STAFF_TEXTS[1] in budget and "The launch moved" not in budget
    async with browser() as http:  # dan reads #staff: he sees its items, still no member's fact
        await sign_in(http, site, site.dan)
        everything = "".join([(await get(http, url))[1] for url in pages_of(site)])
        assert all(text in everything for text in STAFF_TEXTS) and '<th scope="row">#staff</th>' in everything
        assert not any(text in everything for text in (*MEMBER_TEXTS, "4242"))


async def test_a_non_admin_gets_404_on_every_admin_page_and_post(
    site: Site, service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = await seed_community(service, site)
    base = f"{site.url}/admin/{site.guild_id}"
    async with browser() as http:
        home = await sign_in(http, site, site.ana)
        assert "/admin/" not in home
        csrf = csrf_of(home)
        asked = len(site.discord.requests)
        unknown_server = await get(http, f"{site.url}/admin/{10**17 + 1}")
        assert unknown_server[0] == 404
        answers = {await get(http, url) for url in pages_of(site)}
        for form in ({"csrf": csrf}, {}):  # with or without her token: not found, before any CSRF check
            for path in (
                "/search",
                "/episodes/search",
                "/settings",
                f"/facts/{ids['rule']}/correct",
                f"/facts/{ids['rule']}/forget",
                f"/episodes/{ids['picnic']}/correct",
                f"/episodes/{ids['picnic']}/forget",
            ):
                answers.add(await post(http, base + path, {**form, "text": "changed", "q": "x"}))
        assert answers == {unknown_server}
        # a server not among those she managed at sign-in is not even read from Discord for her
        assert not [r for r in site.discord.requests[asked:] if r.path.startswith("/guilds/")]
    assert site.read("SELECT text FROM facts WHERE id = ?", (ids["rule"],)) == [
        ("No spoilers before Friday",)
    ]
    assert len(site.read("SELECT id FROM episodes WHERE id = ?", (ids["picnic"],))) == 1
    # permissions are read now, not at sign-in: cat loses Manage Server, and her pages are gone at once
    async with browser() as http:
        await sign_in(http, site, site.cat)
        assert (await get(http, base))[0] == 200
        assert any(r.path == f"/guilds/{site.guild_id}" for r in site.discord.requests[asked:])  # read now
        await site.discord.set_roles(site.discord.guilds[site.guild_id], site.cat, [])
        monkeypatch.setattr(discord_rest, "MAX_AGE_SECONDS", 0.0)  # no reading of 5 s to wait out
        status, page = await get(http, base)
        assert status == 404 and "There is no such page here." in page and "Community facts" not in page
    async with browser() as http:  # signed out: the sign-in page
        assert (await get(http, base))[0] == 303


async def test_an_admin_corrects_and_forgets_community_facts_and_episodes(
    site: Site, service: MemoryService
) -> None:
    ids = await seed_community(service, site)
    base = f"{site.url}/admin/{site.guild_id}"
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.cat))
        rule = f"{base}/facts/{ids['rule']}/correct"
        status, form = await get(http, rule)
        assert status == 200 and "No spoilers before Friday" in form
        assert (await post(http, rule, {"text": "No spoilers before Saturday"}))[0] == 403
        assert (await post(http, rule, {"csrf": csrf, "text": "x" * 501}))[0] == 400
        async with http.post(rule, data={"csrf": csrf, "text": "No spoilers before Saturday"}) as r:
            assert r.status == 200 and f"Corrected community fact #{ids['rule']}." in await r.text()
            assert "Saturday" not in str(r.url)
        picnic = f"{base}/episodes/{ids['picnic']}"
        async with http.post(picnic + "/correct", data={"csrf": csrf, "text": "A picnic by the lake."}) as r:
            assert r.status == 200 and f"Corrected episode #{ids['picnic']}." in await r.text()
        [(summary,)] = site.read("SELECT summary FROM episodes WHERE id = ?", (ids["picnic"],))
        assert "A picnic by the lake." in summary and "river" not in summary
        assert (await post(http, picnic + "/forget", {}))[0] == 403
        assert (await post(http, picnic + "/forget", {"csrf": csrf}))[0] == 303
        assert (await post(http, f"{base}/facts/{ids['rule']}/forget", {"csrf": csrf}))[0] == 303
        assert (await post(http, f"{base}/facts/{ids['rule']}/forget", {"csrf": csrf}))[0] == 404  # gone
    assert site.read("SELECT id FROM facts WHERE id = ?", (ids["rule"],)) == []
    assert site.read("SELECT id FROM episodes WHERE id = ?", (ids["picnic"],)) == []
    assert site.read("SELECT text FROM facts WHERE id = ?", (ids["launch"],)) == [(STAFF_TEXTS[0],)]


async def test_the_settings_are_shown_and_changed_through_the_engine_and_stored(
    site: Site, service: MemoryService
) -> None:
    alpha = site.discord.guilds[site.guild_id]
    general, random, log = (str(alpha.channels[n]) for n in ("general", "random", "bot-log"))
    url = f"{site.url}/admin/{site.guild_id}/settings"
    async with browser() as http:
        await sign_in(http, site, site.cat)
        status, page = await get(http, url)
        assert status == 200 and 'name="memory_enabled" value="on" checked' in page
        assert '<label for="log_channel">' in page and '<th scope="row">#general</th>' in page
        csrf = csrf_of(page)
        form = [
            ("csrf", csrf),
            ("log_channel", log),
            ("ignored", random),
            ("autoreply", general),
            ("persona", "A calm librarian"),
            (f"persona_{general}", "A cheerful guide"),
        ]
        assert (await post(http, url, dict(form[1:])))[0] == 403  # no token: nothing stored
        assert service.guild(str(site.guild_id)).log_channel_id is None
        async with http.post(url, data=form) as r:
            shown = await r.text()
            assert r.status == 200 and "The server&#39;s settings are saved." in shown
        assert 'name="memory_enabled" value="on">' in shown and "A cheerful guide" in shown
    await service.reload_caches()  # what the database holds
    stored = service.guild(str(site.guild_id))
    assert not stored.memory_enabled and stored.log_channel_id == log
    assert stored.ignored_channel_ids == {random} and stored.replies_in([general])
    assert not stored.replies_in([random])
    assert stored.persona == "A calm librarian" and stored.channel_personas == {general: "A cheerful guide"}
    async with browser() as http:  # and back: memory on, nothing ignored, the personas cleared
        await sign_in(http, site, site.cat)
        csrf = csrf_of((await get(http, url))[1])
        form = [("csrf", csrf), ("memory_enabled", "on"), ("log_channel", "")]
        assert (await post(http, url, dict(form)))[0] == 303
    await service.reload_caches()
    stored = service.guild(str(site.guild_id))
    assert stored.memory_enabled and stored.log_channel_id is None and not stored.ignored_channel_ids
    assert stored.persona is None and stored.channel_personas == {} and not stored.replies_in([general])


async def test_the_audit_log_shows_ids_counts_actors_and_times_never_texts(
    site: Site, service: MemoryService
) -> None:
    ids = await seed_community(service, site)
    base = f"{site.url}/admin/{site.guild_id}"
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.dan))
        assert (await post(http, f"{base}/facts/{ids['launch']}/forget", {"csrf": csrf}))[0] == 303
        status, page = await get(http, f"{base}/audit")
    assert status == 200
    [table] = re.findall(r"<table>.*?</table>", page, re.S)
    assert '<th scope="col">By</th>' in table
    forgotten = next(row for row in re.findall(r"<tr>.*?</tr>", table, re.S) if "forgotten" in row)
    assert f"dan ({site.dan['id']})" in forgotten and "count 1" in forgotten
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", forgotten)
    assert f"#{ids['rule']}" in table and "added" in table
    for text in (*STAFF_TEXTS, *MEMBER_TEXTS, SENSITIVE_COMMUNITY, "No spoilers before Friday", "picnic"):
        assert text not in page, text


async def test_the_use_per_day_is_an_inline_svg_chart_with_a_table_beside_it(
    site: Site, service: MemoryService
) -> None:
    ids = await seed_community(service, site)
    async with browser() as http:
        csrf = csrf_of(await sign_in(http, site, site.cat))
        base = f"{site.url}/admin/{site.guild_id}"
        assert (await post(http, f"{base}/facts/{ids['rule']}/forget", {"csrf": csrf}))[0] == 303
        await count_a_days_use(service, f"guild:{site.guild_id}")
        async with http.get(f"{base}/usage") as r:
            page = await r.text()
            assert r.status == 200 and "unsafe-inline" not in r.headers["Content-Security-Policy"]
    assert "<script" not in page and 'style="' not in page
    assert re.search(r'<svg class="chart" viewBox="[^"]+" role="img" aria-label="Facts learned', page)
    today = utcnow().date().isoformat()
    learned = len(
        site.read(
            "SELECT id FROM fact_events WHERE scope = ? AND kind = 'added'", (f"guild:{site.guild_id}",)
        )
    )
    assert learned >= 5  # the seeded facts of test_web.py's site and of seed_community, less the forgotten
    assert f'<tr><th scope="row">{today}</th><td>{learned}</td><td>1</td></tr>' in page
    assert page.count('<th scope="row">') == 5 * 30  # five charts, each with a table of 30 days
    for label in ("Messages captured", "Model calls by purpose", "Model tokens", "Recall time p50 and p95"):
        assert re.search(rf'<svg class="chart" viewBox="[^"]+" role="img" aria-label="{label}', page), label
        assert f"<caption>{label}" in page, label
    tables = re.findall(r"<table>.*?</table>", page, re.S)
    assert len(tables) == 5
    messages, calls, tokens, latency = (
        re.search(rf'<tr><th scope="row">{today}</th>(.*?)</tr>', t).group(1)  # type: ignore[union-attr]
        for t in tables[1:]
    )
    assert messages == "<td>3</td>"
    assert (
        '<th scope="col">Extract</th><th scope="col">Consolidate</th><th scope="col">Embed</th>' in tables[2]
    )
    assert calls == "<td>1</td><td>0</td><td>0</td><td>2</td>"  # extract, consolidate, embed, chat
    assert tokens == "<td>120</td><td>0</td><td>0</td><td>60</td>"
    assert latency == "<td>5</td><td>100</td>"  # 18 recalls at most 5 ms, two at most 100 ms
    yesterday = (utcnow().date() - timedelta(days=1)).isoformat()
    assert f'<tr><th scope="row">{yesterday}</th><td>–</td><td>–</td></tr>' in tables[4]  # no recall
    assert f'<tr><th scope="row">{yesterday}</th><td>0</td></tr>' in tables[1]


async def count_a_days_use(service: MemoryService, scope: str) -> None:
    """Today's use of `scope` as the bot counts it, written in two batches: 3 messages, an extraction
    (100 + 20 tokens) and two chat calls (60 tokens), 20 recalls (18 fast, two slower: the 19th, p95, is slow)."""
    usage = Usage()
    usage.listeners.append(service.daily_use.model_use)
    with usage_scope(scope):
        usage.record(Purpose.EXTRACT, prompt_tokens=100, output_tokens=20)
        usage.record(Purpose.CHAT, prompt_tokens=50, output_tokens=5)
        usage.record(Purpose.CHAT, prompt_tokens=5)
    for _ in range(2):
        service.daily_use.message(scope)
    await service.write_use_per_day()
    service.daily_use.message(scope)
    for ms in [1.0] * 18 + [80.0] * 2:
        service.daily_use.recall(scope, ms)
    await service.write_use_per_day()


def test_a_chart_scales_its_bars_to_the_largest_value_and_escapes_its_labels() -> None:
    svg = bar_chart("a <b> chart", ("2026-11-01", "2026-11-02"), (Series("x & y", "learned", (0, 4)),))
    assert svg.startswith('<svg class="chart"') and 'aria-label="a &lt;b&gt; chart"' in svg
    assert "x &amp; y" in svg and "<b>" not in svg
    heights = [float(h) for h in re.findall(r'height="([\d.]+)"', svg)]
    assert heights == [0.0, 164.0]  # 0, and the whole plot (200 - 24 - 12)
    assert bar_chart("empty", (), ()).endswith("</svg>")


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_every_admin_page_has_a_skip_link_headings_labels_and_the_security_headers(
    site: Site, service: MemoryService
) -> None:
    await seed_community(service, site)
    async with browser() as http:
        await sign_in(http, site, site.cat)
        for url in pages_of(site):
            async with http.get(url) as r:
                page = await r.text()
                assert r.headers["X-Frame-Options"] == "DENY" and r.headers["Cache-Control"] == "no-store"
            assert '<a class="skip" href="#main">' in page and '<main id="main">' in page
            assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
            assert page.count("<h1>") == 1 and 'aria-current="page"' in page
            for field in re.findall(r"<(?:input|textarea|select)\b[^>]*>", page):
                if 'type="hidden"' in field:
                    continue
                named = re.search(r'id="([^"]+)"', field)
                assert "aria-label=" in field or (named and f'for="{named[1]}"' in page), field
            assert all("scope=" in th for th in re.findall(r"<th\b[^>]*>", page))
        async with http.get(
            f"{site.url}/static/style.css"
        ) as r:  # a phone's width: one column, tables scroll
            css = await r.text()
        assert "@media (max-width: 40rem)" in css and ".table-wrap { overflow-x: auto; }" in css
        assert ":focus { outline: 3px solid" in css
