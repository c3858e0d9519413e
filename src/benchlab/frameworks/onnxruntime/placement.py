"""Which execution provider ran each node: ONNX Runtime's delegation coverage.

ONNX Runtime assigns every node of the optimised graph to one execution provider when the
session is created, and falls back to the CPU provider, without an error, for the nodes a
provider declines. Its profiler records the provider of each node it runs (the ``provider``
argument of every ``*_kernel_time`` event), which is the assignment that actually ran. Plain
functions on the profiler's events; :class:`~benchlab.frameworks.onnxruntime.backend.
OnnxRuntimeBackend` makes the profiling session.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from benchlab.schema.diagnosis import Coverage

__all__ = ["CPU_PROVIDER", "coverage_from_events"]

CPU_PROVIDER = "CPUExecutionProvider"
METHOD = "ONNX Runtime profiler: the provider of every node of one run"


def coverage_from_events(events: Sequence[Mapping[str, Any]],
                         requested: Sequence[str]) -> Coverage:
    """The coverage of the first provider asked for other than the CPU (else of the CPU).

    ``events`` are the profiler's JSON events of a session that ran once; each node counts
    once, by name, whatever the number of runs.
    """
    placed: dict[str, tuple[str, str]] = {}
    for event in events:
        name = str(event.get("name", ""))
        if event.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        args = event.get("args") or {}
        placed[name] = (str(args.get("provider", "unknown")), str(args.get("op_name", "?")))
    accelerators = [p for p in requested if p != CPU_PROVIDER]
    engine = accelerators[0] if accelerators else CPU_PROVIDER
    by_engine = Counter(provider for provider, _ in placed.values())
    fallback = Counter(op for provider, op in placed.values() if provider != engine)
    note = "" if placed else "the profiler recorded no node (the model ran nothing?)"
    return Coverage(
        engine=engine, method=METHOD, asked=bool(accelerators), nodes=len(placed),
        delegated=by_engine.get(engine, 0), partitions=None, fallback=dict(fallback),
        by_engine={p: by_engine.get(p, 0) for p in dict.fromkeys([*requested, *by_engine])},
        note=note,
    )
