"""The admin's pages of a server: its community facts and episodes, its settings, its audit trail and its
use per day, for a member with Manage Server there now.

Who is an admin is read on every request from Discord's current permissions with the bot's token
(`servers.ServerViews`, the MCP server's REST view). The session's list of servers the member managed at
sign-in (itself checked that way) bounds which servers a request may make the bot read: a server gained
since needs a new sign-in; one lost is refused at once. Anyone else gets the same 404 as for a server that does not exist, on every page and POST.
What is shown follows `/memory-admin`'s rule: community facts and episodes made only from channels the
admin can read now, never a member's fact (sensitive or not); an id outside that answers exactly as an
unknown one. Every change goes through the engine's calls the `/memory-admin` commands make.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bot.discord_rest import DiscordView
from bot.memory.community import MAX_SUMMARY_CHARS
from bot.memory.daily_use import day_use
from bot.memory.model_ports import Purpose
from bot.memory.models import (
    COMMUNITY_ID,
    COMMUNITY_NAME,
    MAX_FACT_CHARS,
    Episode,
    Fact,
    guild_scope,
    iso,
    positive_number,
    utcnow,
)
from bot.memory.service import MemoryService
from bot.memory.switches import PERSONA_MAX_CHARS
from bot.web.charts import Series, bar_chart
from bot.web.forms import form_fields
from bot.web.servers import ServerViews
from bot.web.sessions import Session

if TYPE_CHECKING:
    from bot.web.pages import Pages

log = logging.getLogger(__name__)

PAGE_SIZE = 50
MAX_LISTED = 1_000  # community facts or episodes read for one listing, as /memory-admin reads them
MAX_PAGE = 100_000
MAX_QUERY_CHARS = 200
CHART_DAYS = 30
DONE = {
    "forgot-fact": "Forgot community fact #{n}.",
    "corrected-fact": "Corrected community fact #{n}.",
    "forgot-episode": "Forgot episode #{n}.",
    "corrected-episode": "Corrected episode #{n}.",
    "settings": "The server's settings are saved.",
}
AdminPage = Callable[[Request, Session, DiscordView], Awaitable[Response]]


class AdminPages:
    """The admin pages, on the member pages' helpers (`pages.Pages`: sessions, limits, templates)."""

    def __init__(
        self, pages: Pages, service: MemoryService, views: ServerViews, starting: frozenset[str]
    ) -> None:
        self.pages = pages
        self.service = service
        self.views = views
        self.starting = starting  # AUTO_REPLY_CHANNEL_IDS: the auto-reply channels no admin chose

    def admin(self, handler: AdminPage) -> Callable[[Request], Awaitable[Response]]:
        """A page of a server the signed-in member manages now; a POST counts against the rate limits and
        needs this session's CSRF token (checked after the admin check: a non-admin learns nothing)."""
        pages = self.pages

        async def endpoint(request: Request) -> Response:
            if request.method == "POST" and (
                limited := pages._limited(request, pages._session(request), form=True)
            ):
                return limited
            session = pages._session(request)
            if session is None or not session.signed_in:
                return RedirectResponse("/", status_code=303)
            guild_id = request.path_params["guild"]
            listed = any(p.slug == guild_id for p in session.admin_of)  # no Discord read for other ids
            view = await self.views.managed_by(guild_id, session.member) if listed else None
            if view is None or view.guild is None:
                lines = ["There is no such page here."]
                return pages._message(request, session, "Not found", lines, status=404)
            if request.method == "POST" and not session.csrf_matches(
                _one(await form_fields(request), "csrf") or None
            ):
                log.warning("a form without this session's CSRF token was refused: %s", request.url.path)
                return pages._stale_form(request, session)
            return await handler(request, session, view)

        return endpoint

    # ---- community facts and episodes ------------------------------------------------------------

    async def facts(self, request: Request, session: Session, view: DiscordView) -> Response:
        """The community facts the admin can read, 50 a page, newest first; a POST searches them."""
        found = await self._facts(session, view)
        listed = [(f.id, f.text, fact_entry(f, view)) for f in found]
        return await self._listing(request, session, view, "admin_facts.html", listed)

    async def episodes(self, request: Request, session: Session, view: DiscordView) -> Response:
        """The episodes the admin can read, 50 a page, newest first; a POST searches them."""
        found = await self._episodes(session, view)
        listed = [(e.id, e.summary, episode_entry(e, view)) for e in found]
        return await self._listing(request, session, view, "admin_episodes.html", listed)

    async def _listing(
        self,
        request: Request,
        session: Session,
        view: DiscordView,
        template: str,
        readable: list[tuple[int, str, dict[str, Any]]],
    ) -> Response:
        """A page of what the admin can read (id, text, entry), those matching a POSTed search only."""
        query, page = await _listing_form(request)
        shown = [entry for item_id, text, entry in readable if _matches(query, item_id, text)]
        context = self._paged(shown, page)
        context |= {"query": query, "done": _done(request), "total": len(readable)}
        return self._page(request, session, view, template, context)

    async def correct_fact(self, request: Request, session: Session, view: DiscordView) -> Response:
        found = await self._fact(request, session, view)
        if found is None:
            return self._no_item(request, session, view, "community fact")
        text = found.text
        error = None
        if request.method == "POST":
            text = _one(await form_fields(request), "text")
            try:
                fixed = await self.service.correct_fact(
                    found.scope, COMMUNITY_ID, COMMUNITY_NAME, found.id, text
                )
            except ValueError as exc:
                error = str(exc)
            else:
                if fixed is None:
                    return self._no_item(request, session, view, "community fact")
                log.info("admin %s corrected community fact %d in %s", session.member, found.id, found.scope)
                return _done_redirect(view, "", "corrected-fact", found.id)
        context = {"item": fact_entry(found, view), "text": text, "error": error, "most": MAX_FACT_CHARS}
        context |= {"kind": "community fact", "action": f"facts/{found.id}/correct", "back": ""}
        return self._page(request, session, view, "admin_correct.html", context, status=400 if error else 200)

    async def forget_fact(self, request: Request, session: Session, view: DiscordView) -> Response:
        found = await self._fact(request, session, view)
        if found is None or not await self.service.forget(
            found.scope, COMMUNITY_ID, [found.id], actor=session.member
        ):
            return self._no_item(request, session, view, "community fact")
        log.info("admin %s forgot community fact %d in %s", session.member, found.id, found.scope)
        return _done_redirect(view, "", "forgot-fact", found.id)

    async def correct_episode(self, request: Request, session: Session, view: DiscordView) -> Response:
        found = await self._episode(request, session, view)
        if found is None:
            return self._no_item(request, session, view, "episode")
        text, error = found.summary, None
        if request.method == "POST":
            text = _one(await form_fields(request), "text")
            fixed = None
            if len(text) > MAX_SUMMARY_CHARS:
                error = f"a summary has at most {MAX_SUMMARY_CHARS} characters; this one has {len(text)}"
            else:
                try:
                    fixed = await self.service.correct_episode(
                        found.scope, found.id, text, actor=session.member
                    )
                except ValueError as exc:
                    error = str(exc)
            if error is None:
                if fixed is None:
                    return self._no_item(request, session, view, "episode")
                log.info("admin %s corrected episode %d in %s", session.member, found.id, found.scope)
                return _done_redirect(view, "/episodes", "corrected-episode", found.id)
        context = {
            "item": episode_entry(found, view),
            "text": text,
            "error": error,
            "most": MAX_SUMMARY_CHARS,
        }
        context |= {"kind": "episode", "action": f"episodes/{found.id}/correct", "back": "/episodes"}
        return self._page(request, session, view, "admin_correct.html", context, status=400 if error else 200)

    async def forget_episode(self, request: Request, session: Session, view: DiscordView) -> Response:
        found = await self._episode(request, session, view)
        if found is None or not await self.service.forget_episode(
            found.scope, found.id, actor=session.member
        ):
            return self._no_item(request, session, view, "episode")
        log.info("admin %s forgot episode %d in %s", session.member, found.id, found.scope)
        return _done_redirect(view, "/episodes", "forgot-episode", found.id)

    async def _facts(self, session: Session, view: DiscordView) -> list[Fact]:
        """The server's active community facts made only where the admin can read now; none sensitive."""
        listed = await self.service.list_facts(_scope(view), COMMUNITY_ID, limit=MAX_LISTED)
        return [f for f in listed if not f.sensitive and view.reads(session.member, f)]

    async def _episodes(self, session: Session, view: DiscordView) -> list[Episode]:
        listed = await self.service.list_episodes(_scope(view), limit=MAX_LISTED)
        return [e for e in listed if view.reads(session.member, e)]

    async def _fact(self, request: Request, session: Session, view: DiscordView) -> Fact | None:
        """The community fact the URL names, when the admin may see it as listed; else None."""
        wanted = positive_number(request.path_params["item"])
        return next((f for f in await self._facts(session, view) if f.id == wanted), None)

    async def _episode(self, request: Request, session: Session, view: DiscordView) -> Episode | None:
        wanted = positive_number(request.path_params["item"])
        if wanted is None:
            return None
        found = await self.service.episode(_scope(view), wanted)
        return found if found is not None and view.reads(session.member, found) else None

    # ---- settings --------------------------------------------------------------------------------

    async def settings(self, request: Request, session: Session, view: DiscordView) -> Response:
        """Memory on or off, the log channel, ignored and auto-reply channels, the personas: shown, and
        changed with the calls /memory-admin makes (only what the form changed)."""
        await self.pages._fresh_settings(force=request.method == "POST")
        guild_id = str(view.guild_id)
        channels = _text_channels(view, session.member)
        current = self.service.guild(guild_id)
        if request.method == "POST":
            form = await form_fields(request)
            error = await self._apply(guild_id, current, channels, form, session)
            if error is None:
                return RedirectResponse(f"/admin/{guild_id}/settings?done=settings", status_code=303)
            await self.pages._fresh_settings(force=True)
            current = self.service.guild(guild_id)
        else:
            error = None
        rows = [
            {
                "id": cid,
                "name": name,
                "ignored": cid in current.ignored_channel_ids,
                "autoreply": current.replies_in([cid], self.starting),
                "persona": current.channel_personas.get(cid, ""),
            }
            for cid, name in channels
        ]
        context = {
            "settings": current,
            "channels": rows,
            "log_channel": current.log_channel_id or "",
            "log_channel_hidden": bool(current.log_channel_id)
            and current.log_channel_id not in {cid for cid, _ in channels},
            "most": PERSONA_MAX_CHARS,
            "done": _done(request),
            "error": error,
        }
        return self._page(
            request, session, view, "admin_settings.html", context, status=400 if error else 200
        )

    async def _apply(
        self,
        guild_id: str,
        current: Any,
        channels: list[tuple[str, str]],
        form: dict[str, list[str]],
        session: Session,
    ) -> str | None:
        """Each change the form makes, through the engine; a line saying what is wrong, or None."""
        known = {cid for cid, _ in channels}
        log_channel = _one(form, "log_channel")
        if log_channel and log_channel not in known and log_channel != current.log_channel_id:
            return "That log channel is not a text channel of this server that you can read."
        personas = {cid: _one(form, f"persona_{cid}").strip() for cid in known}
        server_persona = _one(form, "persona").strip()
        if any(len(p) > PERSONA_MAX_CHARS for p in (server_persona, *personas.values())):
            return f"A persona has at most {PERSONA_MAX_CHARS} characters."
        enabled = "memory_enabled" in form
        if enabled != current.memory_enabled:
            await self.service.update_guild(guild_id, memory_enabled=enabled)
        if (log_channel or None) != current.log_channel_id:
            await self.service.update_guild(guild_id, log_channel_id=log_channel or None)
        ignored = set(form.get("ignored", [])) & known
        for cid in sorted(known):
            if (cid in ignored) != (cid in current.ignored_channel_ids):
                await self.service.set_channel_ignored(guild_id, cid, cid in ignored)
        replying = set(form.get("autoreply", [])) & known
        for cid in sorted(known):
            if (cid in replying) != current.replies_in([cid], self.starting):
                await self.service.set_auto_reply(guild_id, cid, cid in replying)
        if (server_persona or None) != current.persona:
            await self.service.set_persona(guild_id, None, server_persona or None)
        for cid in sorted(known):
            if (personas[cid] or None) != current.channel_personas.get(cid):
                await self.service.set_persona(guild_id, cid, personas[cid] or None)
        log.info("admin %s changed the settings of server %s", session.member, guild_id)
        return None

    # ---- the audit trail and the use per day -----------------------------------------------------

    async def audit(self, request: Request, session: Session, view: DiscordView) -> Response:
        """What the bot recorded of the actions in the server: ids, kinds, counts, actors and times."""
        page = min(positive_number(request.query_params.get("page", "1")) or 1, MAX_PAGE)
        found = await self.service.audit(_scope(view), limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE)
        rows = [
            {
                "id": e.id,
                "at": e.at[:19].replace("T", " ") + " UTC",
                "kind": e.kind.replace("_", " "),
                "fact": e.fact_id,
                "whose": "the community" if e.user_id == COMMUNITY_ID else _person(view, e.user_id),
                "actor": _person(view, e.actor),
                "counts": ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(e.counts.items())),
            }
            for e in found[:PAGE_SIZE]
        ]
        context = {
            "events": rows,
            "page": page,
            "previous": page - 1 if page > 1 else None,
            "next": page + 1 if len(found) > PAGE_SIZE else None,
        }
        return self._page(request, session, view, "admin_audit.html", context)

    async def usage(self, request: Request, session: Session, view: DiscordView) -> Response:
        """The server's use per day over the last 30 days: facts learned and forgotten (from the facts'
        audit events), messages captured, model calls and tokens by purpose, recall p50 / p95 (from the
        use per day the bot counts, `MemoryService.use_per_day`); each a chart with a table beside it."""
        today = utcnow().date()
        days = tuple((today - timedelta(days=n)).isoformat() for n in range(CHART_DAYS - 1, -1, -1))
        scope = _scope(view)
        counted = await self.service.facts_per_day(scope, iso(utcnow() - timedelta(days=CHART_DAYS)))
        used = await self.service.use_per_day(scope, days[0])
        use = [used.get(d) or day_use(d, {}) for d in days]
        purposes = [p.value for p in Purpose]
        latency = [(u.p50_ms, u.p95_ms) for u in use]
        charts = [
            _chart(
                "facts",
                "Facts learned and forgotten",
                days,
                [
                    ("learned", "learned", [counted.get(d, {}).get("learned", 0) for d in days]),
                    ("forgotten", "forgotten", [counted.get(d, {}).get("forgotten", 0) for d in days]),
                ],
            ),
            _chart(
                "messages", "Messages captured", days, [("captured", "messages", [u.messages for u in use])]
            ),
            _chart(
                "calls", "Model calls by purpose", days, [(p, p, [u.calls[p] for u in use]) for p in purposes]
            ),
            _chart(
                "tokens",
                "Model tokens (in and out) by purpose",
                days,
                [(p, p, [u.tokens[p] for u in use]) for p in purposes],
            ),
            _chart(
                "latency",
                "Recall time p50 and p95 (ms)",
                days,
                [("p50 (ms)", "p50", [a for a, _ in latency]), ("p95 (ms)", "p95", [b for _, b in latency])],
            ),
        ]
        return self._page(request, session, view, "admin_usage.html", {"charts": charts, "days": CHART_DAYS})

    # ---- answers ---------------------------------------------------------------------------------

    def _paged(self, entries: list[dict[str, Any]], page: int) -> dict[str, Any]:
        last = max((len(entries) - 1) // PAGE_SIZE + 1, 1)
        page = min(page, last)
        start = (page - 1) * PAGE_SIZE
        return {
            "items": entries[start : start + PAGE_SIZE],
            "page": page,
            "previous": page - 1 if page > 1 else None,
            "next": page + 1 if page < last else None,
        }

    def _no_item(self, request: Request, session: Session, view: DiscordView, kind: str) -> Response:
        """The one answer for an id that is unknown, gone, another server's, or made where the admin cannot
        read: it does not repeat the id."""
        lines = [f"There is no such {kind} here that you can read."]
        return self.pages._message(request, session, "Not found", lines, status=404)

    def _page(
        self,
        request: Request,
        session: Session,
        view: DiscordView,
        name: str,
        context: dict[str, Any],
        *,
        status: int = 200,
    ) -> Response:
        assert view.guild is not None
        server = {"id": str(view.guild_id), "name": view.guild.name}
        return self.pages._page(request, session, name, {"server": server, **context}, status=status)


def fact_entry(fact: Fact, view: DiscordView) -> dict[str, Any]:
    """A community fact as the page lists it: id, text (escaped by the template), when, where."""
    channels = sorted({s.origin.channel_id for s in fact.sources if s.origin is not None and not s.confirms})
    return {
        "id": fact.id,
        "text": fact.text,
        "when": fact.said[:16].replace("T", " ") + " UTC",
        "where": ", ".join(view.channel_name(c) for c in channels) or "a place not recorded",
        "speaks_for_server": fact.speaks_for_server,
        "points": None,
    }


def episode_entry(episode: Episode, view: DiscordView) -> dict[str, Any]:
    return {
        "id": episode.id,
        "text": episode.summary,
        "when": episode.started_at[:16].replace("T", " ") + " – " + episode.ended_at[:16].replace("T", " "),
        "where": view.channel_name(episode.origin.channel_id),
        "points": len(episode.points),
        "speaks_for_server": False,
    }


def _chart(
    key: str, title: str, days: tuple[str, ...], columns: list[tuple[str, str, list[Any]]]
) -> dict[str, Any]:
    """A chart of the use page and its table: `columns` are (name, CSS class, one value a day); a value
    of None (no recall that day) is drawn as 0 and written as a dash."""
    series = tuple(Series(name, css, tuple(round(v or 0) for v in values)) for name, css, values in columns)
    return {
        "id": f"{key}-chart",
        "title": title,
        "svg": bar_chart(f"{title} per day, the last {CHART_DAYS} days", days, series),
        "series": [(name, css) for name, css, _ in columns],
        "rows": [
            (day, ["–" if c[2][n] is None else str(round(c[2][n])) for c in columns])
            for n, day in enumerate(days)
        ],
    }


def _scope(view: DiscordView) -> str:
    return guild_scope(view.guild_id)


def _text_channels(view: DiscordView, user_id: str) -> list[tuple[str, str]]:
    """The server's text channels the admin can read now (id, name), in Discord's order: as a command's
    channel option offers them. The others' settings are left as they are."""
    guild = view.guild
    member = guild.get_member(int(user_id)) if guild is not None else None
    if guild is None or member is None:
        return []
    return [(str(c.id), c.name) for c in guild.text_channels if c.permissions_for(member).view_channel]


def _person(view: DiscordView, user_id: str) -> str:
    """A member's name and id as the audit trail shows an actor; an id alone for others (system, import)."""
    member = view.guild.get_member(int(user_id)) if view.guild is not None and user_id.isdigit() else None
    return f"{member.display_name} ({user_id})" if member is not None else user_id


def _matches(query: str, item_id: int, text: str) -> bool:
    return not query or query.casefold() in text.casefold() or query == str(item_id)


def _one(form: dict[str, list[str]], name: str) -> str:
    values = form.get(name, [])
    return values[0] if values else ""


def _done(request: Request) -> str | None:
    done = DONE.get(request.query_params.get("done", ""))
    number = request.query_params.get("n", "")
    if done is None or ("{n}" in done and not number.isdigit()):
        return None
    return done.format(n=int(number)) if "{n}" in done else done


def _done_redirect(view: DiscordView, path: str, done: str, number: int) -> Response:
    return RedirectResponse(f"/admin/{view.guild_id}{path}?done={done}&n={number}", status_code=303)


async def _listing_form(request: Request) -> tuple[str, int]:
    """A listing's search (a POST: its words stay out of URLs; a query string is never read as one) and
    its page number."""
    if request.method == "POST":
        form = await form_fields(request)
        query = _one(form, "q").strip()[:MAX_QUERY_CHARS]
        number = _one(form, "page") or "1"
    else:
        query, number = "", request.query_params.get("page", "1")
    return query, min(positive_number(number) or 1, MAX_PAGE)
