"""The lab server's FastAPI app: ``create_app(url)``; ``benchlab lab serve`` runs it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from benchlab.errors import StoreUnavailable
from benchlab.lab.queue import open_lab
from benchlab.lab.server.auth import ServerSettings

__all__ = ["RETRY_AFTER_S", "create_app", "serve"]

RETRY_AFTER_S = 5
"""What a 503 asks a client to wait while the database is away (a restart takes seconds)."""

_UNAVAILABLE = "the lab's database is unavailable (restarting or failing over); try again shortly"


def _database_unavailable(request: Request, exc: Exception) -> Response:
    # The API says so in JSON with Retry-After; a page says so in words. Never a 500 or a
    # stack trace: nothing is wrong with the request, and it will work again by itself.
    headers = {"Retry-After": str(RETRY_AFTER_S)}
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": _UNAVAILABLE}, status_code=503, headers=headers)
    from benchlab.lab.server.pages import error_page

    page = error_page(request, "Database unavailable",
                      f"{_UNAVAILABLE[0].upper()}{_UNAVAILABLE[1:]}. This page will work "
                      "again once it is back; nothing is lost meanwhile.", status_code=503)
    page.headers.update(headers)
    return page


def create_app(url: str, *, anonymous_read: bool = True) -> FastAPI:
    """The lab's app on the lab database ``url`` (opened at startup, closed at shutdown)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with open_lab(url) as lab:
            app.state.lab = lab
            yield

    app = FastAPI(title="benchlab lab", version="1", lifespan=lifespan,
                  description="Devices, jobs, results and their pages for a benchlab lab.")
    app.state.settings = ServerSettings(anonymous_read=anonymous_read)
    from benchlab.lab.server import api, ingest, login, page_actions, pages, views_api

    from procrastinate.exceptions import ConnectorException

    app.add_exception_handler(StoreUnavailable, _database_unavailable)
    app.add_exception_handler(ConnectorException, _database_unavailable)
    app.include_router(api.router)
    app.include_router(ingest.router)
    pages.install(app, beside=[login.router, page_actions.router, views_api.router])
    return app


def serve(url: str, *, host: str = "127.0.0.1", port: int = 8470,
          anonymous_read: bool = True) -> None:
    """Serve the lab until SIGINT, SIGTERM or SIGHUP; each lets requests in flight finish."""
    import signal

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(create_app(url, anonymous_read=anonymous_read),
                                           host=host, port=port, log_level="warning"))
    # uvicorn handles SIGINT and SIGTERM itself; a closed terminal (SIGHUP) would otherwise
    # kill the server without its shutdown.
    signal.signal(signal.SIGHUP, server.handle_exit)
    server.run()
