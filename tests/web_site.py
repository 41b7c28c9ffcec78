"""The dashboard's test site, shared by the tests that drive it over HTTP (tests/integration/test_web.py,
test_web_admin.py) and those that drive it in a real browser (tests/e2e/test_e2e_web_browser.py): the
Discord stand-in with its servers and people, the dashboard served by uvicorn on the test's database, and
the facts, community facts and episodes seeded in it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg
import uvicorn

from bot.discord_rest import DiscordView
from bot.http_serving import listen
from bot.memory.models import COMMUNITY_ID, COMMUNITY_NAME, BufferedMessage, NewFact, Origin, iso, utcnow
from bot.memory.service import MemoryService
from bot.storage.locations import is_url
from bot.web.limits import Limits
from bot.web.pages import build_app
from bot.web.server import web_config
from bot.web.servers import ServerViews
from standins.discord import DiscordStandIn
from tests.conftest import make_settings, record_episode

SECRET = "s" * 40
TOKEN = "bot-token"


class Clock:
    """The rate limits' clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Site:
    """The dashboard at `url`, Discord's stand-in with ana and bob in Alpha, and the seeded facts' ids by
    a word of each (keeps, writes, plays, lives)."""

    url: str
    discord: DiscordStandIn
    database: Path | str
    guild_id: int
    facts: dict[str, int]
    clock: Clock
    staff: int  # #staff: only the staff role (dan's) and the bot can read it

    def person(self, username: str) -> dict[str, Any]:
        """The stand-in's user of that name."""
        return next(u for u in self.discord.users.values() if u["username"] == username)

    @property
    def ana(self) -> dict[str, Any]:
        return self.person("ana")

    @property
    def bob(self) -> dict[str, Any]:
        return self.person("bob")

    @property
    def cat(self) -> dict[str, Any]:
        """An admin of Alpha (Manage Server) who cannot read #staff."""
        return self.person("cat")

    @property
    def dan(self) -> dict[str, Any]:
        """An admin of Alpha with the staff role: reads #staff."""
        return self.person("dan")

    @property
    def general(self) -> int:
        return self.discord.guilds[self.guild_id].channels["general"]

    def rows(self, fact_id: int) -> list[tuple[str, str]]:
        """The fact's row in the facts table."""
        return self.read("SELECT user_id, text FROM facts WHERE id = ?", (fact_id,))

    def facts_of(self, scope: str, user: dict[str, Any]) -> list[str]:
        """The texts of every row of a person's facts in a scope, whatever their status."""
        rows = self.read("SELECT text FROM facts WHERE scope = ? AND user_id = ?", (scope, str(user["id"])))
        return sorted(text for (text,) in rows)

    def read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """Rows read from the database itself (the file, or PostgreSQL), as any other reader would."""
        if is_url(self.database):
            with psycopg.connect(str(self.database)) as conn:
                return [tuple(row) for row in conn.execute(sql.replace("?", "%s"), params).fetchall()]
        with sqlite3.connect(self.database) as conn:
            return conn.execute(sql, params).fetchall()


@contextlib.asynccontextmanager
async def serve_site(
    tmp_path: Path, database: Path | str, service: MemoryService, limits: Limits
) -> AsyncIterator[Site]:
    """The dashboard on uvicorn on 127.0.0.1 (a free port), signed in through the Discord stand-in: Alpha
    (#general, #staff) and Beta; ana (in both) and bob members, cat and dan admins of Alpha, dan with the
    staff role; ana's and bob's facts seeded (`seed`)."""
    async with DiscordStandIn(token=TOKEN) as discord:
        alpha, beta = discord.add_guild("Alpha"), discord.add_guild("Beta")
        ana = discord.add_user("ana", guilds=[alpha.id, beta.id])
        bob = discord.add_user("bob", guilds=[alpha.id])
        discord.add_user("cat", guilds=[alpha.id], admin_in=[alpha.id])
        dan = discord.add_user("dan", guilds=[alpha.id], admin_in=[alpha.id])
        staff_role = await discord.add_role(alpha, "staff")
        await discord.set_roles(alpha, dan, [alpha.admin_role_id, staff_role])
        staff = await discord.add_role_channel(alpha, "staff", staff_role)
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
            discord_token=TOKEN,
        )
        clock = Clock()
        config = replace(web_config(settings), clock=clock, limits=limits)
        views = ServerViews(await DiscordView.login(settings, service))
        server = uvicorn.Server(
            uvicorn.Config(build_app(service, config, views), lifespan="off", log_level="warning")
        )
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.01)
        try:
            yield Site(url, discord, database, alpha.id, facts, clock, staff)
        finally:
            server.should_exit = True
            await serving
            await views.close()
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


_ids = itertools.count(10**17 + 5000)
MEMBER_TEXTS = ("ana keeps bees", "bob plays the oboe", "ana takes insulin", "ana lives in Porto")
SENSITIVE_COMMUNITY = "The treasurer's card ends in 4242"  # marked sensitive: listed to no admin
STAFF_TEXTS = ("The launch date is the 9th", "The staff chose the launch budget")


async def seed_community(service: MemoryService, site: Site) -> dict[str, int]:
    """Community facts and episodes in #general and #staff, and a sensitive fact of ana's in #general; their
    ids by name (rule, launch, picnic, budget)."""
    scope = f"guild:{site.guild_id}"

    def fact(user: str, name: str, text: str, channel: int, **more: Any) -> NewFact:
        message = str(next(_ids))
        return NewFact(scope, user, name, text, [message], origins={message: Origin(str(channel))}, **more)

    ana = str(site.ana["id"])
    await service.import_facts(
        [
            fact(COMMUNITY_ID, COMMUNITY_NAME, "No spoilers before Friday", site.general),
            fact(COMMUNITY_ID, COMMUNITY_NAME, STAFF_TEXTS[0], site.staff),
            fact(COMMUNITY_ID, COMMUNITY_NAME, SENSITIVE_COMMUNITY, site.general, sensitive=True),
            fact(ana, "ana", "ana takes insulin", site.general, sensitive=True),
        ]
    )
    ids = {f.text.split()[1]: f.id for f in await service.export_facts(scope, COMMUNITY_ID)}
    for name, channel, summary in (
        ("picnic", site.general, "The channel planned a picnic by the river."),
        ("budget", site.staff, STAFF_TEXTS[1]),
    ):
        said = BufferedMessage(str(next(_ids)), scope, str(channel), ana, "ana", summary, iso(utcnow()))
        ids[name] = await record_episode(service, said)
    return {
        "rule": ids["spoilers"],
        "launch": ids["launch"],
        "picnic": ids["picnic"],
        "budget": ids["budget"],
    }


def pages_of(site: Site) -> list[str]:
    base = f"{site.url}/admin/{site.guild_id}"
    return [base, f"{base}/episodes", f"{base}/settings", f"{base}/audit", f"{base}/usage"]
