"""Who may do what: bearer tokens with scopes, checked per endpoint.

Reading (pages and GET endpoints) is open to anonymous visitors unless the server was started
with ``anonymous_read=False``; then any valid token may read. Every write names the scope it
needs; a missing or unknown token is 401, a token without the scope is 403. A worker token
may only touch devices registered by its own host. Tokens arrive only in the
``Authorization`` header, never in a URL, so no access log or page can show one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from benchlab.lab.queue import Lab
from benchlab.lab.tokens import Scope, TokenInfo, find_token

__all__ = ["Caller", "ServerSettings", "get_lab", "require", "require_read"]

_bearer = HTTPBearer(auto_error=False, description="A benchlab lab token (bl_...).")


@dataclass(frozen=True)
class ServerSettings:
    """How the server treats anonymous visitors."""

    anonymous_read: bool = True


@dataclass(frozen=True)
class Caller:
    """Whoever made the request: a token's info, or anonymous (``token`` None)."""

    token: TokenInfo | None

    @property
    def name(self) -> str:
        """The token's name, for audit fields (who quarantined, who cancelled)."""
        return "anonymous" if self.token is None else self.token.name


def get_lab(request: Request) -> Lab:
    """The open lab the app serves."""
    return request.app.state.lab


def _caller(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Caller:
    if credentials is None:
        return Caller(None)
    info = find_token(get_lab(request).store, credentials.credentials)
    if info is None:
        raise HTTPException(401, "unknown or revoked token",
                            headers={"WWW-Authenticate": "Bearer"})
    return Caller(info)


def require(scope: Scope) -> Callable[..., Caller]:
    """A dependency that lets through only callers whose token carries ``scope``."""

    def check(request: Request,
              credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Caller:
        caller = _caller(request, credentials)
        if caller.token is None:
            raise HTTPException(401, f"this needs a token with the {scope.value!r} scope",
                                headers={"WWW-Authenticate": "Bearer"})
        if not caller.token.allows(scope):
            raise HTTPException(403, f"the token {caller.token.name!r} lacks the "
                                     f"{scope.value!r} scope")
        return caller

    return check


def require_read(request: Request,
                 credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Caller:
    """Anyone, if anonymous reading is on; else any valid token."""
    caller = _caller(request, credentials)
    settings: ServerSettings = request.app.state.settings
    if caller.token is None and not settings.anonymous_read:
        raise HTTPException(401, "this lab does not allow anonymous reading; send a token",
                            headers={"WWW-Authenticate": "Bearer"})
    return caller


def own_device(caller: Caller, device_host: str) -> None:
    """A worker token may write only for devices of its own host (admin: any)."""
    token = caller.token
    assert token is not None
    if Scope.ADMIN in token.scopes:
        return
    if token.host != device_host:
        raise HTTPException(403, f"the worker token {token.name!r} serves host "
                                 f"{token.host!r}, not {device_host!r}")
