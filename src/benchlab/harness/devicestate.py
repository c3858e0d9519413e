"""Device state around a job: the temperature gate, and flags that explain noisy numbers.

Phones throttle, migrate work between big and little cores and heat up run after run
(seeds 000/001). benchlab therefore reads the device state (see
:mod:`benchlab.targets.probe`) before and after every job, can wait for the device to cool
below a gate before each process, and flags a result whose temperature rose past the gate,
whose CPU frequencies changed under it, or whose samples drift — so such a number is
explained or rejected, not silently averaged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from benchlab.targets.probe import hottest

__all__ = ["GateOutcome", "capture_state", "state_flags", "wait_until_cool"]

# Governors that hold a fixed frequency: a change under them means throttling or interference.
_FIXED_GOVERNORS = frozenset({"performance", "powersave", "userspace"})


def capture_state(target: Any) -> dict[str, Any] | None:
    """The target's device state, ``None`` when it cannot report one, ``{"error"}`` on failure.

    Reading the state never fails a job: a phone that drops off the bus mid-read is reported
    in the state itself, and the job's own commands decide its status.
    """
    reader = getattr(target, "device_state", None)
    if reader is None:
        return None
    try:
        return dict(reader())
    except Exception as exc:  # noqa: BLE001 - a state read must not take the sweep down
        return {"error": f"{type(exc).__name__}: {exc}"}


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """What waiting for the temperature gate did: how long, from which temperature to which."""

    gate_c: float
    start_c: float | None
    end_c: float | None
    waited_s: float
    cooled: bool
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form for the result's details."""
        return asdict(self)


def wait_until_cool(
    target: Any,
    gate_c: float,
    limit_s: float,
    *,
    poll_s: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> GateOutcome:
    """Poll the hottest thermal zone until it is below ``gate_c`` or ``limit_s`` has passed.

    A device with no readable thermal zone passes at once, with the reason recorded.
    """
    began = clock()
    first: float | None = None
    while True:
        now_c = hottest(capture_state(target))
        if now_c is None:
            return GateOutcome(gate_c, None, None, clock() - began, True,
                               "the device reports no temperatures")
        first = now_c if first is None else first
        if now_c < gate_c:
            return GateOutcome(gate_c, first, now_c, clock() - began, True)
        if clock() - began >= limit_s:
            return GateOutcome(
                gate_c, first, now_c, clock() - began, False,
                f"still {now_c:.1f} °C after {limit_s:g} s (gate {gate_c:g} °C)",
            )
        sleep(poll_s)


def _cpus(state: Mapping[str, Any] | None) -> Mapping[str, Mapping[str, Any]]:
    return (state or {}).get("cpus") or {}


def _frequency_changes(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> list[str]:
    changes: list[str] = []
    cpus_after = _cpus(after)
    for name, old in _cpus(before).items():
        new = cpus_after.get(name)
        if not new:
            continue
        if old.get("governor") != new.get("governor"):
            changes.append(f"{name} governor {old.get('governor')} → {new.get('governor')}")
        if old.get("max_khz") and new.get("max_khz") and old["max_khz"] != new["max_khz"]:
            changes.append(f"{name} max {old['max_khz'] / 1e3:.0f} → {new['max_khz'] / 1e3:.0f} MHz")
        elif (
            new.get("governor") in _FIXED_GOVERNORS
            and old.get("cur_khz") and new.get("cur_khz")
            and old["cur_khz"] != new["cur_khz"]
        ):
            changes.append(f"{name} {old['cur_khz'] / 1e3:.0f} → {new['cur_khz'] / 1e3:.0f} MHz")
    return changes


def state_flags(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    *,
    gate_c: float | None = None,
    gates: Sequence[GateOutcome] = (),
    latency_warnings: Sequence[str] = (),
) -> list[dict[str, str]]:
    """Why this result's numbers may not be trusted, from the device's state around the job.

    Each flag is ``{"flag": name, "detail": text}``: ``temperature_above_gate`` (the device
    ended hotter than the gate), ``not_cooled`` (a gate wait ran out of time),
    ``frequency_changed`` (a cap, governor, or a fixed governor's frequency moved — throttling
    or someone else's hand), ``samples_drift`` (a trend across iterations).
    """
    flags: list[dict[str, str]] = []
    hot_after = hottest(after)
    if gate_c is not None and hot_after is not None and hot_after >= gate_c:
        hot_before = hottest(before)
        start = f"from {hot_before:.1f} " if hot_before is not None else ""
        flags.append({"flag": "temperature_above_gate",
                      "detail": f"rose {start}to {hot_after:.1f} °C (gate {gate_c:g} °C)"})
    for outcome in gates:
        if not outcome.cooled:
            flags.append({"flag": "not_cooled", "detail": outcome.reason})
    changes = _frequency_changes(before, after)
    if changes:
        more = f" (+{len(changes) - 4} more)" if len(changes) > 4 else ""
        flags.append({"flag": "frequency_changed", "detail": "; ".join(changes[:4]) + more})
    drift = [w for w in latency_warnings if w.lower().startswith("trend")]
    if drift:
        flags.append({"flag": "samples_drift", "detail": drift[0]})
    return flags
