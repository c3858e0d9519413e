"""``python -m benchlab.runner.pair '<json>'``: both sides of an A/B job in one fresh process.

The JSON holds two runner configurations (``control``, ``treatment``: what ``python -m
benchlab.runner`` would take for each side), the warm-up count, the block order (one letter per
block, ``c`` when control goes first), which side is imported and loaded first, and how many
calls of each side to time alone. The process loads both models, warms both, then times one
call of each side per block in that order, so the two calls of a block share the machine's
state. It prints each side's call times as metric lines typed ``control`` and ``treatment``
(block order), the solo calls typed ``control_solo`` and ``treatment_solo``, and a detail line
with the order and each side's threading regime.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from benchlab.protocol.lines import format_metric, write_measurement
from benchlab.runner.config import RunnerConfig
from benchlab.runner.backend import load_backend
from benchlab.runner.loop import NS_PER_MS, make_inputs
from benchlab.schema.result import DetailKey, Metric

__all__ = ["REGIME_KEYS", "PairConfig", "SIDES", "SOLO_SIDES", "main", "measure_pair"]

#: The two sides, in the letters the block order uses.
SIDES = {"c": "control", "t": "treatment"}
#: The metric-line types of each side's calls timed alone.
SOLO_SIDES = {letter: f"{side}_solo" for letter, side in SIDES.items()}


class PairConfig(BaseModel):
    """What one interleaved process measures (sent by the harness as one JSON argument)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    control: RunnerConfig
    treatment: RunnerConfig
    warmup: int = Field(0, ge=0)
    order: str = Field(pattern=r"^[ct]+$", description="per block, the side that goes first")
    loaded_first: str = Field("c", pattern=r"^[ct]$")
    solo: int = Field(0, ge=0, description="calls of each side timed alone (fidelity)")


def _prepare(config: RunnerConfig) -> tuple[Any, Callable[[], Any], float]:
    """Import and load one side's backend and bind its inputs: (backend, call, load ms)."""
    backend = load_backend(config.backend, config)
    started = time.perf_counter_ns()
    backend.load()
    load_ms = (time.perf_counter_ns() - started) / NS_PER_MS
    specs = list(config.inputs) or backend.input_specs()
    return backend, backend.prepare(make_inputs(specs, config.seed)), load_ms


def _time_calls(call: Callable[[], Any], count: int) -> list[float]:
    clock = time.perf_counter_ns
    times = []
    for _ in range(count):
        t0 = clock()
        call()
        times.append((clock() - t0) / NS_PER_MS)
    return times


def _thread_count() -> int | None:
    """The OS threads of this process with both sides loaded (Linux), None where unknown:
    how many pools the two sides made is seen here, not taken on the runtime's word."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


#: The info keys that describe how a side uses the machine's threads (reports show them).
REGIME_KEYS = (DetailKey.THREADS, DetailKey.INTRA_OP_THREADS, DetailKey.INTER_OP_THREADS,
               DetailKey.THREAD_POOL, DetailKey.SPINNING, DetailKey.NSTREAMS, DetailKey.HINT,
               DetailKey.EXECUTION_MODE)


def _solo_warmup(config: PairConfig) -> int:
    """Untimed calls before the solo ones: at least as many as are timed, since a side's
    first calls (arena growth, a cold cache) would otherwise read as a faster neighbour."""
    return 1 + max(config.warmup, config.solo)


def measure_pair(config: PairConfig, out: Any) -> None:
    """Load both sides, warm both, time the blocks, print the metric lines.

    With ``solo`` calls asked for, the side loaded first is also timed alone before the
    other is loaded, and the other alone after the first is dropped: how each side runs
    without its neighbour, in the same process, to set beside its interleaved calls.
    """
    first = config.loaded_first
    letters = (first, "t" if first == "c" else "c")
    calls: dict[str, Callable[[], Any]] = {}
    loads: dict[str, float] = {}
    backends: dict[str, Any] = {}
    solo: dict[str, list[float]] = {"c": [], "t": []}
    for letter in letters:
        backends[letter], calls[letter], loads[letter] = _prepare(
            getattr(config, SIDES[letter]))
        if letter == first and config.solo:
            _time_calls(calls[letter], _solo_warmup(config))
            solo[letter] = _time_calls(calls[letter], config.solo)
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
            cpu[letter].append((cpu_clock() - c0) / NS_PER_MS)
            times[letter].append((t1 - t0) / NS_PER_MS)
    regime = {SIDES[letter]: {k: v for k, v in backends[letter].info().items()
                              if k in REGIME_KEYS} for letter in letters}
    threads = _thread_count()
    if config.solo:
        del calls[first], backends[first]  # the runtime frees the session and its threads
        gc.collect()
        second = letters[1]
        _time_calls(calls[second], _solo_warmup(config))
        solo[second] = _time_calls(calls[second], config.solo)
    lines = []
    for letter, side in SIDES.items():
        lines.append(format_metric(side, Metric.LOAD_TIME, loads[letter], "ms"))
        lines += [format_metric(side, Metric.LATENCY, ms, "ms") for ms in times[letter]]
        lines += [format_metric(side, Metric.CPU_TIME, ms, "ms") for ms in cpu[letter]]
        lines += [format_metric(SOLO_SIDES[letter], Metric.LATENCY, ms, "ms")
                  for ms in solo[letter]]
    interleaved = {"order": config.order, "loaded_first": first, "blocks": len(config.order),
                   "regime": regime, "process_threads": threads}
    write_measurement(out, lines, {DetailKey.INTERLEAVED: interleaved})
    del backends


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
