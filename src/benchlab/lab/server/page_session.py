"""Who is looking at a page: the session cookie, the forms that write, and their refusals.

The JSON API never reads the cookie (tokens travel in the ``Authorization`` header there);
only the pages do, to greet the person and to offer the admin actions their token allows.
Every form that writes carries the session's CSRF token in a hidden field; a write without a
session, with another CSRF token, or by a token without the scope is refused with 403 before
anything is read or changed.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.responses import Response

from benchlab.lab.server.auth import Caller, get_lab, require_read
from benchlab.lab.sessions import COOKIE_NAME, SESSION_TTL_S, Session, csrf_matches, read_session
from benchlab.lab.tokens import Scope

__all__ = ["FORM_LIMIT", "PageRefusal", "clear_session_cookie", "current_session",
           "form_fields", "page_reader", "safe_next", "set_session_cookie", "signed_in_for"]

FORM_LIMIT = 16 * 1024
"""The largest form body a page accepts: a token, a reason and a CSRF token fit many times."""

# The same kind of scheme object auth.py uses: a page may still be read with a bearer token.
_bearer = HTTPBearer(auto_error=False, description="A benchlab lab token (bl_...).")
_UNREAD = object()


class PageRefusal(Exception):
    """A page form refused (403 and the like): shown as an error page, not as JSON."""

    def __init__(self, status_code: int, message: str) -> None:
        """The HTTP status and the sentence the error page shows."""
        super().__init__(message)
        self.status_code = status_code
        self.message = message


def current_session(request: Request) -> Session | None:
    """The signed-in session of this request, or None (no cookie, or one no longer valid).

    Read once per request and kept on ``request.state``: a page asks several times.
    """
    found = getattr(request.state, "lab_session", _UNREAD)
    if found is _UNREAD:
        cookie = request.cookies.get(COOKIE_NAME)
        found = read_session(get_lab(request).store, cookie) if cookie else None
        request.state.lab_session = found
    return found


def page_reader(request: Request,
                credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Caller:
    """Who reads a page: a signed-in session, else what the API allows (see ``require_read``).

    A lab closed to anonymous readers sends a browser to the login page instead of a 401.
    """
    session = current_session(request) if credentials is None else None
    if session is not None:
        return Caller(session.token)
    try:
        return require_read(request, credentials)
    except HTTPException as exc:
        if exc.status_code != 401 or request.method != "GET" or credentials is not None:
            raise
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        login = request.app.url_path_for("login_page")
        raise HTTPException(303, "sign in to read this lab's pages",
                            headers={"Location": f"{login}?{urlencode({'next': target})}"}
                            ) from exc


def safe_next(value: str | None) -> str:
    """Where to go after signing in: a path on this server only (never ``//elsewhere``), and
    not the login page again."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return "/" if value.split("?", 1)[0] == "/login" else value


async def form_fields(request: Request) -> dict[str, str]:
    """A URL-encoded form's fields (the only kind the pages send), at most :data:`FORM_LIMIT`.

    Any other body counts as no fields, so it carries no CSRF token either and a write is
    refused with the same 403 as every other forgery. Parsed with the standard library: one
    call, where a multipart parser would be a new dependency for forms that upload nothing.
    """
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return {}
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_LIMIT:
            raise PageRefusal(413, "the form is too large")
    try:
        pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True,
                          max_num_fields=20)
    except ValueError:
        raise PageRefusal(400, "the form has too many fields") from None
    # PostgreSQL text cannot hold NUL: drop it rather than fail in the database.
    return {key: value.replace("\x00", "") for key, value in pairs}


def signed_in_for(request: Request, fields: dict[str, str], scope: Scope) -> Session:
    """The session a page write acts as, if it has one, its CSRF token matches and its token
    carries ``scope``; otherwise :class:`PageRefusal` (403) before anything changes."""
    session = current_session(request)
    if session is None:
        raise PageRefusal(403, "Sign in with a lab token first: this action needs a session.")
    if not csrf_matches(session, fields.get("csrf")):
        raise PageRefusal(403, "This form's security token is missing or belongs to another "
                               "session; reload the page and try again.")
    if not session.allows(scope):
        raise PageRefusal(403, f"The token {session.name!r} lacks the {scope.value!r} scope "
                               "this action needs.")
    return session


def set_session_cookie(response: Response, request: Request, value: str) -> None:
    """Put the session on ``response``: script cannot read it, no other site sends it, and it
    travels only over TLS when the page came over TLS."""
    response.set_cookie(COOKIE_NAME, value, max_age=int(SESSION_TTL_S), path="/",
                        httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


def clear_session_cookie(response: Response, request: Request) -> None:
    """Remove the session cookie from the browser."""
    response.delete_cookie(COOKIE_NAME, path="/", httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")
