"""``/login`` and ``/logout``: a person signs in to the pages by pasting a lab token.

The token is posted in the form's body (never a URL), checked like a bearer token, and
exchanged for a session cookie that does not contain it (see :mod:`benchlab.lab.sessions`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from benchlab.lab.server.auth import get_lab
from benchlab.lab.server.page_session import (
    PageRefusal,
    clear_session_cookie,
    current_session,
    form_fields,
    safe_next,
    set_session_cookie,
)
from benchlab.lab.server.pages import render
from benchlab.lab.sessions import SESSION_TTL_S, csrf_matches, sign_in, sign_out

__all__ = ["router"]

# No read dependency: the login page must open even where anonymous reading is off.
router = APIRouter(include_in_schema=False)


def _same_origin(request: Request) -> bool:
    """False when the browser says the form came from another site.

    Sessions use SameSite=Strict, but signing in has no session yet to protect it: without
    this, another site could post its own token here and sign a visitor in as someone else.
    A request without an ``Origin`` header (a script, an older browser) is let through.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    return (parts.scheme, parts.netloc) == (request.url.scheme, request.url.netloc)


def _login_page(request: Request, next_path: str, error: str = "",
                status_code: int = 200) -> HTMLResponse:
    return render(request, "login.html", status_code=status_code, title="Log in", nav="login",
                  next_path=next_path, error=error, hours=round(SESSION_TTL_S / 3600))


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request) -> HTMLResponse:
    """The form where a person pastes a lab token."""
    return _login_page(request, safe_next(request.query_params.get("next")))


@router.post("/login", response_model=None)
def login(request: Request, fields: dict[str, str] = Depends(form_fields)) -> Response:
    """Sign in with the posted token; back to ``next`` (a path here) with a session cookie."""
    if not _same_origin(request):
        raise PageRefusal(403, "This sign-in form was sent from another site.")
    next_path = safe_next(fields.get("next"))
    signed = sign_in(get_lab(request).store, fields.get("token", ""))
    if signed is None:
        return _login_page(request, next_path, status_code=401,
                           error="That token is unknown or revoked.")
    cookie, _ = signed
    response = RedirectResponse(next_path, status_code=303)
    set_session_cookie(response, request, cookie)
    return response


@router.post("/logout", response_model=None)
def logout(request: Request, fields: dict[str, str] = Depends(form_fields)) -> Response:
    """End the session (every session of its token, see ``sign_out``) and drop the cookie.

    Needs the session's CSRF token, so another site cannot log a person out behind their back.
    """
    session = current_session(request)
    if session is not None:
        if not csrf_matches(session, fields.get("csrf")):
            raise PageRefusal(403, "This form's security token is missing or belongs to "
                                   "another session; reload the page and try again.")
        sign_out(get_lab(request).store, session)
    response = RedirectResponse(request.app.url_path_for("overview_page"), status_code=303)
    clear_session_cookie(response, request)
    return response
