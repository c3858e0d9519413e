"""What the store hands out: a run's record and a point of a metric's history.

The lab's run as shown (``lab/run_state.RunInfo``), the API's run shape and the reporter's run
are all built from :class:`RunRecord`: a fact of a stored run is added here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from benchlab.schema.result import Summary

__all__ = ["HistoryPoint", "RunRecord", "RunRef", "RunStatus"]


class RunStatus(StrEnum):
    """Where a run stands."""

    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run as stored, with how many of its results succeeded and failed."""

    id: int
    uuid: str
    created_at: str
    finished_at: str | None
    status: RunStatus
    fingerprint: str
    description: str
    host: str
    ok_count: int = 0
    failed_count: int = 0

    @property
    def result_count(self) -> int:
        """All results stored for the run, whatever their status."""
        return self.ok_count + self.failed_count

    @property
    def resumable(self) -> bool:
        """True when the run did not finish and ``run --resume`` may continue it."""
        return self.status is not RunStatus.FINISHED


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """One measurement of a metric in the history of a model on a framework."""

    started_at: str
    run_id: int
    result_id: int
    job_key: str
    test_identifier: str
    target: str
    device: str
    summary: Summary
    runtime_version: str | None = None


RunRef = int | str | RunRecord
"""A run named by its id, a prefix of its UUID, ``"latest"``, or its :class:`RunRecord`."""
