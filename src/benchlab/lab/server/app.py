"""The lab server's FastAPI app: ``create_app(url)``; ``benchlab lab serve`` runs it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI

from benchlab.lab.queue import open_lab
from benchlab.lab.server.auth import ServerSettings

__all__ = ["create_app"]


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
    from benchlab.lab.server import api, ingest, pages

    app.include_router(api.router)
    app.include_router(ingest.router)
    pages.install(app)
    return app
