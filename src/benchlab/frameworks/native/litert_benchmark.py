"""Read ``litert-benchmark`` (the CompiledModel benchmark that ai-edge-litert ships) and build
its command line.

The format was read from the tool's own output (ai-edge-litert 2.x, run on this project's zoo
files): a block framed by ``====`` lines under `` BENCHMARK RESULTS`` with ``Model
initialization:  X ms``, ``Warmup (first):  X ms``, ``Warmup (avg):  X ms (N runs)``,
``Inference (avg|min|max|median|std|p5|p95):  X ms`` (``avg`` with ``(N runs)``),
``Throughput:  X MB/s`` and ``Fully accelerated:  True``; and, with ``--result_json PATH``, a
JSON object with ``model_size_mb``, ``accelerators``, ``fully_accelerated``, ``num_threads`` and
``latency: {init_ms, warmup_first_ms, warmup_avg_ms, num_warmup_runs, avg_ms, min_ms, max_ms,
median_ms, std_ms, p5_ms, p95_ms, num_runs}``.

The tool prints no per-run times, only these statistics, rounded to 0.01 ms. So a process gives
one ``NET latency`` sample (its mean; ``details["latency_samples"] = "process_mean"``) and a
:class:`~benchlab.protocol.lines.ReportedSummary` with the tool's own statistics. benchlab runs it with
``--result_json /dev/stdout`` so that the JSON arrives with the text and no file needs pulling
back from a device; the JSON wins where both are present (it also has the model's size).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from benchlab.frameworks.native.common import NUMBER
from benchlab.frameworks.native.common import SampleList as _Samples
from benchlab.frameworks.native.common import count_flag
from benchlab.frameworks.native.common import finite_float as _float
from benchlab.protocol.lines import ParsedOutput, ReportedSummary
from benchlab.schema.result import DetailKey, Metric

__all__ = ["TOOL", "is_litert_benchmark", "litert_benchmark_argv", "parse_litert_benchmark"]

TOOL = "litert-benchmark"
"""The name recorded in ``details["tool"]``."""
RESOLUTION_MS = 0.01
"""The tool prints every time rounded to this many milliseconds."""

_TEXT = {
    "init_ms": re.compile(rf"^Model initialization:\s*({NUMBER})\s*ms", re.I),
    "warmup_first_ms": re.compile(rf"^Warmup \(first\):\s*({NUMBER})\s*ms", re.I),
    "warmup_avg_ms": re.compile(rf"^Warmup \(avg\):\s*({NUMBER})\s*ms", re.I),
    "num_warmup_runs": re.compile(r"^Warmup \(avg\):.*\((\d+) runs?\)", re.I),
    "num_runs": re.compile(r"^Inference \(avg\):.*\((\d+) runs?\)", re.I),
    "throughput_mb_s": re.compile(rf"^Throughput:\s*({NUMBER})\s*MB/s", re.I),
}
_STAT = re.compile(rf"^Inference \((avg|min|max|median|std|p5|p95)\):\s*({NUMBER})\s*ms", re.I)
_ACCELERATED = re.compile(r"^Fully accelerated:\s*(True|False)", re.I)
# The tool's statistic names -> the names benchlab's summaries use.
_STAT_NAMES = {"avg": "mean", "min": "min", "max": "max", "median": "p50", "std": "stdev",
               "p5": "p5", "p95": "p95"}


def is_litert_benchmark(binary: str) -> bool:
    """Whether ``binary`` names ``litert-benchmark`` (rather than ``benchmark_model``)."""
    name = binary.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name.startswith(("litert-benchmark", "litert_benchmark"))


def litert_benchmark_argv(binary: str, model_path: str, *, threads: int | None = None,
                          warmup: int | None = None, iterations: int | None = None,
                          extra: Iterable[str] = ()) -> list[str]:
    """The command line running ``litert-benchmark`` on ``model_path``, JSON on stdout.

    Flags are the tool's own (``--model``, ``--num_threads``, ``--warmup_runs``, ``--num_runs``,
    ``--result_json``). Unlike ``benchmark_model`` it has no time-based flags: the counts are
    exact. Raises ``ValueError`` for negative counts.
    """
    argv = [str(binary), "--model", model_path]
    for flag, value, lowest in (("num_threads", threads, 1), ("warmup_runs", warmup, 0),
                                ("num_runs", iterations, 1)):
        if value is None:
            continue
        argv += [f"--{flag}", str(count_flag(flag, value, lowest))]
    return [*argv, "--result_json", "/dev/stdout", *extra]


def _from_json(text: str) -> dict[str, Any] | None:
    """The tool's JSON result inside ``text`` (the last object with a ``latency`` block)."""
    decoder = json.JSONDecoder()
    found = None
    for start in (m.start() for m in re.finditer(r"(?m)^\{", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("latency"), dict):
            found = value
    return found


def _from_text(text: str) -> dict[str, Any]:
    latency: dict[str, Any] = {}
    result: dict[str, Any] = {"latency": latency}
    for line in (raw.strip() for raw in text.splitlines()):
        if match := _STAT.match(line):
            latency[f"{match.group(1).lower()}_ms"] = _float(match.group(2))
        if match := _ACCELERATED.match(line):
            result["fully_accelerated"] = match.group(1).lower() == "true"
        for key, pattern in _TEXT.items():
            if match := pattern.match(line):
                value = _float(match.group(1))
                if key == "throughput_mb_s":
                    result[key] = value
                else:
                    latency[key] = value
    return result


def parse_litert_benchmark(text: str) -> ParsedOutput:
    """Parse one ``litert-benchmark`` process's output (text block and/or JSON).

    Emits ``NET load_time`` (model initialization), ``NET first_inference`` (the first warm-up
    run), one ``NET latency`` sample equal to the mean inference time, ``NET model_size`` (from
    the JSON, in MB) and a ``ReportedSummary`` of the tool's mean, min, max, median, std, p5
    and p95 over its runs, all in ms. Accelerators, full delegation, threads and throughput go
    to ``details``.
    """
    data = _from_json(text) or _from_text(text)
    latency = data.get("latency") or {}
    samples = _Samples()
    details: dict[str, Any] = {DetailKey.TOOL: TOOL}
    samples.add("NET", Metric.LOAD_TIME, _number(latency.get("init_ms")), "ms")
    samples.add("NET", Metric.FIRST_INFERENCE, _number(latency.get("warmup_first_ms")), "ms")
    mean = _number(latency.get("avg_ms"))
    infos: tuple[str, ...] = ()
    if mean == 0.0:
        # The tool rounds to 0.01 ms: 0.00 means "under 0.005 ms", not "free". A zero would
        # rank the cell infinitely fast, so it gets no latency rather than a wrong one.
        infos = (f"{TOOL} reported a mean of 0.00 ms: the model runs faster than the tool's "
                 f"{RESOLUTION_MS} ms resolution, so no latency is recorded; time it with "
                 "benchlab's runner (no binary=) or a larger input",)
        mean = None
    if mean is not None:
        details[DetailKey.LATENCY_SAMPLES] = "process_mean"
        samples.add("NET", Metric.LATENCY, mean, "ms")
    size = _number(data.get("model_size_mb"))
    if size:  # the tool prints 0.0 for models under 50 kB: no size rather than a wrong one
        samples.add("NET", Metric.MODEL_SIZE, size, "MB")
    values = {name: value for key, name in _STAT_NAMES.items()
              if (value := _number(latency.get(f"{key}_ms"))) is not None}
    count = int(_number(latency.get("num_runs")) or 0)
    summaries = (ReportedSummary("NET", Metric.LATENCY, "ms", count, values),) \
        if values and count and mean is not None else ()
    if count:
        details["num_runs"] = count
    for key, name in (("num_warmup_runs", "warmup_runs"), ("warmup_avg_ms", "warmup_avg_ms")):
        if latency.get(key) is not None:
            details[name] = latency[key]
    for key in ("accelerators", "fully_accelerated", "num_threads", "throughput_mb_s",
                "signature"):
        if data.get(key) is not None:
            details[DetailKey.THREADS if key == "num_threads" else key] = data[key]
    return ParsedOutput(samples=tuple(samples.items), summaries=summaries, details=details,
                        infos=infos)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    return _float(str(value))
