"""API tokens: created once and shown once, stored only as a hash, each with its scopes."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import select, update

from benchlab.errors import UsageError
from benchlab.store import ResultStore
from benchlab.lab.tables import lab_tokens

__all__ = [
    "Scope", "TokenInfo", "create_token", "find_token", "live_token", "list_tokens",
    "revoke_token",
]

_PREFIX = "bl_"


class Scope(StrEnum):
    """What a token may do. Reading pages and the read API needs no scope (unless closed)."""

    WORKER = "worker"
    """Register its own host's devices, heartbeat, write results for them."""
    SUBMIT = "submit"
    """Submit jobs."""
    REPORT = "report"
    """Post results from ``benchlab run --report-to``."""
    ADMIN = "admin"
    """Everything: quarantine, cancel, pools, tokens."""
    READ = "read"
    """Read pages and the API when anonymous reading is off."""


@dataclass(frozen=True)
class TokenInfo:
    """A stored token, without the token itself."""

    id: int
    name: str
    scopes: frozenset[Scope]
    host: str
    created_at: float
    revoked: bool

    def allows(self, scope: Scope) -> bool:
        """Whether the token carries ``scope``; ``admin`` carries every scope."""
        return not self.revoked and (scope in self.scopes or Scope.ADMIN in self.scopes)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_scopes(text: str | list[str]) -> frozenset[Scope]:
    """``"submit,report"`` as scopes; an unknown one is a :class:`UsageError`."""
    names = text.split(",") if isinstance(text, str) else text
    scopes = set()
    for name in (n.strip() for n in names):
        if not name:
            continue
        try:
            scopes.add(Scope(name))
        except ValueError:
            known = ", ".join(s.value for s in Scope)
            raise UsageError(f"unknown token scope {name!r} (known: {known})") from None
    if not scopes:
        raise UsageError("a token needs at least one scope")
    return frozenset(scopes)


def create_token(store: ResultStore, name: str, scopes: str | list[str],
                 host: str = "") -> tuple[str, TokenInfo]:
    """Make a token; return it (the only time it exists in clear) and its stored info.

    A ``worker`` token must name the lab host whose devices it may write for.
    """
    chosen = parse_scopes(scopes)
    if Scope.WORKER in chosen and not host:
        raise UsageError("a worker token needs the host whose devices it serves (--host)")
    token = _PREFIX + secrets.token_urlsafe(32)
    now = time.time()
    with store.transaction("create a lab token") as conn:
        inserted = conn.execute(lab_tokens.insert().values(
            name=name, token_hash=_hash(token), scopes=",".join(sorted(chosen)), host=host,
            created_at=now, revoked_at=None,
        ))
        token_id = int(inserted.inserted_primary_key[0])
    return token, TokenInfo(token_id, name, chosen, host, now, False)


def _info(row) -> TokenInfo:  # noqa: ANN001
    return TokenInfo(int(row.id), row.name, parse_scopes(row.scopes), row.host,
                     float(row.created_at), row.revoked_at is not None)


def find_token(store: ResultStore, token: str) -> TokenInfo | None:
    """The stored info of ``token``, or None for an unknown or revoked one."""
    if not token.startswith(_PREFIX):
        return None
    with store.connection("check a lab token") as conn:
        row = conn.execute(select(lab_tokens).where(lab_tokens.c.token_hash == _hash(token))).first()
    if row is None or row.revoked_at is not None:
        return None
    return _info(row)


def live_token(store: ResultStore, token_id: int) -> TokenInfo | None:
    """The stored info of the token with this id, or None if there is none or it was revoked.

    For a page session, which names its token by id: revoking the token ends the session.
    """
    with store.connection("check a lab token") as conn:
        row = conn.execute(select(lab_tokens).where(lab_tokens.c.id == token_id)).first()
    if row is None or row.revoked_at is not None:
        return None
    return _info(row)


def list_tokens(store: ResultStore) -> list[TokenInfo]:
    """Every token ever made, newest first (revoked ones included, marked)."""
    with store.connection("list lab tokens") as conn:
        rows = conn.execute(select(lab_tokens).order_by(lab_tokens.c.id.desc())).all()
    return [_info(row) for row in rows]


def revoke_token(store: ResultStore, token_id: int) -> bool:
    """Revoke a token by id; False if there is no such live token."""
    with store.transaction("revoke a lab token") as conn:
        done = conn.execute(update(lab_tokens).where(
            lab_tokens.c.id == token_id, lab_tokens.c.revoked_at.is_(None)
        ).values(revoked_at=time.time()))
    return done.rowcount > 0
