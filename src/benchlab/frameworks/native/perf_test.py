"""Read ``onnxruntime_perf_test`` output and ORT profile files, and build its command line.

The formats were read from microsoft/onnxruntime ``onnxruntime/test/perftest/`` (the
``performance_runner.cc`` of commit 77e6dc9 (a recent one; 034db1c for the early form), the getopt
``command_args_parser.cc`` of commit 8f11700 and the later absl-flags one):

* ``performance_runner.cc``: ``PerformanceRunner::Run`` prints ``Session creation time cost: X s``,
  ``First inference time cost: N ms`` (whole milliseconds), ``Total inference time cost: X s``,
  ``Total inference requests: N``, ``Average inference time cost: X ms``, ``Total inference run
  time: X s``, ``Number of inferences per second: X``, ``Avg CPU usage: X %`` and ``Peak working
  set size: N bytes``; ``PerformanceResult::DumpToFile`` then repeats ``Avg CPU usage:X``, ``Peak
  working set size:N``, ``Runs:N`` and prints ``Min/Max/P50/P90/P95/P99/P999 Latency: X s``
  (statistics are on whenever no result file is given). Early releases printed ``Total time
  cost:X``, ``Total iterations:N`` and ``Average time cost:X ms`` instead.
* ``ort_test_session.cc``: ``Setting intra_op_num_threads to N`` (and inter_op).
* ``command_args_parser.cc``: ``perf_test [options...] model_path [result_file]`` with ``-m
  duration|times``, ``-r`` repeats, ``-t`` seconds, ``-x``/``-y`` threads, ``-e`` provider, ``-p``
  profile prefix and ``-I`` to generate inputs (the same letters in both parsers).

The profile written with ``-p`` (``onnxruntime/core/common/profiler.cc``, ``EndProfiling``) is
a JSON list of Chrome-trace events ``{"cat" : "Node", "dur" :us, "ts" :us, "ph" : "X", "name"
:"<node>_kernel_time", "args" : {"op_name" : "Conv", "provider" : ...}}`` plus ``Session`` events
such as ``model_run`` (one per ``Run``; perf_test's first one is its warm-up run). ORT appends a
timestamp to the ``-p`` prefix: the file is ``<prefix>_<YYYY-MM-DD_hh-mm-ss>.json``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from benchlab.protocol.lines import ParsedOutput, ReportedSummary
from benchlab.schema.result import DetailKey, Metric, Sample
from benchlab.frameworks.native.common import NUMBER
from benchlab.frameworks.native.common import SampleList as _Samples
from benchlab.frameworks.native.common import count_flag
from benchlab.frameworks.native.common import finite_float as _float

__all__ = [
    "TOOL",
    "ort_profile_events",
    "ort_profile_op_means",
    "ort_profile_op_rows",
    "parse_ort_profile",
    "parse_perf_test",
    "perf_test_argv",
]

TOOL = "onnxruntime_perf_test"
"""The name recorded in ``details["tool"]``."""

_PATTERNS = {
    "session_s": re.compile(rf"Session creation time cost:\s*({NUMBER})\s*s", re.I),
    "first_ms": re.compile(rf"First inference time cost:\s*({NUMBER})\s*ms", re.I),
    "total_s": re.compile(rf"Total (?:inference )?time cost:\s*({NUMBER})", re.I),
    "requests": re.compile(r"Total (?:inference requests|iterations):\s*(\d+)", re.I),
    "average_ms": re.compile(rf"Average (?:inference )?time cost:\s*({NUMBER})\s*ms", re.I),
    "run_time_s": re.compile(rf"Total inference run time:\s*({NUMBER})\s*s", re.I),
    "per_second": re.compile(rf"Number of inferences per second:\s*({NUMBER})", re.I),
    "cpu_percent": re.compile(rf"Avg CPU usage:\s*({NUMBER})", re.I),
    "peak_bytes": re.compile(r"Peak working set size:\s*(\d+)", re.I),
    "runs": re.compile(r"^Runs:\s*(\d+)\s*$"),
    "intra_threads": re.compile(r"Setting intra_op_num_threads to (\d+)"),
    "inter_threads": re.compile(r"Setting inter_op_num_threads to (\d+)"),
}
_LATENCY = re.compile(rf"^(Min|Max|P50|P75|P90|P95|P99|P999) Latency:\s*({NUMBER})\s*s\b", re.I)
_FAILED = re.compile(r"Run failed:|there is no test (?:input )?data|failed to|error", re.I)


def parse_perf_test(text: str) -> ParsedOutput:
    """Parse one ``onnxruntime_perf_test`` process's output into a ParsedOutput.

    Emits ``NET load_time`` (session creation, ms), ``NET first_inference`` (ms; the tool's
    warm-up run, printed in whole ms), one ``NET latency`` sample equal to the average inference
    time (ms; ``details["latency_samples"] = "process_mean"``), ``NET memory_peak`` (peak working
    set, MiB) and a ``ReportedSummary`` with mean/min/max/p50/p90/p95/p99/p999 in ms over the
    ``Total inference requests``. CPU usage, throughput, totals and thread counts go to
    ``details``. Lines it cannot read are skipped; failures are kept in ``infos``.
    """
    found: dict[str, float] = {}
    stats: dict[str, float] = {}
    details: dict[str, Any] = {DetailKey.TOOL: TOOL}
    infos: list[str] = []
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if match := _LATENCY.match(line):
            value = _float(match.group(2))
            if value is not None:
                stats[match.group(1).lower()] = value * 1000.0
            continue
        for key, pattern in _PATTERNS.items():
            match = pattern.search(line)
            if match:
                value = _float(match.group(1))
                if value is not None:
                    found.setdefault(key, value)  # the repeated summary lines add nothing
                break
        else:
            if _FAILED.search(line):
                infos.append(line[:200])

    samples = _Samples()
    if "session_s" in found:
        samples.add("NET", Metric.LOAD_TIME, found["session_s"] * 1000.0, "ms")
    samples.add("NET", Metric.FIRST_INFERENCE, found.get("first_ms"), "ms")
    count = int(found.get("requests", found.get("runs", 0)))
    mean = found.get("average_ms")
    if mean is None and count and "total_s" in found:
        mean = found["total_s"] / count * 1000.0
    if mean is not None:
        details[DetailKey.LATENCY_SAMPLES] = "process_mean"
        samples.add("NET", Metric.LATENCY, mean, "ms")
    if "peak_bytes" in found and found["peak_bytes"] > 0:
        samples.add("NET", Metric.MEMORY_PEAK, found["peak_bytes"] / 2**20, "MiB")

    summaries: list[ReportedSummary] = []
    values = {"mean": mean} if mean is not None else {}
    values.update(stats)
    if values and count:
        summaries.append(ReportedSummary("NET", Metric.LATENCY, "ms", count, values))
    for key, name in (("total_s", "total_inference_s"), ("run_time_s", "inference_run_time_s"),
                      ("per_second", "inferences_per_second"),
                      ("cpu_percent", "cpu_usage_percent")):
        if key in found:
            details[name] = found[key]
    for key, name in (("intra_threads", DetailKey.THREADS),
                      ("inter_threads", DetailKey.INTER_OP_THREADS)):
        if key in found:
            details[name] = int(found[key])
    if count:
        details["num_runs"] = count
    return ParsedOutput(samples=tuple(samples.items), summaries=tuple(summaries),
                        details=details, infos=tuple(dict.fromkeys(infos)))


def _events(json_text: str) -> list[dict[str, Any]]:
    """The profile's events; a file cut short (killed process) is read event by event."""
    try:
        data = json.loads(json_text)
    except ValueError:
        data = []
        for line in json_text.split("\n"):  # the profiler writes one event per line
            line = line.strip().rstrip(",")
            if line.startswith("{"):
                try:
                    data.append(json.loads(line))
                except ValueError:
                    continue
    if isinstance(data, dict):
        data = data.get("traceEvents", [])
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def ort_profile_op_means(
    json_text: str, *, warmup_runs: int = 0, by: str = "op_name"
) -> dict[str, float]:
    """Mean kernel time per run, in ms, of each operator type (``by="op_name"``) or node
    (``by="node"``), from an ORT profile.

    A kernel event belongs to the ``model_run`` event whose span contains it; without those,
    the k-th event of a node is taken to be from run k. Runs numbered below ``warmup_runs`` are
    dropped (perf_test's profile starts with its one warm-up run: pass 1 to leave it out). Each
    value is the op's total ``_kernel_time`` over the kept runs divided by their number.
    Unreadable input gives an empty dict.
    """
    if by not in ("op_name", "node"):
        raise ValueError(f"by must be 'op_name' or 'node', got {by!r}")
    events = _events(json_text)
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("name") == "model_run" and _timed(e))
    seen: dict[str, int] = {}
    totals: dict[str, float] = {}
    used_runs: set[int] = set()
    for event in events:
        name = event.get("name")
        if (event.get("cat") != "Node" or not isinstance(name, str)
                or not name.endswith("_kernel_time") or not _timed(event)):
            continue
        node = name[: -len("_kernel_time")]
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        key = node if by == "node" else str(args.get("op_name") or node)
        run = _run_of(event, runs)
        if run is None:
            run = seen.get(node, 0)
            seen[node] = run + 1
        if run < warmup_runs:
            continue
        used_runs.add(run)
        totals[key] = totals.get(key, 0.0) + float(event["dur"])
    if not used_runs:
        return {}
    n_runs = max(len(runs) - warmup_runs, len(used_runs)) if runs else len(used_runs)
    return {key: us / 1000.0 / n_runs for key, us in totals.items()}


