"""Why a cell is slow or wrong: delegation coverage and the per-layer error table.

Plain data, no numpy and no runtime, so the runner (on any device), the reports and the lab
all read the same shapes. A runner writes them into ``Result.details`` under
:attr:`~benchlab.schema.result.DetailKey.DELEGATION` and :attr:`~benchlab.schema.result.DetailKey.LAYER_ERRORS`;
:meth:`Coverage.from_detail` and :meth:`LayerTable.from_detail` read them back.

docs/accuracy.md ("Where the time and the error come from") explains both for users.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "LAYER_SQNR_THRESHOLD_DB",
    "LOW_COVERAGE",
    "ROUNDING_FLOOR_MARGIN_DB",
    "Coverage",
    "LayerError",
    "LayerTable",
    "at_rounding_floor",
    "coverage_warning",
]

LOW_COVERAGE = 0.5
"""A delegate or execution provider that was asked for and runs less than this share of the
model's operators is flagged: most of the model then runs on the fallback kernels, and the
cell's latency says more about them than about the delegate."""

LAYER_SQNR_THRESHOLD_DB = 40.0
"""The layer table marks the first layer whose output's SQNR against the reference falls below
this. fp32 runtimes agree with each other at 60 dB and more; int8 layers sit at 20-40 dB, so a
quantized model is usually marked at its first quantized layer, and the table's drop from row
to row says where the error grows."""


@dataclass(frozen=True)
class Coverage:
    """How much of a model the delegate (or accelerator execution provider) took.

    ``engine`` is what was asked to take the model (``XnnpackBackend``,
    ``AzureExecutionProvider``, ``CPU``), ``asked`` whether the configuration asked for it
    explicitly (a default CPU session did not). ``nodes`` counts the model's operators and
    ``delegated`` those the engine runs; either is ``None`` where the runtime cannot say (an
    ExecuTorch delegate's blob hides how many operators it holds). ``partitions`` counts the
    delegated subgraphs, ``fallback`` the operators run elsewhere by type, ``by_engine`` every
    engine's share of the nodes. ``method`` says how the runtime was asked, ``note`` anything a
    reader must know (an engine that cannot be asked at all).
    """

    engine: str
    method: str
    asked: bool = False
    nodes: int | None = None
    delegated: int | None = None
    partitions: int | None = None
    fallback: Mapping[str, int] = field(default_factory=dict)
    by_engine: Mapping[str, int] = field(default_factory=dict)
    note: str = ""

    @property
    def share(self) -> float | None:
        """The share of the model's operators the engine runs (``None`` when unknown)."""
        if self.nodes is None or self.delegated is None:
            return None
        return self.delegated / self.nodes if self.nodes else 0.0

    @property
    def fallback_count(self) -> int:
        """Operators that ran outside the engine."""
        return sum(self.fallback.values())

    def summary(self) -> str:
        """One short line for a table cell: ``92% (3 parts)``, ``2 parts + 1 op``, ``n/a``."""
        share = self.share
        parts = f"{self.partitions} part{'s' if self.partitions != 1 else ''}" \
            if self.partitions is not None else ""
        if share is not None:
            return f"{share:.0%}" + (f" ({parts})" if parts else "")
        if self.partitions is not None:
            fell = self.fallback_count
            return parts + (f" + {fell} op{'s' if fell != 1 else ''}" if fell else "")
        return "n/a"

    def to_detail(self) -> dict[str, Any]:
        """The JSON form stored under ``details["delegation"]``."""
        return {
            "engine": self.engine, "method": self.method, "asked": self.asked,
            "nodes": self.nodes, "delegated": self.delegated, "partitions": self.partitions,
            "fallback": dict(sorted(self.fallback.items(), key=lambda kv: (-kv[1], kv[0]))),
            "by_engine": dict(self.by_engine), "note": self.note,
        }

    @classmethod
    def from_detail(cls, raw: Any) -> Coverage | None:
        """The coverage a result stored, or ``None`` when it stored none (or not a mapping)."""
        if not isinstance(raw, Mapping) or "engine" not in raw:
            return None
        return cls(
            engine=str(raw["engine"]), method=str(raw.get("method", "")),
            asked=bool(raw.get("asked", False)), nodes=_int(raw.get("nodes")),
            delegated=_int(raw.get("delegated")), partitions=_int(raw.get("partitions")),
            fallback={str(k): int(v) for k, v in (raw.get("fallback") or {}).items()},
            by_engine={str(k): int(v) for k, v in (raw.get("by_engine") or {}).items()},
            note=str(raw.get("note", "")),
        )


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def coverage_warning(coverage: Coverage) -> str | None:
    """Why a cell's coverage deserves a warning, or ``None``.

    Only an engine the configuration asked for is judged: it took nothing, or (where the
    runtime counts operators) less than :data:`LOW_COVERAGE` of them.
    """
    if not coverage.asked:
        return None
    if coverage.delegated == 0 or (coverage.delegated is None and coverage.partitions == 0):
        return f"{coverage.engine} was asked for but took no operator: everything fell back"
    share = coverage.share
    if share is not None and share < LOW_COVERAGE:
        return (f"{coverage.engine} took only {share:.0%} of the operators "
                f"(under {LOW_COVERAGE:.0%}); the rest fell back")
    return None


