"""Living with the lab's database going away: say so once, wait, and carry on when it is back.

A database restart or failover cuts every connection for seconds to minutes. The lab's
long-running processes neither exit nor log every failed try: :class:`Outage` says once that
the database is unavailable and once that it is back (with how long it was away), and
:func:`until_stored` retries a store call that must land (a job's state) until it does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from benchlab.errors import StoreUnavailable

__all__ = ["Outage", "until_stored"]

_log = logging.getLogger("benchlab.lab")
T = TypeVar("T")


class Outage:
    """Says once that the lab's database went away and once that it is back, not per try."""

    def __init__(self) -> None:
        self.since: float | None = None
        """When the current outage was noticed (monotonic), None while the database answers."""

    def down(self, exc: BaseException) -> None:
        """A call failed because the database is unavailable."""
        if self.since is None:
            self.since = time.monotonic()
            _log.warning("the lab's database is unavailable; waiting for it: %s", exc)

    def up(self) -> None:
        """A call succeeded."""
        if self.since is not None:
            _log.warning("the lab's database is back after %.0f s",
                         time.monotonic() - self.since)
            self.since = None


async def until_stored(outage: Outage, retry_s: float, call: Callable[..., T], *args: Any,
                       **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` in a thread, tried every ``retry_s`` until the database
    answers (procrastinate's connection errors count as the database's too)."""
    from procrastinate.exceptions import ConnectorException

    while True:
        try:
            value = await asyncio.to_thread(call, *args, **kwargs)
        except (StoreUnavailable, ConnectorException) as exc:
            outage.down(exc)
            await asyncio.sleep(retry_s)
            continue
        outage.up()
        return value
