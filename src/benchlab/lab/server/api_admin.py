"""``/api/v1/runs`` (stored results) and ``/api/v1/tokens`` (who may do what)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query

from benchlab.lab.queue import Lab
from benchlab.lab.run_state import run_infos
from benchlab.lab.run_view import run_detail
from benchlab.lab.server.api_models import (
    RowId,
    RunDetailOut,
    RunOut,
    TokenCreatedOut,
    TokenIn,
    TokenOut,
    errors,
    finite,
    usage_errors,
)
from benchlab.lab.server.auth import Caller, get_lab, require, require_read
from benchlab.lab.tokens import Scope, TokenInfo, create_token, list_tokens, revoke_token

__all__ = ["router"]

router = APIRouter()

RunRefParam = Annotated[str, Path(
    pattern=r"^(latest|[0-9A-Fa-f-]{1,36})$",
    description="A run id, a prefix of its UUID, or 'latest'")]


@router.get("/runs", response_model=list[RunOut], responses=errors(401), tags=["results"])
def get_runs(limit: Annotated[int, Query(ge=1, le=1000)] = 20, lab: Lab = Depends(get_lab),
             _: Caller = Depends(require_read)) -> list[dict[str, Any]]:
    """The most recent runs first, with their counts of ok and failed results."""
    return [info.to_json() for info in run_infos(lab.store, lab.store.list_runs(limit))]


@router.get("/runs/{run}", response_model=RunDetailOut, responses=errors(401, 404),
            tags=["results"])
def get_run(run: RunRefParam, lab: Lab = Depends(get_lab),
            _: Caller = Depends(require_read)) -> dict[str, Any]:
    """A run as its page shows it, and its results' summaries (raw samples left out)."""
    # An unknown or ambiguous reference is a 404 either way: there is no one run to show.
    with usage_errors(404):
        detail = run_detail(lab.store, run)
    shown = []
    for result in detail.results:
        data = result.to_dict()
        data.pop("samples", None)
        shown.append(finite(data))
    return {"run": detail.run.to_json(), "environment": detail.environment, "items": detail.items,
            "results": shown}


def _token(info: TokenInfo) -> dict[str, Any]:
    # Built field by field, so neither the token nor its hash can ever slip into an answer.
    return {"id": info.id, "name": info.name, "scopes": sorted(info.scopes), "host": info.host,
            "created_at": info.created_at, "revoked": info.revoked}


@router.get("/tokens", response_model=list[TokenOut], responses=errors(401, 403),
            tags=["tokens"])
def get_tokens(lab: Lab = Depends(get_lab),
               _: Caller = Depends(require(Scope.ADMIN))) -> list[dict[str, Any]]:
    """Every token ever made, newest first (revoked ones marked); never the tokens themselves."""
    return [_token(info) for info in list_tokens(lab.store)]


@router.post("/tokens", response_model=TokenCreatedOut, status_code=201,
             responses=errors(400, 401, 403), tags=["tokens"])
def post_token(body: TokenIn, lab: Lab = Depends(get_lab),
               _: Caller = Depends(require(Scope.ADMIN))) -> dict[str, Any]:
    """Make a token; this answer is the only place it ever appears (only its hash is stored)."""
    with usage_errors():
        token, info = create_token(lab.store, body.name, [s.value for s in body.scopes],
                                   host=body.host)
    return {**_token(info), "token": token}


@router.delete("/tokens/{token_id}", response_model=TokenOut,
               responses=errors(401, 403, 404), tags=["tokens"])
def delete_token(token_id: RowId, lab: Lab = Depends(get_lab),
                 _: Caller = Depends(require(Scope.ADMIN))) -> dict[str, Any]:
    """Revoke a token; it is refused (401) from then on. Unknown or already revoked: 404."""
    if not revoke_token(lab.store, token_id):
        raise HTTPException(404, f"no live token with id {token_id}")
    found = [info for info in list_tokens(lab.store) if info.id == token_id]
    if not found:
        raise HTTPException(404, f"no token with id {token_id}")
    return _token(found[0])

