"""The dashboard's pages for a member with 1,000 facts: how long a page takes from `python -m bot web`, run
in its own process as a user runs it, signed in through the Discord stand-in's OAuth2.

Data: one server, a member with `--facts` facts (default 1,000) said in #general and 1,000 facts of other
people beside them, embedded by the Gemini stand-in (seeding only; no page calls a model). Measured over
HTTP from this process, each request after the last one's body arrived:
- the first page of the member's facts (50, newest first), a middle one and the last one;
- a search (a POST with the CSRF token) whose word every fact holds, its first page, and one for a word
  no fact holds;
- the JSON export of all of them (not a page, for scale).

The target (issue 37): a page under 200 ms on the benchmark machine, at p95.

    python -m bench.web_page                       # SQLite and PostgreSQL (when a server package is installed)
    python -m bench.web_page --backend sqlite --requests 50
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from bench import pg
from bench.common import CACHE, ROOT, machine, percentiles_ms, printed_table, write_json
from bot.app import open_memory
from bot.config import load_settings
from bot.http_serving import listen
from bot.memory.models import NewFact, Origin
from bot.memory.service import MemoryService
from bot.web.pages import PAGE_SIZE
from standins.discord import DiscordStandIn
from standins.gemini import GeminiStandIn

TOKEN = "bench-bot-token"
TARGET_MS = 200.0
SEARCHES = 25  # each search 25 times and a warm-up: 52 posts, under the 60 a minute a session may make
SETTINGS_PREFIXES = ("DISCORD_", "GEMINI_", "GOOGLE_", "DATABASE_", "OPENAI_", "MODEL_", "EMBEDDING_", "WEB_")
PLACES = ("Porto", "Lisbon", "Aarhus", "Kyoto", "Quito", "Tromso", "Dakar", "Perth")
THINGS = ("the oboe", "chess", "bees", "sourdough", "climbing", "the cello", "Go", "kites")


def texts(name: str, count: int) -> list[str]:
    """`count` distinct facts about `name`, each holding the word "often" (what the search looks for)."""
    return [
        f"{name} often visits {PLACES[i % len(PLACES)]} for {THINGS[(i // len(PLACES)) % len(THINGS)]} "
        f"(note {i})"
        for i in range(count)
    ]


async def seed(service: MemoryService, scope: str, channel: int, people: dict[str, str], count: int) -> None:
    """`count` facts for each person, each from a message of theirs in #general."""
    said = iter(range(10**17, 10**18))
    batch: list[NewFact] = []
    for user_id, name in people.items():
        for text in texts(name, count):
            message = str(next(said))
            batch.append(
                NewFact(scope, user_id, name, text, [message], origins={message: Origin(str(channel))})
            )
    for start in range(0, len(batch), 500):
        await service.import_facts(batch[start : start + 500])


async def timed(requests: int, call: Callable[[], Awaitable[str]], check: str) -> dict[str, float]:
    """`requests` calls, one after another (the first, a warm-up, not counted); each page must hold
    `check`, so a page that went wrong is not timed as a fast one."""
    samples: list[float] = []
    for i in range(requests + 1):
        started = time.perf_counter()
        body = await call()
        elapsed = time.perf_counter() - started
        if check not in body:
            raise RuntimeError(f"a page did not hold {check!r}: {body[:300]!r}")
        if i:
            samples.append(elapsed)
    return percentiles_ms(samples)


