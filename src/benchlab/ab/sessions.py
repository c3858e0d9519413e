"""Interleaved sessions: the two sides alternate call by call, and each session gives one
paired estimate.

A session is one fresh process that holds both sides (:data:`Mode.IN_PROCESS`) or two live
processes stepped in turn (:data:`Mode.LOCKSTEP`). Its calls come in blocks of two, one call
per side, the side that goes first drawn at random per block (balanced: as many AB as BA).
Neighbouring calls share the machine's state, so the log-ratio of a block cancels the slow
noise that separates fresh processes; the session's estimate is the median of its blocks'
log-ratios (robust to a stray slow call). Sessions repeat with fresh processes, alternating
which side loads or starts first, and the decision (Wilcoxon, Hodges-Lehmann, looks,
Benjamini-Hochberg, verify) runs on the sessions' estimates, as it runs on per-pair ratios in
process-pair mode.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchlab.schema.comparison import Mode

__all__ = ["Session", "balanced_orders", "session_from_blocks"]


def balanced_orders(blocks: int, seed: int) -> str:
    """Which side goes first in each block: a string of ``c``/``t``, half each (one more
    ``c`` when ``blocks`` is odd), in a random order fixed by ``seed``."""
    order = list("ct" * (blocks // 2) + ("c" if blocks % 2 else ""))
    random.Random(seed).shuffle(order)
    return "".join(order)


@dataclass(frozen=True, slots=True)
class Session:
    """One interleaved session of one job: both sides' call times in block order (ms), which
    side went first in each block, and which side was loaded or started first. ``*_cpu`` are
    the calls' CPU times (ms) where the session measured them (in-process), else empty.
    ``*_solo`` are calls of each side timed with the other side not running (fidelity), and
    ``regime`` each side's threading settings as its runtime reported them."""

    mode: Mode
    control: tuple[float, ...]
    treatment: tuple[float, ...]
    order: str
    loaded_first: str = "c"
    control_cpu: tuple[float, ...] = ()
    treatment_cpu: tuple[float, ...] = ()
    control_solo: tuple[float, ...] = ()
    treatment_solo: tuple[float, ...] = ()
    regime: Mapping[str, Any] = field(default_factory=dict)

    @property
    def log_ratios(self) -> tuple[float, ...]:
        """``log(treatment / control)`` of each block."""
        return _log_ratios(self.control, self.treatment)

    @property
    def estimate(self) -> float:
        """The session's paired estimate: the median of its blocks' log-ratios."""
        return self.estimate_on("wall")

    def estimate_on(self, clock: str) -> float:
        """The paired estimate on the ``wall`` clock or on ``cpu`` time."""
        if clock == "cpu":
            if not self.control_cpu:
                raise ValueError(f"this {self.mode.value} session measured no CPU time")
            ratios = _log_ratios(self.control_cpu, self.treatment_cpu)
        else:
            ratios = self.log_ratios
        if not ratios:
            raise ValueError("a session needs at least one block with positive times")
        return statistics.median(ratios)

    @property
    def medians(self) -> tuple[float, float]:
        """Each side's median call time (ms), what process-pair mode would observe."""
        return statistics.median(self.control), statistics.median(self.treatment)

    def solo_median(self, letter: str) -> float | None:
        """One side's (``c``/``t``) median call time alone (ms), or None if not measured."""
        calls = self.control_solo if letter == "c" else self.treatment_solo
        return statistics.median(calls) if calls else None


def _log_ratios(control: Sequence[float], treatment: Sequence[float]) -> tuple[float, ...]:
    return tuple(math.log(t / c) for c, t in zip(control, treatment, strict=True)
                 if c > 0 and t > 0)


def session_from_blocks(mode: Mode, control: Sequence[float], treatment: Sequence[float],
                        order: str, loaded_first: str = "c",
                        cpu: tuple[Sequence[float], Sequence[float]] = ((), ()),
                        solo: tuple[Sequence[float], Sequence[float]] = ((), ()),
                        regime: Mapping[str, Any] | None = None) -> Session:
    """A :class:`Session` from raw per-block times; each must have one entry per block
    (the solo calls excepted: any number of them)."""
    lengths = {len(control), len(treatment), len(order)} | {len(c) for c in cpu if c}
    if len(lengths) != 1 or not order:
        raise ValueError(f"a session needs one time per side and one order letter per block "
                         f"(got {len(control)}, {len(treatment)}, {len(order)})")
    return Session(mode, tuple(control), tuple(treatment), order, loaded_first,
                   tuple(cpu[0]), tuple(cpu[1]), tuple(solo[0]), tuple(solo[1]),
                   dict(regime or {}))
