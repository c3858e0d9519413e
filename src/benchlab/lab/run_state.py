"""Stored runs as the lab shows them: finished, interrupted, running, or abandoned.

A run posted with ``benchlab run --report-to`` is created by the lab on its first result and
stays ``running`` in the store until its reporter calls ``POST /api/v1/runs/<uuid>/finish``.
A reporter that was killed, lost its network for good, or predates that endpoint never does.
So the pages and the API show a run that is still ``running`` but has had no new result for
:data:`ABANDONED_AFTER_S` as ``abandoned``. That is derived when shown, never written: the
store keeps ``running`` (the record's status, ``stored_status`` in the API), and a late
result or a finish call brings the run back to what it really is.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast

from benchlab.errors import UsageError
from benchlab.store import ResultStore, RunRecord, RunStatus
from benchlab.store.summary_rows import newest_result_times

__all__ = ["ABANDONED_AFTER_S", "RunInfo", "ShownStatus", "finish_reported_run", "run_info",
           "run_infos", "shown_status"]

ABANDONED_AFTER_S = 6 * 3600.0
"""How long a ``running`` run may go without a new result before it is shown as abandoned.

Six hours: well beyond one benchmark job (the lab's job processes time out after 3 h), so a
run that is merely slow is never called abandoned, while one whose machine died overnight is
by the next morning. Measured from the newest result's end, or from the run's start before
it has any result.
"""

ABANDONED = "abandoned"


ShownStatus = Literal["running", "finished", "interrupted", "abandoned"]
"""A run's status as shown: the stored one, or ``abandoned``."""


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A stored run as the pages and the API show it: its record, and what is derived when it
    is read.

    ``status`` is what is shown: the record's status, except ``abandoned`` for a run the store
    still calls ``running`` whose newest result is older than :data:`ABANDONED_AFTER_S`.
    """

    record: RunRecord
    status: ShownStatus
    last_result_at: str | None
    """When the run's newest result ended (None before its first)."""

    @property
    def label(self) -> str:
        """``#12 nightly (2026-01-02)``: what a run picker shows."""
        run = self.record
        desc = f" {run.description}" if run.description else ""
        return f"#{run.id}{desc} ({run.created_at[:16].replace('T', ' ')})"

    def to_json(self) -> dict[str, Any]:
        """The API's flat form (``RunOut``): the record's fields with the shown ``status``, the
        record's own as ``stored_status``, its ``result_count`` and ``last_result_at``."""
        run = self.record
        out = asdict(run)
        out.update(status=self.status, stored_status=run.status.value,
                   result_count=run.result_count, last_result_at=self.last_result_at)
        return out


def _epoch(text: str) -> float:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return math.nan
    # Results are stamped in UTC; a time without an offset is read as UTC too.
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def shown_status(stored: str, last_activity: str, now: float) -> str:
    """``abandoned`` for a ``running`` run quiet since ``last_activity`` (ISO) for longer than
    :data:`ABANDONED_AFTER_S`; otherwise the stored status."""
    if stored != RunStatus.RUNNING.value:
        return stored
    since = _epoch(last_activity)
    # An unreadable time proves nothing: keep what the store says.
    return ABANDONED if math.isfinite(since) and now - since > ABANDONED_AFTER_S else stored


def _info(run: RunRecord, last_result_at: str | None, now: float) -> RunInfo:
    shown = shown_status(run.status.value, last_result_at or run.created_at, now)
    return RunInfo(run, cast(ShownStatus, shown), last_result_at)


def run_infos(store: ResultStore, runs: Sequence[RunRecord], *,
              now: float | None = None) -> list[RunInfo]:
    """The shown view of several runs, with one query for their newest results."""
    moment = time.time() if now is None else now
    last = newest_result_times(store, [run.id for run in runs])
    return [_info(run, last.get(run.id), moment) for run in runs]


def run_info(store: ResultStore, run: RunRecord, *, now: float | None = None) -> RunInfo:
    """The shown view of one run."""
    return run_infos(store, [run], now=now)[0]


def finish_reported_run(store: ResultStore, run_uuid: str,
                        status: str = RunStatus.FINISHED.value) -> RunInfo:
    """Record how a reported run ended and stamp its end: ``finished`` (failed jobs
    included: they are its failed results) or ``interrupted`` (stopped before its last job),
    the store's two end states.

    Finishing again overwrites: a run interrupted, resumed where it ran and then finished is
    ``finished``. An unknown run or status is a :class:`~benchlab.errors.UsageError`.
    """
    try:
        canonical = str(uuid.UUID(run_uuid))
    except ValueError:
        # Only a whole UUID: "latest" or an id would let a poster finish someone else's run.
        raise UsageError(f"{run_uuid!r} is not a run UUID") from None
    record = store.get_run(canonical)
    store.finish_run(record.id, status)
    return run_info(store, store.get_run(record.id))