ROUNDING_FLOOR_MARGIN_DB = 3.0
"""An int8 cell's lowering error is read as rounding flips, not as kernels that compute
something else, when its SQNR is at most this below its rounding floor's (the same runtime's
outputs moved by a one-ulp change of every input, over the same input sets): 3 dB covers the
floor's own spread between input sets. The floor is a lower bound: a one-ulp input change flips
roundings in the first layers, a kernel that sums in another order flips them in every layer,
so a lowering error some dB above the floor can still be flips (MobileNetV2 in ONNX Runtime:
lowering 33.6 dB, floor 41.2 dB, while two exact evaluators of the same int8 graph already
differ by 1.5%, 36.5 dB; docs/accuracy.md). The reports say by how much it is above."""


def at_rounding_floor(lowering_sqnr: float | None, floor_sqnr: float | None) -> bool:
    """Whether a lowering error is within :data:`ROUNDING_FLOOR_MARGIN_DB` of its floor."""
    if lowering_sqnr is None or floor_sqnr is None:
        return False
    return lowering_sqnr >= floor_sqnr - ROUNDING_FLOOR_MARGIN_DB


@dataclass(frozen=True)
class LayerError:
    """One intermediate output compared with the reference's tensor of the same name."""

    name: str
    op: str
    sqnr: float
    max_abs: float
    l2_rel: float


@dataclass(frozen=True)
class LayerTable:
    """Per-layer errors in the model's execution order, and the first layer past the threshold.

    ``reference`` says what the layers were compared with, ``matched`` how many of the model's
    intermediate outputs found a reference tensor (the rest are listed in ``unmatched``, a few
    by name). ``note`` is set instead of rows when the runtime cannot expose its layers.
    """

    reference: str
    layers: Sequence[LayerError] = ()
    threshold_db: float = LAYER_SQNR_THRESHOLD_DB
    matched: int = 0
    unmatched: Sequence[str] = ()
    note: str = ""

    @property
    def first_diverging(self) -> LayerError | None:
        """The first layer whose SQNR is below the threshold."""
        return next((layer for layer in self.layers if layer.sqnr < self.threshold_db), None)

    def to_detail(self) -> dict[str, Any]:
        """The JSON form stored under ``details["layer_errors"]``."""
        first = self.first_diverging
        return {
            "reference": self.reference, "threshold_db": self.threshold_db,
            "matched": self.matched, "unmatched": list(self.unmatched)[:20], "note": self.note,
            "first_diverging": first.name if first else None,
            "layers": [[layer.name, layer.op, layer.sqnr, layer.max_abs, layer.l2_rel]
                       for layer in self.layers],
        }

    @classmethod
    def from_detail(cls, raw: Any) -> LayerTable | None:
        """The table a result stored, or ``None``."""
        if not isinstance(raw, Mapping) or "reference" not in raw:
            return None
        return cls(
            reference=str(raw["reference"]),
            layers=tuple(LayerError(str(n), str(o), float(s), float(m), float(r))
                         for n, o, s, m, r in raw.get("layers") or ()),
            threshold_db=float(raw.get("threshold_db", LAYER_SQNR_THRESHOLD_DB)),
            matched=int(raw.get("matched", 0)), unmatched=tuple(raw.get("unmatched") or ()),
            note=str(raw.get("note", "")),
        )
