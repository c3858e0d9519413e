"""``python -m benchlab.runner.pair '<json>'``: both sides of an A/B job in one fresh process.

The JSON holds two runner configurations (``control``, ``treatment``: what ``python -m
benchlab.runner`` would take for each side), the warm-up count, the block order (one letter per
block, ``c`` when control goes first) and which side is imported and loaded first. The process
loads both models, warms both, then times one call of each side per block in that order, so
the two calls of a block share the machine's state. It prints each side's call times as metric
lines typed ``control`` and ``treatment`` (block order) and a detail line with the order.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchlab.protocol import format_detail, format_metric
from benchlab.runner.config import RunnerConfig
from benchlab.runner.loop import _NS_PER_MS, _load_backend, make_inputs
from benchlab.schema import Metric

__all__ = ["PairConfig", "SIDES", "main", "measure_pair"]

#: The two sides, in the letters the block order uses.
SIDES = {"c": "control", "t": "treatment"}


class PairConfig(BaseModel):
    """What one interleaved process measures (sent by the harness as one JSON argument)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    control: RunnerConfig
    treatment: RunnerConfig
    warmup: int = Field(0, ge=0)
    order: str = Field(pattern=r"^[ct]+$", description="per block, the side that goes first")
    loaded_first: str = Field("c", pattern=r"^[ct]$")


def _prepare(config: RunnerConfig) -> tuple[Any, Callable[[], Any], float]:
    """Import and load one side's backend and bind its inputs: (backend, call, load ms)."""
    backend = _load_backend(config.backend, config)
    started = time.perf_counter_ns()
    backend.load()
    load_ms = (time.perf_counter_ns() - started) / _NS_PER_MS
    specs = list(config.inputs) or backend.input_specs()
    return backend, backend.prepare(make_inputs(specs, config.seed)), load_ms


def measure_pair(config: PairConfig, out: Any) -> None:
    """Load both sides, warm both, time the blocks, print the metric lines."""
    first = config.loaded_first
    letters = (first, "t" if first == "c" else "c")
    calls: dict[str, Callable[[], Any]] = {}
    loads: dict[str, float] = {}
    keep: list[Any] = []  # the backends own the models the calls use
    for letter in letters:
        backend, calls[letter], loads[letter] = _prepare(getattr(config, SIDES[letter]))
        keep.append(backend)
    for _ in range(1 + config.warmup):  # the first call of each, then the warm-up, alternated
        for letter in letters:
            calls[letter]()
    clock, cpu_clock = time.perf_counter_ns, time.process_time_ns
    times: dict[str, list[float]] = {"c": [], "t": []}
    cpu: dict[str, list[float]] = {"c": [], "t": []}
    for lead in config.order:
        for letter in (lead, "t" if lead == "c" else "c"):
            call = calls[letter]
            c0 = cpu_clock()
            t0 = clock()
            call()
            t1 = clock()
            cpu[letter].append((cpu_clock() - c0) / _NS_PER_MS)
            times[letter].append((t1 - t0) / _NS_PER_MS)
    lines = []
    for letter, side in SIDES.items():
        lines.append(format_metric(side, Metric.LOAD_TIME, loads[letter], "ms"))
        lines += [format_metric(side, Metric.LATENCY, ms, "ms") for ms in times[letter]]
        lines += [format_metric(side, Metric.CPU_TIME, ms, "ms") for ms in cpu[letter]]
    lines.append(format_detail(interleaved={"order": config.order, "loaded_first": first,
                                            "blocks": len(config.order)}))
    out.write("\n".join(lines) + "\n")
    out.flush()
    del keep


def main(argv: Sequence[str]) -> int:
    """Entry point: one JSON argument (a :class:`PairConfig`), metric lines out."""
    if len(argv) != 1:
        print("usage: python -m benchlab.runner.pair '<json pair config>'", file=sys.stderr)
        return 2
    measure_pair(PairConfig.model_validate_json(argv[0]), sys.stdout)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    gc.freeze()  # as in benchlab.runner: skip the shutdown collections of the runtime's objects
    sys.exit(code)
