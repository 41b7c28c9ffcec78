"""The dashboard's pages: sign in with Discord, then a member's own facts per place they share with the bot.

A front-end as thin as the cogs: every page calls the engine's use cases (`MemoryService`: count,
list, search, own_fact, correct_fact, forget, export, the opt-out and the person's settings), never the
database. What a member sees is what `/facts` shows them: their own facts in one scope, nobody else's.
An id that is not theirs there answers exactly as an id that does not exist (same status, same page).
Every POST carries the session's CSRF token and counts against the rate limits (`limits.py`), as do the
sign-in's steps; a search is a POST, so what a member types never reaches a URL. Every response carries
the security headers (`Guard`), and the server's log names methods, paths (ids at most) and statuses,
never a query string or a fact's text.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.memory.consult import MCP_ORIGIN
from bot.memory.models import (
    MAX_FACT_CHARS,
    Fact,
    PersonSettings,
    guild_id_of,
    is_discord_id,
    positive_number,
)
from bot.memory.service import MemoryService
from bot.web.admin_pages import AdminPages
from bot.web.discord_sign_in import DiscordSignIn, Member, SignInFailed
from bot.web.exports import csv_export, file_name, json_export
from bot.web.forms import form_of
from bot.web.limits import Limit, Limits, RateLimiter
from bot.web.servers import ServerViews
from bot.web.sessions import COOKIE, Place, Session, SessionSigner, signed_in, signing_in

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
PAGE_SIZE = 50
MAX_PAGE = 100_000  # past it, the last page: an offset the database takes whatever is typed in the URL
MAX_QUERY_CHARS = 200
MAX_GUILDS_CHECKED = 200  # of the member's servers, the most whose memory is looked up at sign-in
MAX_PLACES = 50  # the places a session lists, as many as its cookie holds (SessionSigner.fitting)
MAX_ADMIN_PLACES = 10  # the servers a session lists as the member's to manage
PLACE_NAME_CHARS = 32  # a server's name as the session keeps it: about 40 places fit, 20 in CJK
DM = Place("dm", "Direct messages with the bot")
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),  # a member's facts stay out of shared caches and the back-forward cache
]
SETTINGS_FRESH_SECONDS = 1.0  # how old the opt-outs and settings read from the database may be
MemberPage = Callable[[Request, Session, Place], Awaitable[Response]]  # a page of a member's place
DONE = {
    "forgot": "Forgot fact #{n} for good.",
    "corrected": "Corrected fact #{n}.",
    "forgot-all": "Forgot everything the bot remembered about you here, for good: {n} fact{s}, with "
    "any earlier versions.",
    "settings": "Your settings here are saved.",
}


@dataclass(frozen=True)
class WebConfig:
    """What the pages need besides the engine: the sign-in, the session signer, whether the site is
    served over https (Secure cookies), the callback's path, and the failures to answer with a 503."""

    sign_in: DiscordSignIn
    signer: SessionSigner
    secure: bool
    callback_path: str = "/auth/callback"
    failures: tuple[type[Exception], ...] = ()
    failure_line: Callable[[BaseException], str] = str
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] = time.monotonic  # the rate limits' and the settings' clock
    auto_reply_channel_ids: frozenset[str] = frozenset()  # AUTO_REPLY_CHANNEL_IDS, the admin pages' default