def ort_profile_events(json_text: str) -> list[dict[str, Any]]:
    """An ORT profile's events (a file cut short is read event by event)."""
    return _events(json_text)


def ort_profile_op_rows(json_text: str, *, warmup_runs: int = 0) -> list[dict[str, float]]:
    """One row per kept run of an ORT profile: each operator type's kernel time in that run
    (ms), the shape of a host backend's ``profile_ops`` rows. Runs are the profile's
    ``model_run`` events, the first ``warmup_runs`` left out; a profile without them gives no
    rows (there is no telling runs apart)."""
    events = _events(json_text)
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("name") == "model_run" and _timed(e))
    rows: list[dict[str, float]] = [{} for _ in runs]
    for event in events:
        name = event.get("name")
        if (event.get("cat") != "Node" or not isinstance(name, str)
                or not name.endswith("_kernel_time") or not _timed(event)):
            continue
        run = _run_of(event, runs)
        if run is None:
            continue
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        op = str(args.get("op_name") or name[: -len("_kernel_time")])
        rows[run][op] = rows[run].get(op, 0.0) + float(event["dur"]) / 1000.0
    return rows[warmup_runs:]


def _timed(event: dict[str, Any]) -> bool:
    return all(isinstance(event.get(k), (int, float)) and not isinstance(event.get(k), bool)
               and math.isfinite(event[k]) for k in ("ts", "dur"))