async def measure(location: Path | str, backend: str, facts: int, requests: int, folder: Path) -> list[Any]:
    """The pages' timings on one database, served by `python -m bot web` in its own process: rows for the
    table."""
    async with GeminiStandIn() as gemini, DiscordStandIn(token=TOKEN) as discord:
        alpha = discord.add_guild("Alpha")
        ana = discord.add_user("ana", guilds=[alpha.id])
        others = [discord.add_user(f"member{i}", guilds=[alpha.id]) for i in range(10)]
        sock = listen("127.0.0.1", 0)
        port = sock.getsockname()[1]
        sock.close()
        url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)} | {
            "PYTHONPATH": str(ROOT),
            "GEMINI_API_KEY": "bench-key",
            "GEMINI_BASE_URL": gemini.base_url,
            "DISCORD_TOKEN": TOKEN,
            "DISCORD_API_BASE_URL": discord.api_base,
            "DISCORD_CLIENT_ID": str(discord.application_id),
            "DISCORD_CLIENT_SECRET": discord.client_secret,
            "WEB_REDIRECT_URL": f"{url}/auth/callback",
            "WEB_SESSION_SECRET": "b" * 40,
            **({"DATABASE_URL": location} if isinstance(location, str) else {"DATABASE_PATH": str(location)}),
        }
        service = await open_memory(load_settings(env, dotenv_path=None))
        try:
            scope = f"guild:{alpha.id}"
            general = alpha.channels["general"]
            await seed(service, scope, general, {str(ana["id"]): "ana"}, facts)
            await seed(service, scope, general, {str(o["id"]): o["username"] for o in others}, facts // 10)
        finally:
            await service.close(record_usage=False)
        web = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "web", "--port", str(port), cwd=folder, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        try:
            assert web.stdout is not None
            line = (await asyncio.wait_for(web.stdout.readline(), 60)).decode()
            if "serving the dashboard" not in line:
                raise RuntimeError(f"python -m bot web did not start: {line!r}")
            async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:  # 127.0.0.1
                return await pages(
                    http, discord, ana, f"{url}/memory/{alpha.id}", url, backend, facts, requests
                )
        finally:
            web.terminate()
            await web.wait()


async def pages(
    http: aiohttp.ClientSession,
    discord: DiscordStandIn,
    member: dict[str, Any],
    page_url: str,
    url: str,
    backend: str,
    facts: int,
    requests: int,
) -> list[Any]:
    """Signed in as `member`, each request timed `requests` times (a search `SEARCHES` times: the
    dashboard takes 60 form posts a minute from a session)."""
    discord.sign_in_as(member)
    async with http.get(url + "/auth/login") as r:
        if r.status != 200:
            raise RuntimeError(f"sign-in failed: {r.status}")
    async with http.get(page_url) as r:
        [csrf] = set(re.findall(r'name="csrf" value="([^"]+)"', await r.text()))
    last = -(-facts // PAGE_SIZE)
    searches = min(requests, SEARCHES)

    async def page(n: int) -> str:
        async with http.get(f"{page_url}?page={n}") as r:
            return await r.text()

    async def search(words: str) -> str:
        async with http.post(f"{page_url}/search", data={"q": words, "csrf": csrf}) as r:
            return await r.text()

    async def export() -> str:
        async with http.get(f"{page_url}/export.json") as r:
            return await r.text()

    own = f"{member['username']} often"
    return [
        [backend, "page 1 of the facts", *row(await timed(requests, lambda: page(1), own))],
        [
            backend,
            f"page {last // 2} (the middle)",
            *row(await timed(requests, lambda: page(last // 2), own)),
        ],
        [backend, f"page {last} (the last)", *row(await timed(requests, lambda: page(last), own))],
        [backend, 'search "often" (all match)', *row(await timed(searches, lambda: search("often"), own))],
        [
            backend,
            'search "zeppelin" (none)',
            *row(await timed(searches, lambda: search("zeppelin"), "</html>")),
        ],
        [
            backend,
            f"JSON export ({facts} facts)",
            *row(await timed(max(5, requests // 5), export, own), page=False),
        ],
    ]


def row(figures: dict[str, float], *, page: bool = True) -> list[Any]:
    """A table row's figures; the target is a page's (an export is a download, shown for scale)."""
    met = ("yes" if figures["p95"] < TARGET_MS else "NO") if page else "-"
    return [figures["p50"], figures["p95"], figures["max"], figures["samples"], met]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--backend", choices=("sqlite", "postgres", "both"), default="both" if pg.available() else "sqlite"
    )
    parser.add_argument(
        "--facts", type=int, default=1000, help="the member's facts (others get a tenth each)"
    )
    parser.add_argument("--requests", type=int, default=50, help="timed requests per page")
    args = parser.parse_args()
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    folder = Path(tempfile.mkdtemp(prefix="web_page_"))
    server: pg.PgServer | None = None
    rows: list[Any] = []
    try:
        for backend in backends:
            location: Path | str
            if backend == "postgres":
                server = pg.PgServer(CACHE / "web_page" / "pgdata")
                location = server.create("web_page", replace=True)
            else:
                location = folder / "memory.sqlite3"
            rows += asyncio.run(measure(location, backend, args.facts, args.requests, folder))
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(folder, ignore_errors=True)
    table = printed_table(
        f"A member's dashboard page with {args.facts} facts (ms, {args.requests} requests each, target p95 < {TARGET_MS:.0f})",
        ["backend", "request", "p50", "p95", "max", "samples", "under target"],
        rows,
    )
    partial = args.facts != 1000 or args.requests < 50
    path = write_json(
        "web_page",
        {"machine": machine(), "facts": args.facts, "requests": args.requests, "table": table},
        partial=partial,
    )
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