def build_app(service: MemoryService, config: WebConfig, views: ServerViews | None = None) -> ASGIApp:
    """The ASGI app: the pages, the shipped static files, and the security headers on every response.
    `views` reads the servers' permissions with the bot's token (none: nobody is an admin here)."""
    pages = Pages(service, config, views or ServerViews(None))
    admin = AdminPages(pages, service, pages.views, config.auto_reply_channel_ids)
    both = ["GET", "POST"]
    routes = [
        Route("/", pages.home),
        Route("/auth/login", pages.login),
        Route(config.callback_path, pages.callback),
        Route("/auth/logout", pages.logout, methods=["POST"]),
        Route("/memory/{place}", pages.member(pages.facts)),
        Route("/memory/{place}/search", pages.member(pages.facts), methods=["POST"]),
        Route("/memory/{place}/export.json", pages.member(pages.export)),
        Route("/memory/{place}/export.csv", pages.member(pages.export_csv)),
        Route("/memory/{place}/forget-all", pages.member(pages.forget_all), methods=["GET", "POST"]),
        Route("/memory/{place}/settings", pages.member(pages.settings), methods=["GET", "POST"]),
        Route(
            "/memory/{place}/facts/{fact_id}/correct", pages.member(pages.correct), methods=["GET", "POST"]
        ),
        Route("/memory/{place}/facts/{fact_id}/forget", pages.member(pages.forget), methods=["POST"]),
        Route("/admin/{guild}", admin.admin(admin.facts)),
        Route("/admin/{guild}/search", admin.admin(admin.facts), methods=["POST"]),
        Route("/admin/{guild}/facts/{item}/correct", admin.admin(admin.correct_fact), methods=both),
        Route("/admin/{guild}/facts/{item}/forget", admin.admin(admin.forget_fact), methods=["POST"]),
        Route("/admin/{guild}/episodes", admin.admin(admin.episodes)),
        Route("/admin/{guild}/episodes/search", admin.admin(admin.episodes), methods=["POST"]),
        Route("/admin/{guild}/episodes/{item}/correct", admin.admin(admin.correct_episode), methods=both),
        Route("/admin/{guild}/episodes/{item}/forget", admin.admin(admin.forget_episode), methods=["POST"]),
        Route("/admin/{guild}/settings", admin.admin(admin.settings), methods=both),
        Route("/admin/{guild}/audit", admin.admin(admin.audit)),
        Route("/admin/{guild}/usage", admin.admin(admin.usage)),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    handlers: Mapping[Any, Any] = {failure: pages.unavailable for failure in config.failures}
    return Guard(Starlette(routes=routes, exception_handlers=handlers))


class Guard:
    """Adds the security headers to every response and logs each request without its query string."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
                log.info(
                    "%s %s %d (%.0f ms)",
                    scope["method"],
                    scope["path"],
                    message["status"],
                    (time.monotonic() - started) * 1000,
                )
            await send(message)

        await self.app(scope, receive, guarded)


class Pages:
    def __init__(self, service: MemoryService, config: WebConfig, views: ServerViews) -> None:
        self.service = service
        self.config = config
        self.views = views
        self.limiter = RateLimiter(config.clock)
        self._settings_read = -SETTINGS_FRESH_SECONDS
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        self.templates = Jinja2Templates(env=env)

    # ---- signing in and out ----------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        session = self._session(request)
        if session is None or not session.signed_in:
            return self._page(request, None, "signin.html", {})
        context = {"places": session.places, "managed": session.admin_of}
        return self._page(request, session, "home.html", context)

    async def login(self, request: Request) -> Response:
        """A fresh pre-login session holding the `state`, and the way to Discord."""
        if (limited := self._limited(request, None)) is not None:
            return limited
        session = signing_in()
        assert session.state is not None
        response = RedirectResponse(self.config.sign_in.authorize_url(session.state), status_code=302)
        self._keep(response, session)
        return response

    async def callback(self, request: Request) -> Response:
        """Discord sends the browser back: the `state` must be the one this browser was given."""
        if (limited := self._limited(request, None)) is not None:
            return limited
        session = self._session(request)
        if session is None or not session.state_matches(request.query_params.get("state")):
            log.warning("a sign-in came back without the state it was sent with: refused")
            line = "The sign-in could not be checked: it expired, or it did not start from this page."
            return self._refused_sign_in(request, line)
        code = request.query_params.get("code")
        if not code or "error" in request.query_params:
            return self._refused_sign_in(request, "Discord did not sign you in.")
        try:
            member = await self.config.sign_in.member(code)
        except SignInFailed as exc:
            return self._refused_sign_in(request, f"{exc}.", status=502)
        places = await self._places(member)
        managed = await self._managed(member)
        session = self.config.signer.fitting(signed_in(member.user_id, member.name, places, admin_of=managed))
        if len(session.places) < len(places):
            log.warning("user %s has memory in more servers than a session lists", member.user_id)
        log.info("user %s signed in (%d places)", member.user_id, len(session.places))
        response = RedirectResponse("/", status_code=303)
        self._keep(response, session)
        return response

    async def logout(self, request: Request) -> Response:
        session = self._session(request)
        if (limited := self._limited(request, session, form=True)) is not None:
            return limited
        if (
            session is not None
            and session.signed_in
            and not session.csrf_matches((await form_of(request)).get("csrf"))
        ):
            return self._stale_form(request, session)
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE, path="/", secure=self.config.secure, httponly=True, samesite="lax")
        return response

    async def _managed(self, member: Member) -> tuple[Place, ...]:
        """The servers to list as the member's to manage: those Discord's list hints at (owner, Manage
        Server, Administrator) where the bot's own reading of the server says Manage Server now. Every
        admin page asks again; this is only the home page's list."""
        managed: list[Place] = []
        for guild_id, name in member.guilds[:MAX_GUILDS_CHECKED]:
            if len(managed) >= MAX_ADMIN_PLACES:
                break
            if guild_id in member.may_manage and await self.views.managed_by(guild_id, member.user_id):
                shown = name if len(name) <= PLACE_NAME_CHARS else name[: PLACE_NAME_CHARS - 1] + "…"
                managed.append(Place(f"guild:{guild_id}", shown))
        return tuple(managed)

    async def _places(self, member: Member) -> tuple[Place, ...]:
        """The member's servers where the bot holds facts about them, and their DMs with it."""
        places: list[Place] = []
        for guild_id, name in member.guilds[:MAX_GUILDS_CHECKED]:
            scope = f"guild:{guild_id}"
            if len(places) < MAX_PLACES - 1 and await self.service.count_facts(scope, member.user_id):
                shown = name if len(name) <= PLACE_NAME_CHARS else name[: PLACE_NAME_CHARS - 1] + "…"
                places.append(Place(scope, shown))
        return (*places, DM)

    # ---- a member's facts ------------------------------------------------------------------------

    async def facts(self, request: Request, session: Session, place: Place) -> Response:
        """The member's facts here, 50 a page, newest first; a POST searches them (its words stay out of
        URLs, and a query string is never read as a search)."""
        form = await form_of(request) if request.method == "POST" else dict(request.query_params)
        query = form.get("q", "").strip()[:MAX_QUERY_CHARS] if request.method == "POST" else ""
        page = min(positive_number(form.get("page", "1")) or 1, MAX_PAGE)
        offset = (page - 1) * PAGE_SIZE
        if query:
            matched = await self.service.search_own_facts(
                place.scope, session.member, query, limit=offset + PAGE_SIZE + 1
            )
            listed, more, total = (
                matched[offset : offset + PAGE_SIZE],
                len(matched) > offset + PAGE_SIZE,
                None,
            )
        else:
            total = await self.service.count_facts(place.scope, session.member)
            listed = await self.service.list_facts(
                place.scope, session.member, limit=PAGE_SIZE, offset=offset
            )
            more = offset + PAGE_SIZE < total
        await self._fresh_settings()
        context = {
            "place": place,
            "facts": [entry(f) for f in listed],
            "query": query,
            "page": page,
            "total": total,
            "previous": page - 1 if page > 1 else None,
            "next": page + 1 if more else None,
            "done": self._done(request),
            "opted_out": self.service.is_opted_out(place.scope, session.member),
        }
        return self._page(request, session, "facts.html", context)

    async def correct(self, request: Request, session: Session, place: Place) -> Response:
        fact = await self._own_fact(request, session, place)
        if isinstance(fact, Response):
            return fact
        if request.method != "POST":
            return self._correct_form(request, session, place, fact, fact.text, None)
        text = (await form_of(request)).get("text", "")
        try:
            fixed = await self.service.correct_fact(place.scope, session.member, session.name, fact.id, text)
        except ValueError as exc:  # empty, or too long: said, and the text kept in the form
            return self._correct_form(request, session, place, fact, text, str(exc), status=400)
        if fixed is None:  # forgotten or changed meanwhile
            return self._no_fact(request, session, place)
        return RedirectResponse(_done_link(place, "corrected", fact.id), status_code=303)

    async def forget(self, request: Request, session: Session, place: Place) -> Response:
        fact_id = positive_number(request.path_params["fact_id"])
        if fact_id is None or not await self.service.forget(
            place.scope, session.member, [fact_id], actor=session.member
        ):
            return self._no_fact(request, session, place)
        log.info("user %s forgot fact %d in %s", session.member, fact_id, place.scope)
        return RedirectResponse(_done_link(place, "forgot", fact_id), status_code=303)

    async def export(self, request: Request, session: Session, place: Place) -> Response:
        """Everything held about the member here, as `/memory export` gives it: a JSON file."""
        facts = await self.service.export_facts(place.scope, session.member)
        document = json_export(place.scope, session.member, session.name, facts)
        return _download(document, "application/json", file_name(place.scope, session.member, "json"))

    async def export_csv(self, request: Request, session: Session, place: Place) -> Response:
        """The same facts as the JSON export, as a spreadsheet reads them (`exports.csv_export`)."""
        facts = await self.service.export_facts(place.scope, session.member)
        name = file_name(place.scope, session.member, "csv")
        return _download(csv_export(facts), "text/csv; charset=utf-8", name)

    async def forget_all(self, request: Request, session: Session, place: Place) -> Response:
        """A question first (how many facts, for good); the POST forgets everything of the member here as
        `/forget all` does: every fact, its earlier versions, and what is buffered of them unread."""
        count = await self.service.count_facts(place.scope, session.member)
        if request.method != "POST":
            return self._page(request, session, "forget_all.html", {"place": place, "count": count})
        await self.service.forget(place.scope, session.member, None, actor=session.member)
        log.info("user %s forgot everything in %s", session.member, place.scope)
        return RedirectResponse(_done_link(place, "forgot-all", count), status_code=303)

    async def settings(self, request: Request, session: Session, place: Place) -> Response:
        """The member's own settings here, as `/memory settings` sets them: whether what the bot knows
        serves replies, whether they are told what it learns, and whether it remembers them (opt-out)."""
        await self._fresh_settings(force=request.method == "POST")
        scope, member = place.scope, session.member
        if request.method == "POST":
            form = await form_of(request)
            chosen = PersonSettings(in_replies="in_replies" in form, notify_learned="notify_learned" in form)
            if chosen != self.service.person(scope, member):
                await self.service.set_person(scope, member, chosen)
            remember = "remember" in form
            if remember == self.service.is_opted_out(scope, member):
                await self.service.set_opt_out(scope, member, not remember)
                log.info("user %s opted %s in %s", member, "in" if remember else "out", scope)
            return RedirectResponse(f"/memory/{place.slug}/settings?done=settings", status_code=303)
        guild_id = guild_id_of(scope)
        context = {
            "place": place,
            "person": self.service.person(scope, member),
            "opted_out": self.service.is_opted_out(scope, member),
            "memory_off": guild_id is not None and not self.service.guild(str(guild_id)).memory_enabled,
            "done": self._done(request),
        }
        return self._page(request, session, "settings.html", context)

    async def unavailable(self, request: Request, exc: Exception) -> Response:
        """The database or the model failed: said in a line, the details in the server's log."""
        log.error("a page failed: %s", self.config.failure_line(exc))
        lines = ["Memory cannot be reached just now. Try again in a moment."]
        return self._message(request, self._session(request), "Unavailable", lines, status=503)

    # ---- who may open what ---------------------------------------------------------------------

    def _session(self, request: Request) -> Session | None:
        return self.config.signer.loads(request.cookies.get(COOKIE))

    def _member_place(self, request: Request) -> tuple[Session, Place] | Response:
        """The signed-in member and the place the URL names; signed out (or expired): the sign-in page;
        a place not theirs: not found."""
        session = self._session(request)
        if session is None or not session.signed_in:
            return RedirectResponse("/", status_code=303)
        place = session.place(request.path_params["place"])
        if place is None:
            return self._message(request, session, "Not found", ["There is no such page here."], status=404)
        return session, place

    def member(self, handler: MemberPage) -> Callable[[Request], Awaitable[Response]]:
        """A page of a signed-in member's place; a POST counts against the rate limits, and its CSRF token
        must be this session's, else nothing is done."""

        async def endpoint(request: Request) -> Response:
            if request.method == "POST" and (
                limited := self._limited(request, self._session(request), form=True)
            ):
                return limited
            found = self._member_place(request)
            if isinstance(found, Response):
                return found
            session, place = found
            if request.method == "POST" and not session.csrf_matches((await form_of(request)).get("csrf")):
                log.warning("a form without this session's CSRF token was refused: %s", request.url.path)
                return self._stale_form(request, session)
            return await handler(request, session, place)

        return endpoint

    async def _own_fact(self, request: Request, session: Session, place: Place) -> Fact | Response:
        """The member's own active fact the URL names; any other id: not found."""
        fact_id = positive_number(request.path_params["fact_id"])
        fact = None if fact_id is None else await self.service.own_fact(place.scope, session.member, fact_id)
        return self._no_fact(request, session, place) if fact is None else fact

    def _limited(self, request: Request, session: Session | None, *, form: bool = False) -> Response | None:
        """A 429 with Retry-After when this address (and for a form, this session) went past its limit;
        None when the request may go on (it is then counted)."""
        limits = self.config.limits
        address = request.client.host if request.client is not None else "unknown"
        checks: list[tuple[str, str, Limit]] = (
            [("forms", address, limits.forms_per_address)]
            if form
            else [("sign-in", address, limits.sign_in_per_address)]
        )
        if form and session is not None:
            checks.append(("session", session.csrf, limits.forms_per_session))
        wait = self.limiter.hit(checks)
        if not wait:
            return None
        kinds = "/".join(kind for kind, _, _ in checks)
        log.warning(
            "over the %s limit: %s %s refused for %d s", kinds, request.method, request.url.path, wait
        )
        line = f"Too many attempts in a short time. Try again in {wait} seconds."
        shown = session if session is not None and session.signed_in else None
        response = self._message(request, shown, "Slow down", [line], status=429)
        response.headers["Retry-After"] = str(wait)
        return response

    async def _fresh_settings(self, *, force: bool = False) -> None:
        """Read the opt-outs and settings again when older than a second (or `force`): the bot and the
        other front-ends change them too, and this process does not follow them otherwise."""
        now = self.config.clock()
        if force or now - self._settings_read >= SETTINGS_FRESH_SECONDS:
            await self.service.reload_caches()
            self._settings_read = now

    def _done(self, request: Request) -> str | None:
        """The line saying what the last form did (`?done=...&n=...`: a word and a number, never a text)."""
        done = DONE.get(request.query_params.get("done", ""))
        number = request.query_params.get("n", "")
        if done is None or ("{n}" in done and not number.isdigit()):
            return None
        return done.format(n=int(number), s="" if number == "1" else "s") if "{n}" in done else done

    # ---- answers ---------------------------------------------------------------------------------

    def _no_fact(self, request: Request, session: Session, place: Place) -> Response:
        """The one answer for an id that is unknown, someone else's, another place's or gone: it does not
        even repeat the id, so no two of them read differently."""
        lines = [f"There is no such fact of yours in {place.name}."]
        return self._message(request, session, "Not found", lines, status=404, back=place)

    def _stale_form(self, request: Request, session: Session) -> Response:
        lines = [
            "This form did not come from this page of the dashboard, or your session changed since: "
            "nothing was done. Reload the page and try again."
        ]
        return self._message(request, session, "Form refused", lines, status=403)

    def _refused_sign_in(self, request: Request, line: str, *, status: int = 400) -> Response:
        response = self._message(request, None, "Not signed in", [line], status=status, sign_in=True)
        response.delete_cookie(COOKIE, path="/", secure=self.config.secure, httponly=True, samesite="lax")
        return response

    def _correct_form(
        self,
        request: Request,
        session: Session,
        place: Place,
        fact: Fact,
        text: str,
        error: str | None,
        *,
        status: int = 200,
    ) -> Response:
        context = {"place": place, "fact": entry(fact), "text": text, "error": error, "most": MAX_FACT_CHARS}
        return self._page(request, session, "correct.html", context, status=status)

    def _message(
        self,
        request: Request,
        session: Session | None,
        title: str,
        lines: list[str],
        *,
        status: int,
        back: Place | None = None,
        sign_in: bool = False,
    ) -> Response:
        context = {"title": title, "lines": lines, "back": back, "sign_in": sign_in}
        return self._page(request, session, "message.html", context, status=status)

    def _page(
        self,
        request: Request,
        session: Session | None,
        name: str,
        context: dict[str, Any],
        *,
        status: int = 200,
    ) -> Response:
        shown = session if session is not None and session.signed_in else None
        return self.templates.TemplateResponse(
            request, name, {"session": shown, **context}, status_code=status
        )

    def _keep(self, response: Response, session: Session) -> None:
        lifetime = int(self.config.signer.lifetime) if session.signed_in else None
        response.set_cookie(
            COOKIE,
            self.config.signer.dumps(session),
            max_age=lifetime,
            path="/",
            httponly=True,
            samesite="lax",
            secure=self.config.secure,
        )


def entry(fact: Fact) -> dict[str, Any]:
    """A fact as a page lists it: id, text (escaped by the template), when it was said, where."""
    said = [s for s in fact.sources if not s.confirms and s.origin is not None]
    guild = guild_id_of(fact.scope)
    links = []
    for source in said:
        assert source.origin is not None
        channel = source.origin.channel_id
        if is_discord_id(channel) and is_discord_id(source.message_id):
            url = f"https://discord.com/channels/{guild or '@me'}/{channel}/{source.message_id}"
            links.append({"channel": channel, "url": url})
    if links:
        where = "in your DMs with the bot" if guild is None else "in a channel of this server"
    elif said:
        told = any(s.origin == MCP_ORIGIN for s in said)
        where = "through an MCP client" if told else "elsewhere"
    else:
        where = "at a place not recorded"
    said_at = fact.said[:16].replace("T", " ") + " UTC"
    return {
        "id": fact.id,
        "text": fact.text,
        "said": said_at,
        "where": where,
        "links": links[:3],
        "sensitive": fact.sensitive,
        "consent": consent_line(fact, where, said_at) if fact.sensitive else None,
    }


def consent_line(fact: Fact, where: str, said_at: str) -> str:
    """A sensitive fact's consent, as far as the engine keeps it. The bot stores one only when its owner
    asks in so many words (`/remember`, a message asking it to remember, a correction, an MCP client's
    remember; or an operator's import of an export that had it); the fact keeps the messages it came from,
    when they were said and when it was stored, not which of those ways it was nor the request's words."""
    stored = fact.recorded_at[:16].replace("T", " ") + " UTC"
    return (
        "Kept because you asked: a sensitive fact is stored only when its owner asks in so many words. "
        f"Said {said_at}, learned {where}, stored {stored}; used only in replies to you."
    )


def _done_link(place: Place, done: str, number: int) -> str:
    return f"/memory/{place.slug}?{urlencode({'done': done, 'n': number})}"


def _download(body: str, media_type: str, name: str) -> Response:
    return Response(
        body, media_type=media_type, headers={"content-disposition": f'attachment; filename="{name}"'}
    )
