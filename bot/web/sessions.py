"""The dashboard's session: a small JSON value in a cookie, signed with HMAC-SHA256 (WEB_SESSION_SECRET).

The server keeps no session table: what it trusts is what it signed. The value carries when it was
issued, and the server refuses it once older than its lifetime whatever the browser does with the
cookie's own expiry. Before sign-in a session holds only the OAuth2 `state` (for a few minutes); after,
the member's Discord id and name, the places they may open, the servers they managed at sign-in (a list
to show: every admin page asks Discord again), and the CSRF token every form sends back.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field, replace
from typing import Any

COOKIE = "memory_session"
MAX_COOKIE_CHARS = 3800  # browsers keep a cookie of 4,096 bytes with its name and attributes
SIGN_IN_SECONDS = 600  # how long the way to Discord and back may take
_PURPOSE = b"memory-bot web session v1\n"  # the secret signs nothing else with this prefix


@dataclass(frozen=True)
class Place:
    """A scope the member may open: `guild:<id>` or `dm`, and how it is named."""

    scope: str
    name: str

    @property
    def slug(self) -> str:
        """The scope as the URL names it: the server's id, or `dm`."""
        return self.scope.removeprefix("guild:")


@dataclass(frozen=True)
class Session:
    """What the signed cookie holds. `user_id` is None before sign-in, when only `state` matters."""

    issued: float
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    state: str | None = None
    user_id: str | None = None
    name: str = ""
    places: tuple[Place, ...] = ()
    admin_of: tuple[Place, ...] = ()  # the servers they managed at sign-in: listed, checked again on use

    @property
    def signed_in(self) -> bool:
        return self.user_id is not None

    @property
    def member(self) -> str:
        """The signed-in member's Discord id (a session before sign-in has none: a bug to ask)."""
        if self.user_id is None:
            raise ValueError("a session before sign-in has no member")
        return self.user_id

    def place(self, slug: str) -> Place | None:
        return next((p for p in self.places if p.slug == slug), None)

    def csrf_matches(self, sent: str | None) -> bool:
        """The form's token is this session's (compared in constant time)."""
        return sent is not None and hmac.compare_digest(sent.encode(), self.csrf.encode())

    def state_matches(self, sent: str | None) -> bool:
        """Discord handed back the `state` this browser was sent with (compared in constant time)."""
        return (
            sent is not None
            and self.state is not None
            and hmac.compare_digest(sent.encode(), self.state.encode())
        )


def signing_in(now: float | None = None) -> Session:
    """A session before sign-in: a fresh `state` that Discord must hand back."""
    return Session(issued=time.time() if now is None else now, state=secrets.token_urlsafe(24))


def signed_in(
    user_id: str,
    name: str,
    places: tuple[Place, ...],
    now: float | None = None,
    admin_of: tuple[Place, ...] = (),
) -> Session:
    """A session after sign-in; a new CSRF token, so nothing from before it carries over."""
    issued = time.time() if now is None else now
    return Session(issued=issued, user_id=user_id, name=name, places=places, admin_of=admin_of)


class SessionSigner:
    """Signs sessions into cookie values and reads them back, refusing forged and expired ones."""

    def __init__(self, secret: str, lifetime_seconds: float) -> None:
        self._key = secret.encode()
        self.lifetime = lifetime_seconds

    def dumps(self, session: Session) -> str:
        data: dict[str, Any] = {"i": session.issued, "c": session.csrf}
        if session.state is not None:
            data["s"] = session.state
        if session.user_id is not None:
            data |= {
                "u": session.user_id,
                "n": session.name,
                "p": [[p.scope, p.name] for p in session.places],
            }
            if session.admin_of:
                data["a"] = [[p.scope, p.name] for p in session.admin_of]
        text = json.dumps(
            data, separators=(",", ":"), ensure_ascii=False
        )  # UTF-8: 3 bytes a CJK letter, not 6
        payload = base64.urlsafe_b64encode(text.encode()).rstrip(b"=")
        return f"{payload.decode()}.{self._mac(payload)}"

    def fitting(self, session: Session) -> Session:
        """The session with as many of its places as its cookie can hold, the last one (the DMs) kept."""
        while len(self.dumps(session)) > MAX_COOKIE_CHARS and len(session.places) > 1:
            session = replace(session, places=(*session.places[:-2], session.places[-1]))
        return session

    def loads(self, value: str | None, now: float | None = None) -> Session | None:
        """The session in a cookie value; None when there is none, it is forged or it has expired."""
        if not value or "." not in value:
            return None
        payload, _, mac = value.rpartition(".")
        if not hmac.compare_digest(mac.encode(), self._mac(payload.encode()).encode()):
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            session = Session(
                issued=float(data["i"]),
                csrf=str(data["c"]),
                state=data.get("s"),
                user_id=data.get("u"),
                name=str(data.get("n", "")),
                places=tuple(Place(str(s), str(n)) for s, n in data.get("p", [])),
                admin_of=tuple(Place(str(s), str(n)) for s, n in data.get("a", [])),
            )
        except (binascii.Error, ValueError, KeyError, TypeError):
            return None
        age = (time.time() if now is None else now) - session.issued
        lifetime = self.lifetime if session.signed_in else min(self.lifetime, SIGN_IN_SECONDS)
        return session if -60 <= age <= lifetime else None  # a minute of clock skew between processes

    def _mac(self, payload: bytes) -> str:
        return hmac.new(self._key, _PURPOSE + payload, hashlib.sha256).hexdigest()
