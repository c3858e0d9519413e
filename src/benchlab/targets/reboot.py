"""When a sweep reboots its device: before the run, after failures in a row, after an uptime.

FAI-PEP's device lab reboots a phone after a failed benchmark and every 8 hours
(``CoolDownDevice``); a phone that has run for days, or that a crashed runtime left in a
bad state, measures differently. :class:`RebootPolicy` says when, :class:`Rebooter` applies
it between jobs, and each reboot is recorded on the result of the job that follows it
(``details.reboot``: why, how long the device took to come back, its uptime before), whose
device state then shows the fresh ``uptime_s``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from benchlab.errors import UsageError
from benchlab.schema.result import DetailKey, EnvKey, Result, Status

__all__ = ["RebootEvent", "RebootPolicy", "Rebootable", "Rebooter"]

#: Failed results that count against the device (a bad spec is not the device's fault).
_DEVICE_FAILURES = (Status.FAILED, Status.TIMEOUT)


@runtime_checkable
class Rebootable(Protocol):
    """A target that can reboot its device and wait until it is back."""

    name: str

    def reboot(self, timeout: float = 300.0) -> None:
        """Reboot and return once the device has booted again."""
        ...


@dataclass(frozen=True, slots=True)
class RebootPolicy:
    """When to reboot: ``before_run``; after ``after_failures`` failed jobs in a row; before a
    job when the device has been up longer than ``max_uptime_s``. ``timeout_s`` bounds the
    wait for the device to come back."""

    before_run: bool = False
    after_failures: int | None = None
    max_uptime_s: float | None = None
    timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if self.after_failures is not None and self.after_failures < 1:
            raise UsageError(f"reboot after failures must be at least 1 "
                             f"(got {self.after_failures})")
        if self.max_uptime_s is not None and not self.max_uptime_s > 0:
            raise UsageError(f"reboot uptime must be above 0 (got {self.max_uptime_s})")
        if not self.timeout_s > 0:
            raise UsageError(f"reboot timeout must be above 0 (got {self.timeout_s})")

    @property
    def active(self) -> bool:
        """Whether this policy ever reboots."""
        return (self.before_run or self.after_failures is not None
                or self.max_uptime_s is not None)


@dataclass(frozen=True, slots=True)
class RebootEvent:
    """One reboot: why, how long the device took to come back, how long it had been up."""

    reason: str
    seconds: float
    uptime_before_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in the next result's ``details.reboot``."""
        return {"reason": self.reason, "seconds": round(self.seconds, 3),
                "uptime_before_s": self.uptime_before_s}


class Rebooter:
    """Applies a :class:`RebootPolicy` to one target over one sweep."""

    def __init__(self, policy: RebootPolicy, target: object) -> None:
        if policy.active and not isinstance(target, Rebootable):
            raise UsageError(f"target {getattr(target, 'name', target)!r} cannot reboot its "
                             "device; reboot options need one that can (adb)")
        self.policy = policy
        self._target = target
        self._failures = 0
        # Decided after a job, done before the next one: no reboot after the last job.
        self._due: tuple[str, float | None] | None = (
            ("asked for before the run", None) if policy.before_run else None)
        self._pending: RebootEvent | None = None  # the reboot the next result will carry

    def before_job(self) -> None:
        """Reboot now if the policy said so after the last job (or before the run)."""
        if self._due is None:
            return
        (reason, uptime), self._due = self._due, None
        assert isinstance(self._target, Rebootable)
        started = time.monotonic()
        self._target.reboot(timeout=self.policy.timeout_s)
        self._pending = RebootEvent(reason, time.monotonic() - started, uptime)
        self._failures = 0

    def after_job(self, result: Result) -> None:
        """Count the result; a reboot is due when it ends a run of failures or the device has
        been up too long (its uptime read from the device state after the job)."""
        self._failures = self._failures + 1 if result.status in _DEVICE_FAILURES else 0
        state = result.environment.get(EnvKey.STATE_AFTER) or {}
        uptime = state.get("uptime_s") if isinstance(state, dict) else None
        limit = self.policy.after_failures
        if limit is not None and self._failures >= limit:
            self._due = (f"{self._failures} failed job(s) in a row", uptime)
        elif self.policy.max_uptime_s is not None and isinstance(uptime, (int, float)) \
                and uptime > self.policy.max_uptime_s:
            self._due = (f"up {uptime:.0f} s, over the {self.policy.max_uptime_s:g} s limit",
                         uptime)

    def record(self, result: Result) -> Result:
        """``result`` with the reboot that came just before its job, if one did."""
        event, self._pending = self._pending, None
        if event is None:
            return result
        return replace(result, details={**result.details, DetailKey.REBOOT: event.to_dict()})