def _run_of(event: dict[str, Any], runs: list[tuple[float, float]]) -> int | None:
    for index, (start, end) in enumerate(runs):
        if start <= event["ts"] <= end:
            return index
    return None


def parse_ort_profile(json_text: str, *, warmup_runs: int = 0, by: str = "op_name") -> list[Sample]:
    """Per-op samples from an ORT profile: one ``<op> latency`` sample (ms) per operator type
    (or node, ``by="node"``), equal to its mean kernel time per run; see
    :func:`ort_profile_op_means`. Ordered by first appearance; empty for unreadable input.
    """
    means = ort_profile_op_means(json_text, warmup_runs=warmup_runs, by=by)
    return [Sample(Metric.LATENCY, ms, "ms", op, 0, 0) for op, ms in means.items()]


def perf_test_argv(
    binary: str,
    model_path: str,
    *,
    iterations: int | None = None,
    duration_s: int | None = None,
    threads: int | None = None,
    execution_provider: str | None = None,
    profile_path: str | None = None,
    generate_inputs: bool = True,
    extra: Iterable[str] = (),
) -> list[str]:
    """The command line running ``onnxruntime_perf_test`` on ``model_path``.

    ``iterations`` gives ``-m times -r N``, ``duration_s`` gives ``-m duration -t N`` (not both);
    ``threads`` is ``-x`` (intra-op threads), ``execution_provider`` ``-e`` (``cpu``, ``cuda``,
    ``xnnpack``, ``nnapi``, ``qnn``...), ``profile_path`` ``-p`` (a prefix: ORT adds a timestamp
    and ``.json``). ``generate_inputs`` adds ``-I``, random inputs bound from the model's shapes;
    without it the tool wants ``test_data_set_*`` folders next to the model. ``extra`` options go
    before the model path, which must come last (a second positional would be a result file and
    turn the latency statistics off). Raises ``ValueError`` for bad counts.
    """
    if iterations is not None and duration_s is not None:
        raise ValueError("give iterations or duration_s, not both")
    argv = [str(binary)]
    if iterations is not None:
        argv += ["-m", "times", "-r", str(count_flag("iterations", iterations, 1))]
    if duration_s is not None:
        argv += ["-m", "duration", "-t", str(count_flag("duration_s", duration_s, 1))]
    if threads is not None:
        argv += ["-x", str(count_flag("threads", threads, 0))]
    if execution_provider:
        argv += ["-e", str(execution_provider)]
    if profile_path:
        argv += ["-p", str(profile_path)]
    if generate_inputs:
        argv.append("-I")
    argv.extend(str(arg) for arg in extra)
    argv.append(str(model_path))
    return argv


