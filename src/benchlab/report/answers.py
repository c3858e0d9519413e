"""One model's answer across devices: does the same job give the same outputs on every
instruction set?

A run over several devices (an x86-64 host with VNNI, ARM cores without dot product, with SDOT,
with i8mm) scores every device's outputs against the same fp32 reference, computed on the host.
The results hold each device's error, not its outputs, so the distance between two devices'
answers is not measured; the triangle inequality still bounds it from below by what was:

    ‖out_a − out_b‖ ≥ | ‖out_a − ref‖ − ‖out_b − ref‖ |,   so, over ‖ref‖,
    ‖out_a − out_b‖ / ‖ref‖ ≥ |l2rel_a − l2rel_b|.

:func:`check_pair` holds the rule that reads that bound: two devices' answers *differ* when the
bound exceeds the rounding floor (what one ulp of input change moves the output by, where a
device measured it), or when their top-1 agreement with the reference differs (some input's
top class changed between them). :func:`answer_spread` applies it to every pair of devices of
every model × backend; :func:`answer_spread_table` and :func:`answer_spread_html` draw the rows
in the terminal and in the HTML report, beside the latency spread of
:func:`benchlab.report.matrix.device_spread`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from benchlab.report.columns import Column, html_section, job_name, rich_table
from benchlab.report.matrix import Cell, cells_of, devices_of
from benchlab.schema.metrics import METRICS
from benchlab.schema.result import EnvKey, Metric, Result

__all__ = [
    "TOLERANCE",
    "AnswerSpread",
    "DeviceAnswer",
    "PairCheck",
    "answer_spread",
    "answer_spread_html",
    "answer_spread_table",
    "check_pair",
    "device_heading",
    "device_instructions",
]

#: The smallest gap between two devices' relative L2 errors read as a difference. Without a
#: measured floor (fp32 and fp16 cells, int8 cells without simulated outputs) it is the floor
#: itself: fp32 kernels that sum in another order (FMA or not, another vector width) move a
#: relative error by about 1e-7 per layer, so 1e-6 separates that from a different answer.
#: With a measured floor of zero (no output moved) it keeps the statistics' own rounding,
#: computed by each device's numpy, from reading as a difference.
TOLERANCE = 1e-6
_TOP1 = METRICS[Metric.TOP1_AGREEMENT]
_SQNR = METRICS[Metric.SQNR]
_L2 = METRICS[Metric.ERROR_L2_REL]


@dataclass(frozen=True, slots=True)
class DeviceAnswer:
    """One device's accuracy for one model × backend, against the shared fp32 reference:
    SQNR (dB), relative L2 error, top-1 agreement, the rounding floor as a relative L2 error
    (``None`` where not measured) and what the device is: the int8 instructions its CPU
    offers (:attr:`benchlab.schema.result.EnvKey.INT8_INSTRUCTIONS`; ``None`` in results that
    predate it) and how it is emulated (``None`` on real hardware)."""

    sqnr: float | None = None
    error_l2_rel: float | None = None
    top1: float | None = None
    floor_l2_rel: float | None = None
    int8_instructions: str | None = None
    emulated: str | None = None

    @property
    def measured(self) -> bool:
        """True when the job scored its outputs against the reference."""
        return any(v is not None for v in (self.sqnr, self.error_l2_rel, self.top1))

    def text(self) -> str:
        """``41.2 dB · 100.0%``: SQNR and top-1 agreement, ``-`` for what is missing."""
        finite = self.sqnr is not None and math.isfinite(self.sqnr)
        sqnr = f"{_SQNR.text(self.sqnr)} dB" if finite else "-"
        return f"{sqnr} · {_TOP1.text(self.top1)}"


@dataclass(frozen=True, slots=True)
class PairCheck:
    """What two devices' accuracy says about the distance between their answers.

    ``gap``: |l2rel_a − l2rel_b|, a lower bound on ‖out_a − out_b‖ / ‖ref‖ (``None`` when a
    device has no L2 error); ``bound``: the gap it is compared with, the larger of the two
    devices' floors and never below :data:`TOLERANCE`; ``floor_known``: whether either device
    measured a floor; ``top1``: both devices' top-1 agreements when they differ, else ``None``.
    """

    first: str
    second: str
    gap: float | None
    bound: float
    floor_known: bool
    top1: tuple[float, float] | None

    @property
    def differs(self) -> bool:
        """A top-1 change, or answers further apart than rounding explains."""
        return self.top1 is not None or (self.gap is not None and self.gap > self.bound)

    @property
    def excess(self) -> float:
        """How many times the bound the gap is (0 without a gap): ranks the differing pairs."""
        return 0.0 if self.gap is None else self.gap / self.bound

    def reason(self) -> str:
        """Why the pair differs, in words; ``""`` when it does not."""
        if not self.differs:
            return ""
        if self.top1 is not None:
            return (f"top-1 {_TOP1.text(self.top1[0])} on {self.first}, "
                    f"{_TOP1.text(self.top1[1])} on {self.second}")
        floor = "floor" if self.floor_known else "tolerance"
        return (f"L2 gap {_L2.text(self.gap)} > {floor} {_L2.text(self.bound)} "
                f"({self.first} vs {self.second})")


def check_pair(first: str, a: DeviceAnswer, second: str, b: DeviceAnswer) -> PairCheck | None:
    """The rule: do devices ``first`` and ``second`` give different answers?

    They differ when |l2rel_a − l2rel_b| > max(floor_a, floor_b, :data:`TOLERANCE`), floors
    counted where measured, or when their top-1 agreements differ. The gap is a lower bound
    on the distance between the two outputs (triangle inequality through the shared
    reference), so a flag is never a false alarm beyond the floor; "same" is weaker: two
    answers equally far from the reference in different directions pass, and equal top-1
    agreements may hide inputs whose top class swapped. ``None`` when the two share no
    statistic to compare (one failed, or one scored no outputs).
    """
    gap = None
    if a.error_l2_rel is not None and b.error_l2_rel is not None:
        gap = abs(a.error_l2_rel - b.error_l2_rel)
    both_top1 = a.top1 is not None and b.top1 is not None
    if gap is None and not both_top1:
        return None
    floors = [f for f in (a.floor_l2_rel, b.floor_l2_rel) if f is not None and math.isfinite(f)]
    # Top-1 agreement is a count over the same inputs divided by their number: equal counts
    # give equal floats, so any difference beyond float noise is at least one input.
    top1 = None
    if both_top1 and not math.isclose(a.top1, b.top1, rel_tol=0.0, abs_tol=1e-9):
        top1 = (a.top1, b.top1)
    return PairCheck(first, second, gap, max([*floors, TOLERANCE]), bool(floors), top1)


@dataclass(frozen=True, slots=True)
class AnswerSpread:
    """One model/test × backend across devices: each device's :class:`DeviceAnswer`
    (``None`` where the job failed or did not run there) and the :class:`PairCheck` of every
    pair of devices that share a statistic."""

    model: str
    test: str
    framework: str
    label: str
    answers: Mapping[str, DeviceAnswer | None]
    checks: tuple[PairCheck, ...]

    @property
    def differs(self) -> bool:
        """True when some pair of devices gives different answers (:func:`check_pair`)."""
        return any(check.differs for check in self.checks)

    @property
    def worst(self) -> PairCheck | None:
        """The differing pair to name: a top-1 change first, then the gap furthest past its
        bound; ``None`` when no pair differs."""
        differing = [c for c in self.checks if c.differs]
        if not differing:
            return None
        return max(differing, key=lambda c: (c.top1 is not None, c.excess))

    @property
    def flag(self) -> str:
        """``differs: <why>`` naming the worst pair, ``same within floor``, or ``-`` with no
        two devices to compare."""
        worst = self.worst
        if worst is None:
            return "same within floor" if self.checks else "-"
        more = sum(c.differs for c in self.checks) - 1
        return f"differs: {worst.reason()}" + (f" (+{more} more pairs)" if more else "")

    @property
    def sqnr_gap(self) -> tuple[float, str, str] | None:
        """The largest SQNR difference between two devices (dB) and the pair, the more
        accurate device first; ``None`` with fewer than two finite SQNRs."""
        sqnr = {d: a.sqnr for d, a in self.answers.items()
                if a is not None and a.sqnr is not None and math.isfinite(a.sqnr)}
        pairs = [(abs(sqnr[x] - sqnr[y]), *((x, y) if sqnr[x] >= sqnr[y] else (y, x)))
                 for x, y in combinations(sqnr, 2)]
        if not pairs:
            return None
        gap, high, low = max(pairs, key=lambda p: p[0])
        return gap, high, low


def _answer(cell: Cell, instructions: Mapping[str, str | None]) -> DeviceAnswer | None:
    if not cell.ok:
        return None
    return DeviceAnswer(cell.sqnr, cell.error_l2_rel, cell.top1, cell.floor_l2_rel,
                        instructions.get(cell.device), cell.emulated)


def answer_spread(cells: Sequence[Cell],
                  instructions: Mapping[str, str | None] | None = None) -> list[AnswerSpread]:
    """The accuracy axis of the matrix across devices: for every model/test × backend that
    some device scored against the reference, each device's answer and the pairs whose
    answers differ; ``[]`` for cells of one device. ``instructions`` maps a device label to
    its int8 instructions (:func:`device_instructions`)."""
    devices = devices_of(cells)
    if len(devices) < 2:
        return []
    known = instructions or {}
    rows: dict[tuple[str, str, str], tuple[str, dict[str, DeviceAnswer | None]]] = {}
    for cell in cells:
        _, answers = rows.setdefault((cell.model, cell.test, cell.label),
                                     (cell.framework, dict.fromkeys(devices)))
        answers[cell.device] = _answer(cell, known)
    out = []
    for (model, test, label), (framework, answers) in rows.items():
        scored = [(d, a) for d, a in answers.items() if a is not None and a.measured]
        if not scored:
            continue
        checks = tuple(check for (x, a), (y, b) in combinations(scored, 2)
                       if (check := check_pair(x, a, y, b)) is not None)
        out.append(AnswerSpread(model, test, framework, label, answers, checks))
    return out


def device_instructions(results: Sequence[Result]) -> dict[str, str | None]:
    """Device label → the int8 instructions its results' environment names (``None`` where
    none does: results from before the environment said)."""
    out: dict[str, str | None] = {}
    for result in results:
        label = result.identity.device_label
        value = result.environment.get(EnvKey.INT8_INSTRUCTIONS)
        if out.get(label) is None:
            out[label] = str(value) if value else None
    return out


def device_heading(device: str, emulated: bool) -> str:
    """A device column's heading: its label, with ``(emulated)`` when it ran under emulation
    and its label (a phone's, which the adb target marks) does not say so already."""
    if emulated and "emulated" not in device:
        return f"{device} (emulated)"
    return device


def _emulated(cells: Sequence[Cell]) -> set[str]:
    return {c.device for c in cells if c.emulated}


def _answer_columns(devices: Sequence[str], emulated: set[str],
                    instructions: Mapping[str, str | None] | None = None
                    ) -> list[Column[AnswerSpread]]:
    """The table's columns; ``instructions`` (HTML) adds each device's to its heading."""
    def device(name: str) -> Column[AnswerSpread]:
        def text(row: AnswerSpread) -> str:
            answer = row.answers.get(name)
            return "-" if answer is None else answer.text()

        def title(row: AnswerSpread) -> str:
            answer = row.answers.get(name)
            if answer is None or answer.error_l2_rel is None:
                return ""
            floor = "" if answer.floor_l2_rel is None else \
                f", floor {_L2.text(answer.floor_l2_rel)}"
            return f"L2 rel err {_L2.text(answer.error_l2_rel)}{floor}"

        heading = device_heading(name, name in emulated)
        if instructions is not None and instructions.get(name):
            heading = f"{heading} · {instructions[name]}"
        return Column(heading, text, title=title)

    def gap(row: AnswerSpread) -> str:
        spread = row.sqnr_gap
        if spread is None:
            return "-"
        # Under a tenth of a dB the pair is an arbitrary one of equals: not named.
        return f"{spread[0]:.1f} dB" + (f": {spread[1]} vs {spread[2]}"
                                        if spread[0] >= 0.05 else "")

    return [Column.words("model/test", lambda r: job_name(r.model, r.test), key=True),
            Column.words("framework", lambda r: r.label, key=True),
            *(device(name) for name in devices),
            Column("answers", lambda r: r.flag, number=False, wrap=True,
                   css=lambda r: "differs" if r.differs else "",
                   style=lambda r: "bold" if r.differs else ""),
            Column("SQNR gap", gap, number=False, wrap=True)]


_TOLERANCE_TEXT = f"{TOLERANCE:.0e}".replace("e-0", "e-")  # 1e-6, as the docs write it
_RULE = ("'differs': two devices' relative L2 errors (against the same fp32 reference) are "
         "further apart than the larger of their rounding floors, that gap being a lower bound "
         "on how far apart their outputs are (where neither measured a floor, "
         f"{_TOLERANCE_TEXT} relative, fp32 rounding), or their top-1 "
         "agreements differ (a top-1 change)")


def _instructions_line(devices: Sequence[str], instructions: Mapping[str, str | None]) -> str:
    named = [f"{d}: {instructions[d]}" for d in devices if instructions.get(d)]
    return "int8 instructions: " + "; ".join(named) if named else ""


def answer_spread_table(results: Sequence[Result],
                        title: str = "answers across devices") -> Any:
    """The terminal's accuracy axis across devices (a rich ``Table``): models and backends
    down, devices across, each device's SQNR and top-1 agreement, whether the devices'
    answers differ (:func:`check_pair`) and the largest SQNR gap; the caption names each
    device's int8 instructions. ``None`` for one device or when no job was scored."""
    cells = cells_of(results)
    devices = devices_of(cells)
    instructions = device_instructions(results)
    rows = answer_spread(cells, instructions)
    if not rows:
        return None
    caption = "; ".join(filter(None, (
        "SQNR dB · top-1 agreement per device", _RULE,
        _instructions_line(devices, instructions))))
    return rich_table(_answer_columns(devices, _emulated(cells)), rows, title=title,
                      caption=caption)


def answer_spread_html(cells: Sequence[Cell],
                       instructions: Mapping[str, str | None] | None = None) -> str:
    """The HTML report's section of :func:`answer_spread`'s rows: each device's SQNR and
    top-1 (hover: its relative L2 error and floor) under a heading with its int8
    instructions, the verdict (class ``differs`` when flagged) and the largest SQNR gap;
    ``""`` without rows."""
    known = instructions or {}
    rows = answer_spread(cells, known)
    columns = _answer_columns(devices_of(cells), _emulated(cells), known)
    return html_section("answers-across-devices", "Answers across devices",
                        f"SQNR dB · top-1 agreement per device; {_RULE}.", columns, rows)
