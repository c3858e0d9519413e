"""Read OpenVINO's ``benchmark_app`` and build its command line.

The format was read from the tool's own output (OpenVINO 2026.4, the Python ``benchmark_app``
that the ``openvino`` wheel installs; the C++ tool prints the same lines), run on this
project's zoo files:

* ``[ INFO ] Read model took X ms``, ``Compile model took X ms``, ``First inference took X ms``;
* after ``[Step 11/11]``: ``Count:  N iterations``, ``Duration:  X ms``, ``Latency:`` then
  ``Median:  X us``, ``Average:``, ``Min:``, ``Max:`` (each in ``ms`` or ``us``, as printed),
  and ``Throughput:  X FPS``;
* with ``-report_type detailed_counters -report_folder DIR``: ``DIR/benchmark_detailed_counters
  _report.csv``, ``;``-separated, ``layerName;execStatus;layerType;execType;realTime (ms);
  cpuTime (ms)``, one row per layer and a ``Total`` row. benchlab prints it after the run behind
  :data:`COUNTERS_MARKER`, so it comes back with the output from any target.

The tool prints no per-iteration times: a process gives one ``NET latency`` sample (its
average) and a :class:`~benchlab.protocol.lines.ReportedSummary` of the median, mean, min and max.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from benchlab.frameworks.native.common import NUMBER
from benchlab.frameworks.native.common import SampleList as _Samples
from benchlab.frameworks.native.common import count_flag
from benchlab.frameworks.native.common import finite_float as _float
from benchlab.protocol.lines import ParsedOutput, ReportedSummary
from benchlab.schema.result import DetailKey, Metric
from benchlab.schema.units import convert

__all__ = [
    "COUNTERS_MARKER",
    "TOOL",
    "BenchmarkAppCommand",
    "benchmark_app_command",
    "parse_benchmark_app",
]

TOOL = "benchmark_app"
"""The name recorded in ``details["tool"]``."""

#: The line after which the per-layer counters CSV follows in the output.
COUNTERS_MARKER = "BENCHLAB_BENCHMARK_APP_COUNTERS"
_COUNTERS_CSV = "benchmark_detailed_counters_report.csv"
_TIMES = {
    "read_ms": re.compile(rf"Read model took\s*({NUMBER})\s*ms", re.I),
    "compile_ms": re.compile(rf"Compile model took\s*({NUMBER})\s*ms", re.I),
    "first_ms": re.compile(rf"First inference took\s*({NUMBER})\s*ms", re.I),
}
_COUNT = re.compile(r"Count:\s*(\d+)\s*iterations", re.I)
_THROUGHPUT = re.compile(rf"Throughput:\s*({NUMBER})\s*FPS", re.I)
_STAT = re.compile(rf"^\s*(?:\[ INFO \])?\s*(Median|Average|Min|Max):\s*({NUMBER})\s*(us|ms|s)\b",
                   re.I)
_STAT_NAMES = {"median": "p50", "average": "mean", "min": "min", "max": "max"}


class BenchmarkAppCommand(NamedTuple):
    """``benchmark_app``'s command line and the shell steps around it (see
    :meth:`benchlab.frameworks.base.RunnerFramework.native_invocation`)."""

    before: tuple[str, ...]
    argv: list[str]
    after: str


def benchmark_app_command(binary: str, xml: str, weights: str | None, workdir: str, *,
                          threads: int | None = None, iterations: int | None = None,
                          precision: str = "f32", shapes: Sequence[tuple[str, Sequence[int]]] = (),
                          profile_ops: bool = False,
                          extra: Iterable[str] = ()) -> BenchmarkAppCommand:
    """How to run ``benchmark_app`` on an IR model, latency-style.

    One stream, one synchronous request (``-hint none -nstreams 1 -api sync``), ``-niter``
    iterations, ``-infer_precision`` set explicitly (OpenVINO's CPU default is bf16 where the
    CPU has it). The IR's ``.xml`` and ``.bin`` are linked side by side in ``workdir`` first,
    since the tool looks for the weights beside the model. ``shapes`` become ``-data_shape``
    (unnamed for one input). With ``profile_ops`` the per-layer counters CSV is written to
    ``workdir`` and printed after :data:`COUNTERS_MARKER`.
    """
    for name, value in (("threads", threads), ("iterations", iterations)):
        if value is not None:
            count_flag(name, value, 1)
    suffix = "." + xml.rsplit(".", 1)[-1] if "." in xml.rsplit("/", 1)[-1] else ".xml"
    model = f"{workdir}/benchlab-model{suffix}"
    before = [f"ln -sf {shlex.quote(xml)} {shlex.quote(model)}"]
    if weights:
        before.append(f"ln -sf {shlex.quote(weights)} "
                      f"{shlex.quote(workdir + '/benchlab-model.bin')}")
    argv = [binary, "-m", model, "-d", "CPU", "-hint", "none", "-nstreams", "1", "-api", "sync",
            "-infer_precision", precision]
    if threads is not None:
        argv += ["-nthreads", str(threads)]
    if iterations is not None:
        argv += ["-niter", str(iterations)]
    if shapes:
        dims = ["[" + ",".join(str(d) for d in shape) + "]" for _, shape in shapes]
        argv += ["-data_shape", dims[0] if len(dims) == 1 else
                 ",".join(f"{name}{dim}" for (name, _), dim in zip(shapes, dims, strict=True))]
    after = ""
    if profile_ops:
        argv += ["-report_type", "detailed_counters", "-report_folder", workdir]
        after = f"echo {COUNTERS_MARKER} && cat {shlex.quote(f'{workdir}/{_COUNTERS_CSV}')}"
    return BenchmarkAppCommand(tuple(before), [*argv, *extra], after)


def _counters(text: str) -> dict[str, float]:
    """Milliseconds per layer type from the counters CSV (executed layers only)."""
    per_type: dict[str, float] = {}
    for row in text.splitlines():
        cells = row.strip().split(";")
        if len(cells) < 6 or cells[0] in ("layerName", "Total") or "EXECUTED" not in cells[1]:
            continue
        value = _float(cells[4])
        if value is not None:
            per_type[cells[2]] = per_type.get(cells[2], 0.0) + value
    return per_type


def parse_benchmark_app(text: str) -> ParsedOutput:
    """Parse one ``benchmark_app`` process's output (and its counters CSV, when printed).

    Emits ``NET load_time`` (read model), ``NET compile_time``, ``NET first_inference``, one
    ``NET latency`` sample equal to the average (ms) and a ``ReportedSummary`` of median,
    mean, min and max over the ``Count`` iterations; per-layer-type ``latency`` samples (ms,
    summed over the layers of a type) from the counters. Throughput goes to ``details``.
    """
    head, _, counters = text.partition(COUNTERS_MARKER)
    found: dict[str, float] = {}
    stats: dict[str, float] = {}
    details: dict[str, Any] = {DetailKey.TOOL: TOOL}
    for line in head.splitlines():
        for key, pattern in _TIMES.items():
            if (match := pattern.search(line)) and (value := _float(match.group(1))) is not None:
                found.setdefault(key, value)
        if match := _STAT.match(line):
            value = _float(match.group(2))
            ms = None if value is None else convert(value, match.group(3), "ms")
            if ms is not None:
                stats[_STAT_NAMES[match.group(1).lower()]] = ms
        if match := _COUNT.search(line):
            details["num_runs"] = int(match.group(1))
        if (match := _THROUGHPUT.search(line)) and (value := _float(match.group(1))):
            details["throughput_fps"] = value
    samples = _Samples()
    samples.add("NET", Metric.LOAD_TIME, found.get("read_ms"), "ms")
    samples.add("NET", Metric.COMPILE_TIME, found.get("compile_ms"), "ms")
    samples.add("NET", Metric.FIRST_INFERENCE, found.get("first_ms"), "ms")
    if "mean" in stats:
        details[DetailKey.LATENCY_SAMPLES] = "process_mean"
        samples.add("NET", Metric.LATENCY, stats["mean"], "ms")
    for layer_type, ms in sorted(_counters(counters).items()):
        samples.add(layer_type, Metric.LATENCY, ms, "ms")
    count = int(details.get("num_runs", 0))
    summaries = (ReportedSummary("NET", Metric.LATENCY, "ms", count, stats),) \
        if stats and count else ()
    return ParsedOutput(samples=tuple(samples.items), summaries=summaries, details=details)
