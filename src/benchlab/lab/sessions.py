"""Signing in to the lab's pages with a lab token: sessions and their CSRF tokens.

A person pastes a token once; the pages then carry a session cookie instead. The cookie is a
signed value, not the token and not a key into a sessions table::

    s1.<token id>.<issued, µs since the epoch>.<random session id>.<HMAC-SHA256>

signed with a secret the lab keeps in the store's ``meta`` table (made on first use, shared by
every server process on the database). Why not a sessions table: the store's tables are
versioned by the store, and a session is a short-lived statement about a token that already
lives in the database, so nothing new needs a schema. What ends a session:

* its age: :data:`SESSION_TTL_S` after signing in;
* its token: every request reloads the token by id, so revoking it ends its sessions at once;
* logging out: :func:`sign_out` records, in ``meta``, the time the token's holder logged out;
  sessions of that token signed in before then are refused from then on, in every browser
  (each person holds their own token, so this is "log out everywhere" for that person).

The CSRF token that a page's forms carry is an HMAC of the session id under the same secret:
tied to one session, useless with any other, never stored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert

from benchlab.lab.tokens import Scope, TokenInfo, find_token, live_token
from benchlab.store import ResultStore
from benchlab.store.tables import meta

__all__ = ["COOKIE_NAME", "SESSION_TTL_S", "Session", "csrf_matches", "read_session",
           "sign_in", "sign_out"]

SESSION_TTL_S = 12 * 3600.0
"""How long a page session lasts after signing in: a working day, then the token again."""

COOKIE_NAME = "benchlab_session"
"""The session cookie's name."""

_VERSION = "s1"
_SECRET_KEY = "lab_session_secret"
# meta's key column holds 64 characters: the prefix plus a token id fits with room to spare.
_LOGOUT_PREFIX = "lab_session_logout:"


@dataclass(frozen=True)
class Session:
    """A signed-in page visitor: whose token, since and until when, and the forms' CSRF token."""

    token: TokenInfo
    session_id: str
    issued_us: int
    expires_at: float
    csrf: str

    @property
    def name(self) -> str:
        """The token's name: who the pages say is signed in, and who did what."""
        return self.token.name

    def allows(self, scope: Scope) -> bool:
        """Whether the session's token carries ``scope``."""
        return self.token.allows(scope)


def _mac(secret: bytes, message: str) -> str:
    digest = hmac.new(secret, message.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _meta_values(store: ResultStore, *keys: str) -> dict[str, str]:
    with store.connection("read the lab's session settings") as conn:
        rows = conn.execute(select(meta.c.key, meta.c.value).where(meta.c.key.in_(keys))).all()
    return {row.key: row.value for row in rows}


def _secret(store: ResultStore, found: dict[str, str]) -> bytes:
    """The signing secret, made on first use; two servers racing to make it get one."""
    value = found.get(_SECRET_KEY)
    if value is None:
        with store.transaction("make the lab's session secret") as conn:
            conn.execute(insert(meta).values(key=_SECRET_KEY, value=secrets.token_hex(32))
                         .on_conflict_do_nothing(index_elements=[meta.c.key]))
        value = _meta_values(store, _SECRET_KEY)[_SECRET_KEY]
    return bytes.fromhex(value)


def _session(secret: bytes, token: TokenInfo, issued_us: int, session_id: str) -> Session:
    return Session(token=token, session_id=session_id, issued_us=issued_us,
                   expires_at=issued_us / 1e6 + SESSION_TTL_S,
                   csrf=_mac(secret, f"csrf.{session_id}"))


def sign_in(store: ResultStore, token: str, *, now: float | None = None
            ) -> tuple[str, Session] | None:
    """A new session for ``token`` and the cookie value that carries it; None for an unknown
    or revoked token. The cookie holds the token's id, never the token."""
    info = find_token(store, token.strip())
    if info is None:
        return None
    secret = _secret(store, _meta_values(store, _SECRET_KEY))
    issued_us = int((time.time() if now is None else now) * 1e6)
    session_id = secrets.token_urlsafe(16)
    body = f"{_VERSION}.{info.id}.{issued_us}.{session_id}"
    return f"{body}.{_mac(secret, body)}", _session(secret, info, issued_us, session_id)


def read_session(store: ResultStore, cookie: str, *, now: float | None = None
                 ) -> Session | None:
    """The session a cookie carries, or None: forged, expired, logged out, or its token gone."""
    parts = cookie.split(".")
    if len(parts) != 5 or parts[0] != _VERSION:
        return None
    _, token_id, issued, session_id, mac = parts
    if not (token_id.isascii() and token_id.isdigit() and issued.isascii() and issued.isdigit()):
        return None
    logout_key = f"{_LOGOUT_PREFIX}{int(token_id)}"
    found = _meta_values(store, _SECRET_KEY, logout_key)
    if _SECRET_KEY not in found:
        return None  # no session was ever signed here
    secret = _secret(store, found)
    if not hmac.compare_digest(mac, _mac(secret, ".".join(parts[:4]))):
        return None
    issued_us = int(issued)
    logged_out = found.get(logout_key)
    if logged_out is not None and issued_us <= int(logged_out):
        return None
    token = live_token(store, int(token_id))
    if token is None:
        return None
    session = _session(secret, token, issued_us, session_id)
    if (time.time() if now is None else now) >= session.expires_at:
        return None
    return session


def sign_out(store: ResultStore, session: Session, *, now: float | None = None) -> None:
    """End every session of ``session``'s token signed in until now (this one included)."""
    at_us = str(int((time.time() if now is None else now) * 1e6))
    statement = insert(meta).values(key=f"{_LOGOUT_PREFIX}{session.token.id}", value=at_us)
    with store.transaction("log out of the lab's pages") as conn:
        conn.execute(statement.on_conflict_do_update(index_elements=[meta.c.key],
                                                     set_={"value": at_us}))


def csrf_matches(session: Session | None, presented: str | None) -> bool:
    """Whether a form's CSRF token is this session's (constant-time comparison)."""
    if session is None or not presented:
        return False
    return hmac.compare_digest(session.csrf.encode(), presented.encode())
